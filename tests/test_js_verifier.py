"""The independent JavaScript verifier (verifier/, written from docs/spec) and ``sdp verify``
agree on the spec's vectors: the honest two-round mix-net run verifies in both, and every
invalid run directory of ``scripts/make_spec_vectors.py`` fails the same numbered check in both
(the one the vector names)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from parties.verify.run import verify_run

ROOT = Path(__file__).resolve().parent.parent
VEC = ROOT / "tests" / "vectors" / "spec"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(
    NODE is None, reason="node (Node 20) is needed to run the JavaScript verifier (verifier/)"
)


@pytest.fixture(scope="module", autouse=True)
def _node_modules() -> None:
    """``npm ci`` in verifier/ once if its dependencies are not installed (CI runs pytest
    before its own ``npm ci`` line); a failure fails the tests, it does not skip them."""
    if (ROOT / "verifier" / "node_modules").is_dir():
        return
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed to install the JavaScript verifier's dependencies"
    proc = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=ROOT / "verifier",
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"npm ci in verifier/ failed: {proc.stderr[-2000:]}"


def _vectors():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(
        "make_spec_vectors", ROOT / "scripts" / "make_spec_vectors.py"
    )
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


VECTORS = _vectors()

# Python check names (parties/verify) -> numbered checks of docs/spec
_PREFIXES = [
    ("run directory", "V-1"),
    ("certificates", "V-2"),
    ("transcript chains and signatures", "V-3"),
    ("party status (signed)", "V-4"),
    ("cross-party consistency", "V-5"),
    ("publication", "V-6"),
    ("run completed", "V-7"),
    ("privacy ledger", "V-23"),
    ("MPC input evidence", "V-31"),
    ("MPC ", "V-30"),
    ("privacy", "V-8"),
    ("mix-net public record", "V-10"),
    ("published estimate", "V-20"),
    ("recompute", "V-21"),
    ("result.json", "V-22"),
]
_SUFFIXES = [
    ("record matches the wire", "V-11"),
    ("input agreement", "V-19"),
    (": record", "V-12"),
    (": dkg", "V-13"),
    (": client submissions", "V-14"),
    (": mixers", "V-15"),
    (": mixes", "V-16"),
    (": decryption set", "V-17"),
    (": decryption ", "V-18"),
]


def spec_id(python_check: str) -> str:
    """The numbered check of docs/spec that a Python check name implements."""
    for suffix, cid in _SUFFIXES:
        if python_check.startswith("mix-net") and suffix in python_check:
            return cid
    for prefix, cid in _PREFIXES:
        if python_check.startswith(prefix):
            return cid
    return f"unmapped: {python_check}"


def _python(run: Path, trust_file: str = "run.trust.json") -> tuple[bool, str]:
    trust = json.loads((VEC / trust_file).read_text())
    report = verify_run(run, progress=False, trust=trust)
    failed = [c for c in report.checks if not c.ok]
    return report.ok, spec_id(failed[0].name) if failed else ""


def _js(run: Path, trust_file: str = "run.trust.json") -> tuple[bool, str, str]:
    proc = subprocess.run(
        [
            NODE,
            str(ROOT / "verifier" / "verify.mjs"),
            str(run),
            "--trust",
            str(VEC / trust_file),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    failed = [c for c in report["checks"] if not c["ok"]]
    assert report["ok"] == (proc.returncode == 0)
    return report["ok"], failed[0]["id"] if failed else "", proc.stdout


def test_honest_vector_verifies_in_both():
    ok_py, _ = _python(VEC / "run")
    ok_js, _, out = _js(VEC / "run")
    assert ok_py and ok_js, out
    ids = {c["id"] for c in json.loads(out)["checks"]}
    # transcript layer, every mix-net check for both rounds, and the published artifacts
    assert {
        f"V-{k}" for k in (1, 2, 3, 4, 5, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22)
    } <= ids


def test_honest_grr_vector_estimate_recomputed_in_both():
    ok_py, _ = _python(VEC / "grr-run", "grr-run.trust.json")
    ok_js, _, out = _js(VEC / "grr-run", "grr-run.trust.json")
    assert ok_py and ok_js, out
    checks = {c["id"]: c["ok"] for c in json.loads(out)["checks"]}
    assert checks["V-21"] and checks["V-22"]  # estimate recomputed, result.json as signed


def test_honest_mpc_vector_verifies_in_both():
    """The MPC vector (grr, 3 servers, malicious-abort): V-30 re-derives the published multiset
    from the servers' signed output shares and re-checks the opened MAC and multiset values."""
    ok_py, _ = _python(VEC / "mpc-run", "mpc-run.trust.json")
    ok_js, _, out = _js(VEC / "mpc-run", "mpc-run.trust.json")
    assert ok_py and ok_js, out
    checks = {c["id"]: c for c in json.loads(out)["checks"]}
    assert checks["V-30"]["ok"] and "MAC and multiset checks open to 0" in checks["V-30"]["detail"]
    assert checks["V-21"]["ok"] and checks["V-23"]["ok"]


