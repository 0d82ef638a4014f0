"""Shared fixtures: running the ``sdp`` command as a subprocess, dataset paths."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATASETS = SHARED / "datasets"


def sdp(
    *args: str, timeout: float = 300, env: dict[str, str] | None = None, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``sdp ARGS`` (as ``python -m parties.cli``) and capture its output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "parties.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=full_env,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"sdp {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def start_parties(
    parties: Path, run: Path, extra: dict[str, list[str]] | None = None, stdout: int | None = None
) -> dict[str, subprocess.Popen[str]]:
    """``sdp party --dir D --out RUN`` for every party directory D under ``parties`` (one
    process each, as on separate hosts); ``extra`` adds options per party name."""
    return {
        d.name: subprocess.Popen(
            [sys.executable, "-m", "parties.cli", "party", "--dir", str(d), "--out", str(run)]
            + (extra or {}).get(d.name, []),
            cwd=ROOT,
            stdout=subprocess.PIPE if stdout is None else stdout,
            stderr=subprocess.PIPE,
            text=True,
        )
        for d in sorted(parties.iterdir())
        if d.is_dir()
    }


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    if not DATASETS.exists():
        pytest.skip(f"shared datasets not found at {DATASETS}")
    return DATASETS


def keys_of(run: Path) -> Path:
    """Where a test's ``sdp run --keep-keys`` put the party directories of ``run``."""
    return run.with_name(run.name + ".keys")


def resign_transcript(run: Path, party: str, entries: list[dict], keys: Path) -> None:
    """Rewrite ``party``'s transcript as ``entries``, re-chained and re-signed with its own key
    from ``keys/PARTY/`` (a forger who controls that party); other transcripts are untouched."""
    import json

    from parties.runtime.keys import load_private_key
    from parties.runtime.signing import Signer
    from parties.runtime.transcript import CHECKPOINT_DOMAIN, entry_hash

    signer = Signer(load_private_key(keys / party, party))
    prev = entries[0]["prev"]
    for e in entries:
        e["prev"] = prev
        e.pop("sig", None)
        e["hash"] = entry_hash(e)
        if e["dir"] == "checkpoint":
            e["sig"] = signer.sign(CHECKPOINT_DOMAIN + bytes.fromhex(e["hash"])).hex()
        prev = e["hash"]
    path = run / "transcripts" / f"{party}.jsonl"
    path.write_text(
        "".join(json.dumps(e, sort_keys=True, separators=(",", ":")) + "\n" for e in entries)
    )
