"""Generation of the specification's known-answer vectors (``python scripts/make_spec_vectors.py
generate`` / ``generate-mpc``): the honest runs, their test keys, the encoding examples and
``expected.json``. The corruptions and their helpers are in ``spec_vectors_corruptions``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import cbor2
from spec_vectors_corruptions import CORRUPTIONS, MPC_CORRUPTIONS, VARIANTS
from spec_vectors_paths import KEYS, MPC_KEYS, MPC_RUN, MPC_TRUST, ROOT, RUN, TRUST, VEC, canonical


def encodings() -> dict[str, Any]:
    """Canonical JSON, CBOR and cluster-digest examples (spec E-1, E-2, C-3)."""
    from parties.runtime.cluster import cluster_digest, load_cluster

    json_cases = [
        {"b": 1, "a": [1.0, 0.1, 1e16, 1e-05, -2.5, 123456789.123, 1e15, 5e-324]},
        {"s": 'quote" backslash\\ nl\n tab\t del\x7f e\u00e9 smile\U0001f600 ctl\x01'},
        {"nested": {"z": None, "y": True, "x": False}, "big": 2**70, "neg": -3},
    ]
    cbor_cases = [
        {"bb": 1, "a": 2, 10: 3, 1: 4, "c": 5},
        [None, True, b"x", -5, 2**64, 1.0, 0.1, 1.5e300],
        {"w": 1, "n": 2, "a": [bytes(64)], "b": [bytes(range(64))]},
    ]

    def tagged(x: Any) -> Any:  # JSON-able description of a CBOR value
        if isinstance(x, bytes):
            return {"bytes": x.hex()}
        if isinstance(x, float):
            return {"float": x}
        if isinstance(x, int) and not isinstance(x, bool):
            return {"int": str(x)}
        if isinstance(x, list):
            return [tagged(v) for v in x]
        if isinstance(x, dict):
            return {"map": [[tagged(k), tagged(v)] for k, v in x.items()]}
        return x

    return {
        "canonical_json": [
            {"value_json": json.dumps(c), "canonical": canonical(c).decode()} for c in json_cases
        ],
        "canonical_cbor": [
            {"value": tagged(c), "cbor_hex": cbor2.dumps(c, canonical=True).hex()}
            for c in cbor_cases
        ],
        "cluster_digest": {
            "cluster_toml": (RUN / "cluster.toml").read_text(),
            "digest": cluster_digest(load_cluster(RUN / "cluster.toml")),
        },
    }


def _store(tmp: Path, run: Path, keys: Path, trust: Path) -> None:
    """Keep the public part of the run in ``tmp/run`` at ``run``, each party's private key
    from ``tmp/keys`` under ``keys``, and its trust anchor at ``trust`` (replacing them)."""
    for p in (run, keys):
        if p.exists():
            shutil.rmtree(p)
    run.mkdir()
    for keep in ("cluster.toml", "certs", "transcripts", "result.json"):
        src = tmp / "run" / keep
        (shutil.copytree if src.is_dir() else shutil.copy)(src, run / keep)
    keys.mkdir()
    for party_dir in (tmp / "keys").iterdir():
        if party_dir.is_dir():
            (keys / party_dir.name).mkdir()
            shutil.copy(party_dir / f"{party_dir.name}.key", keys / party_dir.name)
    shutil.copy(tmp / "run.trust.json", trust)


def generate(users: int = 100) -> None:
    """Run the honest two-round mix-net and store it with its keys and expected outcome."""
    tmp = VEC / "_tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    cmd = [
        sys.executable,
        "-m",
        "parties.cli",
        "run",
        "gfim",
        "--shuffler",
        "mixnet",
        "--users",
        str(users),
        "--seed",
        "1",
        "--param",
        "shuffle=false",  # the LDP GFIM: its estimate is recomputed by both verifiers (V-21)
        "--out",
        str(tmp / "run"),
        "--keep-keys",
        str(tmp / "keys"),
        "--quiet",
    ]
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    _store(tmp, RUN, KEYS, TRUST)
    # a one-round grr run (its estimate is recomputed by both verifiers, V-21)
    grr = VEC / "grr-run"
    if grr.exists():
        shutil.rmtree(grr)
    cmd = [
        sys.executable,
        "-m",
        "parties.cli",
        "run",
        "grr",
        "--shuffler",
        "mixnet",
        "--users",
        "60",
        "--seed",
        "1",
        "--out",
        str(tmp / "grr"),
        "--quiet",
    ]
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    grr.mkdir()
    for keep in ("cluster.toml", "certs", "transcripts", "result.json"):
        src = tmp / "grr" / keep
        (shutil.copytree if src.is_dir() else shutil.copy)(src, grr / keep)
    shutil.copy(tmp / "grr.trust.json", VEC / "grr-run.trust.json")
    shutil.rmtree(tmp)
    generate_mpc()
    (VEC / "encodings.json").write_text(json.dumps(encodings(), indent=1) + "\n")
    expected = {
        "honest": {"run": "run", "trust": "run.trust.json", "ok": True},
        "honest_grr": {"run": "grr-run", "trust": "grr-run.trust.json", "ok": True},
        "honest_mpc": {"run": "mpc-run", "trust": "mpc-run.trust.json", "ok": True},
        "invalid": {k: {"fails": v[1], "what": v[2]} for k, v in CORRUPTIONS.items()},
        "invalid_mpc": {k: {"fails": v[1], "what": v[2]} for k, v in MPC_CORRUPTIONS.items()},
        "honest_variants": {
            k: {"recipe": f"python scripts/make_spec_vectors.py variant {k} OUT", "ok": True}
            for k in VARIANTS
        },
    }
    (VEC / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


def generate_mpc(users: int = 40) -> None:
    """A one-round grr run through the MPC shuffler (3 servers, malicious-abort), seeded, with
    its test keys (``keys-mpc/``): the base of ``MPC_CORRUPTIONS``."""
    tmp = VEC / "_tmp_mpc"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    cmd = [
        sys.executable, "-m", "parties.cli", "run", "grr", "--shuffler", "mpc",
        "--users", str(users), "--seed", "1", "--out", str(tmp / "run"),
        "--keep-keys", str(tmp / "keys"), "--quiet",
    ]  # fmt: skip
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    _store(tmp, MPC_RUN, MPC_KEYS, MPC_TRUST)
    shutil.rmtree(tmp)
