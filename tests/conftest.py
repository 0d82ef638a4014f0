"""Shared fixtures: running the ``sdp`` command as a subprocess, dataset paths."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

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


def sdp_run_to(
    out: Path,
    *args: str,
    keys: bool = False,
    timeout: float = 600,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """``sdp run ARGS --out OUT --quiet`` (checked unless ``check`` is False); with ``keys``,
    the party directories are kept beside OUT (``keys_of(out)``)."""
    kept = ("--keep-keys", str(keys_of(out))) if keys else ()
    return sdp(
        "run", *args, "--out", str(out), *kept, "--quiet", timeout=timeout, env=env, check=check
    )


def result_of(out: Path) -> dict:
    """The ``result.json`` of run directory ``out``."""
    return json.loads((out / "result.json").read_text())


def sdp_run(tmp_path: Path, name: str, shuffler: str, *extra: str) -> dict:
    """``sdp run NAME --shuffler SHUFFLER EXTRA`` into tmp_path; the result, which must be
    verified."""
    out = tmp_path / f"{name}-{shuffler}"
    sdp_run_to(out, name, "--shuffler", shuffler, *extra, timeout=1800)
    res = result_of(out)
    assert res["verified"]
    return res


def verify_json(run: Path, **kw: object) -> dict:
    """``sdp verify RUN --json``'s report (checked unless ``check=False`` is passed)."""
    kw.setdefault("check", True)
    return json.loads(sdp("verify", str(run), "--json", **kw).stdout)  # type: ignore[arg-type]


def check_names(report: dict) -> list[str]:
    """The names of the checks in an ``sdp verify --json`` report."""
    return [c["name"] for c in report["checks"]]


def sdp_here(*args: str) -> tuple[int, str, str]:
    """``sdp ARGS`` run by ``parties.cli.main`` in this process: (exit code, stdout, stderr).

    For commands that only read a run directory and write files (``sdp costs --plot``): the
    same code path as the ``sdp`` subprocess, without a fresh interpreter importing matplotlib
    and the project each time."""
    import contextlib
    import io

    from parties.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def gather_hosts(procs: dict[str, subprocess.Popen[str]], hosts: Path, gathered: Path) -> Path:
    """Wait for each party process (every one must exit 0), then copy each host's run
    directory ``hosts/NAME`` into ``gathered``: one run directory, as an auditor collects it."""
    outs = {n: p.communicate(timeout=300) for n, p in procs.items()}
    for n, p in procs.items():
        assert p.returncode == 0, f"{n}: {outs[n][1]}"
    for name in procs:
        shutil.copytree(hosts / name, gathered, dirs_exist_ok=True)
    return gathered


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


def load_script(name: str) -> ModuleType:
    """``scripts/NAME.py`` imported as module NAME (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None, name
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Honest runs shared by every test that checks a property of the same run (read-only: a test
# that tampers copies it first, ``copy_run``); each costs minutes of CPU on a loaded 2-core host.


@pytest.fixture(scope="session")
def gfim_mixnet_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``sdp run gfim --shuffler mixnet --users 600``: two protocol rounds, one mix-net each;
    the party keys kept beside it (``keys_of``)."""
    out = tmp_path_factory.mktemp("gfim-mixnet") / "run"
    sdp_run_to(out, "gfim", "--shuffler", "mixnet", "--users", "600", keys=True, timeout=900)
    return out


@pytest.fixture(scope="session")
def mpc_grr_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``sdp run grr --shuffler mpc --users 600`` in the default (malicious-abort) mode, the
    party keys kept beside it (``keys_of``)."""
    out = tmp_path_factory.mktemp("mpc-grr") / "run"
    sdp_run_to(out, "grr", "--shuffler", "mpc", "--users", "600", keys=True)
    return out


@pytest.fixture(scope="session")
def trusted_grr_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``sdp run grr --users 4000 --domain 8`` over the trusted shuffler, with its one-process
    trust anchor (``RUN.trust.json``) and the party keys beside it (``keys_of``)."""
    out = tmp_path_factory.mktemp("trusted-grr") / "run"
    sdp_run_to(out, "grr", "--users", "4000", "--domain", "8", keys=True)
    return out


@pytest.fixture(scope="session")
def grr_fakes_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``sdp run grr --users 3000 --param fakes=2500`` over the trusted shuffler (it adds the
    fakes), the party keys beside it (``keys_of``)."""
    out = tmp_path_factory.mktemp("fakes") / "run"
    sdp_run_to(out, "grr", "--users", "3000", "--param", "fakes=2500", "--json", keys=True)
    return out


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


def copy_run(run: Path, tmp_path: Path, name: str = "run") -> Path:
    """A copy of run directory ``run`` at ``tmp_path/name`` (to tamper with)."""
    dst = tmp_path / name
    shutil.copytree(run, dst)
    return dst


def transcript(run: Path, party: str) -> list[dict]:
    """The entries of ``party``'s transcript in run directory ``run``."""
    text = (run / "transcripts" / f"{party}.jsonl").read_text()
    return [json.loads(x) for x in text.splitlines() if x]


def put_blob(run: Path, party: str, entry: dict, payload: bytes) -> None:
    """Store ``payload`` as a blob of ``party``'s transcript and point ``entry`` at it."""
    dg = hashlib.sha256(payload).hexdigest()
    (run / "transcripts" / f"{party}.blobs" / dg).write_bytes(payload)
    entry["dg"], entry["len"] = dg, len(payload)


def publish_estimate_of(run: Path, analyzer: list[dict], batches: dict) -> tuple[dict, dict]:
    """A forger's estimate: what the run's GRR analyzer computes from ``batches``, stored in
    place of the published one (in ``analyzer``, its transcript's entries; not re-signed).
    Returns the estimate and the publish entry."""
    import tomllib

    from parties.runtime import codec
    from protocols.workloads import get_workload

    cluster = tomllib.loads((run / "cluster.toml").read_text())
    proto = get_workload("grr", dict(cluster["run"]["params"])).protocol
    estimate = codec.to_jsonable(proto.analyze_round(0, batches, {}))
    pub = next(e for e in analyzer if e["dir"] == "publish" and e["ty"] == "estimate")
    put_blob(run, "analyzer", pub, codec.dumps(estimate))
    return estimate, pub


# the marks of a test module that runs the JavaScript verifier (node, its installed modules)
NEEDS_NODE = [
    pytest.mark.skipif(
        shutil.which("node") is None,
        reason="node (Node 20) is needed to run the JavaScript verifier (verifier/)",
    ),
    pytest.mark.usefixtures("js_dependencies"),
]


@pytest.fixture(scope="session")
def js_dependencies() -> None:
    """``npm ci`` in verifier/ once if the JavaScript verifier's dependencies are not installed
    (CI runs pytest before its own ``npm ci`` line, and the first file that runs node may be any
    of them); a failure fails the tests, it does not skip them."""
    root = Path(__file__).resolve().parent.parent
    if (root / "verifier" / "node_modules").is_dir():
        return
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed to install the JavaScript verifier's dependencies"
    proc = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=root / "verifier",
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"npm ci in verifier/ failed: {proc.stderr[-2000:]}"