@pytest.mark.slow  # two fresh runs; the MPC vector above is the fast MPC case
@pytest.mark.parametrize("shuffler", ["trusted", "mpc"])
def test_honest_trusted_and_mpc_runs_verify_in_both(tmp_path, shuffler):
    """A fresh grr run through the trusted and the MPC shuffler: both verifiers accept it, and
    the JS verifier recomputes the estimate from the shuffled multiset (V-21)."""
    from conftest import sdp

    run = tmp_path / "run"
    sdp(
        "run",
        "grr",
        "--shuffler",
        shuffler,
        "--users",
        "40",
        "--seed",
        "2",
        "--out",
        str(run),
        "--quiet",
        check=True,
        timeout=600,
    )
    trust = run.with_name("run.trust.json")
    assert verify_run(run, progress=False, trust=json.loads(trust.read_text())).ok
    proc = subprocess.run(
        [NODE, str(ROOT / "verifier" / "verify.mjs"), str(run), "--trust", str(trust), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["ok"], proc.stdout
    assert any(c["id"] == "V-21" and c["ok"] for c in report["checks"])
    if shuffler == "mpc":  # output shares and the malicious-abort checks re-checked (V-30)
        v30 = next(c for c in report["checks"] if c["id"] == "V-30")
        assert v30["ok"] and "MAC and multiset checks open to 0" in v30["detail"], v30


@pytest.mark.slow
@pytest.mark.parametrize(
    "protocol,users", [("gfim", "4000"), ("srr-ms", "3000"), ("psrr-ss", "3000")]
)
def test_estimators_agree_on_fresh_trusted_runs(tmp_path, protocol, users):
    """GFIM's shuffle variant (its epsilon from the signed statement, spec K-5), srr-ms and
    psrr-ss on the bundled adult schema (D-1, K-2, K-3): both verifiers accept, JS recomputes
    the estimate (V-21) and the ledger's counts (V-23 L-3)."""
    from conftest import sdp

    run = tmp_path / "run"
    sdp(
        "run", protocol, "--shuffler", "trusted", "--users", users, "--seed", "3",
        "--out", str(run), "--quiet", check=True, timeout=900,
    )  # fmt: skip
    trust = run.with_name("run.trust.json")
    assert verify_run(run, progress=False, trust=json.loads(trust.read_text())).ok
    proc = subprocess.run(
        [NODE, str(ROOT / "verifier" / "verify.mjs"), str(run), "--trust", str(trust), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["ok"], proc.stdout
    checks = {c["id"]: c for c in report["checks"]}
    assert (
        checks["V-21"]["ok"] and "re-derived from the signed multisets" in checks["V-23"]["detail"]
    )


@pytest.mark.slow
def test_dropout_mixnet_run_verifies_in_both(tmp_path):
    """A client party killed mid-submission (unsigned tail, not closed cleanly): the mix-net
    run completes for the survivors and both verifiers accept it (V-4 tolerates clients)."""
    from conftest import sdp

    run = tmp_path / "run"
    sdp(
        "run", "grr", "--shuffler", "mixnet", "--users", "200", "--clients", "4",
        "--min-users", "120", "--out", str(run), "--quiet",
        env={"SDP_FAULT_KILL": "client-2:mix.submit"}, check=True, timeout=900,
    )  # fmt: skip
    trust = run.with_name("run.trust.json")
    assert verify_run(run, progress=False, trust=json.loads(trust.read_text())).ok
    proc = subprocess.run(
        [NODE, str(ROOT / "verifier" / "verify.mjs"), str(run), "--trust", str(trust), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["ok"], proc.stdout
    v4 = next(c for c in report["checks"] if c["id"] == "V-4")
    assert "did not: client-2" in v4["detail"]


# the vectors that fail a late check (every proof of the run verified first, in both verifiers)
# run with the slow tests; the fast set keeps one or more vectors of every other check
_LATE = {"result-edited", "ledger-total-forged", "bad-mix-proof", "bad-decryption-proof"}
_LATE |= {"bad-client-proof"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n in _LATE else n
        for n in sorted(VECTORS.CORRUPTIONS) + sorted(VECTORS.MPC_CORRUPTIONS)
    ],
)
def test_invalid_vector_fails_the_same_check_in_both(tmp_path, name):
    run = tmp_path / name
    want = VECTORS.corrupt(name, run)
    trust = "mpc-run.trust.json" if name in VECTORS.MPC_CORRUPTIONS else "run.trust.json"
    ok_py, id_py = _python(run, trust)
    ok_js, id_js, out = _js(run, trust)
    assert not ok_py and not ok_js, out
    assert id_py == id_js == want, (id_py, id_js, out)


@pytest.mark.parametrize("name", sorted(VECTORS.VARIANTS))
def test_honest_variant_verifies_in_both(tmp_path, name):
    """``restarted``: mix-1 crashed before speaking (its ``mix-1.crashed-0.jsonl`` is verified,
    spec T-11) and every peer logged its rejoin; both verifiers accept it."""
    run = tmp_path / name
    VECTORS.variant(name, run)
    ok_py, id_py = _python(run)
    ok_js, _, out = _js(run)
    assert ok_py and ok_js, (id_py, out)
    v3 = next(c for c in json.loads(out)["checks"] if c["id"] == "V-3")
    assert "of crashed incarnations" in v3["detail"]
    assert not any("crashed" in x for x in json.loads(out)["not_checked"])


def test_expected_json_lists_every_corruption():
    expected = json.loads((VEC / "expected.json").read_text())
    assert set(expected["honest_variants"]) == set(VECTORS.VARIANTS)
    assert {k: v["fails"] for k, v in expected["invalid"].items()} == {
        k: v[1] for k, v in VECTORS.CORRUPTIONS.items()
    }
    assert {k: v["fails"] for k, v in expected["invalid_mpc"].items()} == {
        k: v[1] for k, v in VECTORS.MPC_CORRUPTIONS.items()
    }


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
