"""The independent JavaScript verifier (verifier/, written from docs/spec) and ``sdp verify``
agree on the spec's vectors: the honest two-round mix-net run verifies in both, and every
invalid run directory of ``scripts/make_spec_vectors.py`` fails the same numbered check in both
(the one the vector names)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NEEDS_NODE, load_script

from parties.verify.run import verify_run

ROOT = Path(__file__).resolve().parent.parent
VEC = ROOT / "tests" / "vectors" / "spec"
NODE = shutil.which("node")
pytestmark = NEEDS_NODE


VECTORS = load_script("make_spec_vectors")
PRIVACY = load_script("spec_vectors_resigned")


def _python_report(run: Path, trust_file: str = "run.trust.json"):  # noqa: ANN202
    return verify_run(run, progress=False, trust=json.loads((VEC / trust_file).read_text()))


def _python(run: Path, trust_file: str = "run.trust.json") -> tuple[bool, str]:
    report = _python_report(run, trust_file)
    return report.ok, report.first_failed_vid  # every Python check carries its V-number


def _node(run: Path, trust: Path, *extra: str) -> tuple[int, dict]:
    """(exit status, JSON report) of the JavaScript verifier."""
    proc = subprocess.run(
        [NODE, str(ROOT / "verifier" / "verify.mjs"), str(run), "--trust", str(trust), "--json",
         *extra],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode in (0, 1, 3), proc.stderr
    report = json.loads(proc.stdout)
    # 0: verified; 1: a check failed; 3: nothing failed but something was not checked
    assert proc.returncode == (1 if not report["ok"] else 3 if report["not_checked"] and
                               "--allow-unchecked" not in extra else 0), proc.stdout  # fmt: skip
    return proc.returncode, report


def _js(run: Path, trust_file: str = "run.trust.json") -> tuple[bool, str, str]:
    """(verified, first failed check, JSON output): verified only with exit status 0 (every
    check ran and passed)."""
    rc, report = _node(run, VEC / trust_file)
    failed = [c for c in report["checks"] if not c["ok"]]
    return rc == 0, failed[0]["id"] if failed else "", json.dumps(report)


def test_honest_vector_verifies_in_both():
    report = _python_report(VEC / "run")
    ok_js, _, out = _js(VEC / "run")
    assert report.ok and ok_js, out
    ids = {c["id"] for c in json.loads(out)["checks"]}
    # transcript layer, every mix-net check for both rounds, and the published artifacts
    assert {
        f"V-{k}" for k in (1, 2, 3, 4, 5, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22)
    } <= ids
    # both number their checks alike: every Python check is one the JS verifier ran (V-7's
    # "what happened" line is sdp verify's informative account of the users counted)
    py = {c.vid for c in report.checks if c.name != "what happened"}
    assert py <= ids, sorted(py - ids)


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
    assert checks["V-30"]["ok"] and "checks open to 0" in checks["V-30"]["detail"]
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
    rc, report = _node(run, trust)
    assert rc == 0 and not report["not_checked"], report  # grr: every check ran (spec 07)
    assert any(c["id"] == "V-21" and c["ok"] for c in report["checks"])
    if shuffler == "mpc":  # output shares and the malicious-abort checks re-checked (V-30)
        v30 = next(c for c in report["checks"] if c["id"] == "V-30")
        assert v30["ok"] and "checks open to 0" in v30["detail"], v30


@pytest.mark.slow
@pytest.mark.parametrize(
    "protocol,users", [("gfim", "4000"), ("srr-ms", "3000"), ("psrr-ss", "3000")]
)
def test_estimators_agree_on_fresh_trusted_runs(tmp_path, protocol, users):
    """GFIM's shuffle variant (its epsilon from the signed statement, certified by V-9, spec K-5),
    srr-ms and psrr-ss on the bundled adult schema (D-1, K-2, K-3): both verifiers accept, JS
    recomputes the estimate (V-21), the ledger's counts (V-23 L-3), every field of the privacy
    statement (V-9) and every release's epsilon (L-4) with its own accountant: nothing unchecked."""
    from conftest import sdp

    run = tmp_path / "run"
    sdp(
        "run", protocol, "--shuffler", "trusted", "--users", users, "--seed", "3",
        "--out", str(run), "--quiet", check=True, timeout=900,
    )  # fmt: skip
    trust = run.with_name("run.trust.json")
    assert verify_run(run, progress=False, trust=json.loads(trust.read_text())).ok
    rc, report = _node(run, trust)
    assert rc == 0 and not report["not_checked"], report  # V-9 and L-4 too (spec 07 P-3)
    checks = {c["id"]: c for c in report["checks"]}
    assert "certified by the accountant" in checks["V-23"]["detail"]
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
    rc, report = _node(run, trust)
    assert rc == 0, report
    v4 = next(c for c in report["checks"] if c["id"] == "V-4")
    assert "did not: client-2" in v4["detail"]


def _unchecked_only_with_the_flag(run: Path, trust: Path) -> tuple[dict, set[str]]:
    """A run where the JS verifier skips checks: exit 3 without ``--allow-unchecked``, 0 with
    it, the skipped checks listed both times; returns (checks by id, the skipped checks' ids)."""
    rc, report = _node(run, trust)
    assert rc == 3 and report["ok"] and report["not_checked"], report
    rc2, again = _node(run, trust, "--allow-unchecked")
    assert rc2 == 0 and again["not_checked"] == report["not_checked"]
    return {c["id"]: c for c in report["checks"]}, {x.split(":")[0] for x in report["not_checked"]}


@pytest.mark.slow
def test_an_unchecked_bound_exits_3_without_the_flag(tmp_path):
    """grr with ``bound=exact`` on a binary domain (the certified exact search, spec 07 P-5: not
    evaluated by the JS accountant): the JS verifier lists V-9 and L-4 as not checked and exits
    3; with ``--allow-unchecked`` 0; sdp verify checks everything (it re-runs the protocol's own
    statement)."""
    from conftest import sdp

    run = tmp_path / "run"
    sdp(
        "run", "grr", "--shuffler", "trusted", "--users", "40", "--seed", "2",
        "--param", "bound=exact", "--param", "domain=2", "--out", str(run), "--quiet",
        check=True, timeout=600,
    )  # fmt: skip
    trust = run.with_name("run.trust.json")
    assert verify_run(run, progress=False, trust=json.loads(trust.read_text())).ok
    _, unchecked = _unchecked_only_with_the_flag(run, trust)
    assert unchecked == {"V-9", "V-23 L-4"}, unchecked


def test_honest_default_mpc_vector_verifies_in_both():
    """A default MPC run (``sdp run grr --shuffler mpc``: malicious-abort, the multiset check not
    asked for, so ``checks.multiset = {}``; spec V-30 S-4(c)): both verifiers accept it, and the
    JS verifier checks everything (V-9 and L-4 included: exit 0, nothing unchecked)."""
    ok_py, failed = _python(VEC / "mpc-default-run", "mpc-default-run.trust.json")
    rc, report = _node(VEC / "mpc-default-run", VEC / "mpc-default-run.trust.json")
    assert ok_py and rc == 0 and not report["not_checked"], (failed, report)
    checks = {c["id"]: c for c in report["checks"]}
    assert {"V-9", "V-30", "V-21", "V-23"} <= set(checks)
    assert "certified by the accountant" in checks["V-23"]["detail"]


# the fast set keeps one vector per kind of check (A-4, A-5, P-3 exact, L-2, L-4); all run slow
_PRIVACY_FAST = {"privacy-eps-central", "privacy-eps-local", "privacy-release-eps"}
_PRIVACY_FAST |= {"entry-pub-int", "spec-version-2"}


@pytest.mark.parametrize(
    "name",
    [
        n if n in _PRIVACY_FAST else pytest.param(n, marks=pytest.mark.slow)
        for n in sorted(PRIVACY.RESIGNED)
    ],
)
def test_edited_privacy_statement_fails_the_same_check_in_both(tmp_path, name):
    """The analyzer re-signs its privacy statement with one field edited (eps_central / 10,
    delta / 1000, bound, n_accounted x 10, mechanism, eps_local with a matching estimate, the
    target, a release's eps, the total, the composition): both verifiers reject it with the
    numbered check the vector names (V-9 or V-23, spec 07); and a message entry re-signed with a
    field of the wrong JSON type (`"pub": 1`, `"len": 114.0`, `"rd": false`: V-3, spec T-12)."""
    run = tmp_path / name
    want = PRIVACY.corrupt(name, run)
    ok_py, id_py = _python(run, "mpc-run.trust.json")
    ok_js, id_js, out = _js(run, "mpc-run.trust.json")
    assert not ok_py and not ok_js, out
    assert id_py == id_js == want, (id_py, id_js, out)


_ACCOUNTANT_CHECK = """
import fs from 'node:fs';
import { decompositionDelta, corners } from './verifier/lib/accountant.mjs';
const doc = JSON.parse(fs.readFileSync('tests/vectors/spec/privacy.json', 'utf8'));
const out = doc.vectors.map((v) => decompositionDelta(v.eps, v.n, corners(v.mechanism, v.eps_local, v.k)));
console.log(JSON.stringify(out));
"""


def test_js_accountant_matches_the_privacy_vectors():
    """Spec 07 A-3 in JavaScript (its own code) against the Python accountant's rigorous brackets
    and, for n <= 8, the brute-force exact values (tests/vectors/spec/privacy.json)."""
    proc = subprocess.run([NODE, "--input-type=module", "-e", _ACCOUNTANT_CHECK], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    vectors = json.loads((VEC / "privacy.json").read_text())["vectors"]
    assert len(got) == len(vectors) >= 10
    for d, v in zip(got, vectors):
        assert v["delta_lower"] * (1 - 1e-6) <= d <= v["delta_upper"] * (1 + 1e-6), (d, v)
        if "delta_exact" in v:
            assert abs(d - v["delta_exact"]) <= 1e-9 * v["delta_exact"], (d, v)


def test_js_fmt21_matches_the_privacy_vectors():
    """Spec 07 A-8 (the FMT21 clone pair) in JavaScript against privacy.json's ``fmt21`` list:
    the Python accountant's delta(eps), the brute force for n <= 8, and its forward and inverse
    maps accepted by A-4 and A-5 (verifier/test/fmt21.test.mjs)."""
    proc = subprocess.run([NODE, "--test", "verifier/test/fmt21.test.mjs"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0 and "# fail 0" in proc.stdout, proc.stdout[-3000:]
    fmt21 = json.loads((VEC / "privacy.json").read_text())["fmt21"]
    assert sum("delta_exact" in v for v in fmt21) >= 3 and sum("eps" not in v for v in fmt21) >= 6


def test_help_and_usage():
    proc = subprocess.run([NODE, str(ROOT / "verifier" / "verify.mjs"), "--help"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0 and "--allow-unchecked" in proc.stdout
    bad = subprocess.run([NODE, str(ROOT / "verifier" / "verify.mjs"), "--bogus", "x"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert bad.returncode == 2 and "usage" in bad.stderr


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
    # spec T-13: both say "rejoined" from the peers' signed rejoin entries, in the same words
    py = verify_run(run, progress=False, trust=json.loads((VEC / "run.trust.json").read_text()))
    said_py = [w for w in py.warnings if "restarted" in w or "started again" in w]
    said_js = [w for w in json.loads(out)["warnings"] if "restarted" in w or "started again" in w]
    assert said_js == said_py and "(rejoin recorded by " in said_js[0], (said_js, said_py)


def test_expected_json_lists_every_corruption():
    expected = json.loads((VEC / "expected.json").read_text())
    assert set(expected["honest_variants"]) == set(VECTORS.VARIANTS)
    assert {k: v["fails"] for k, v in expected["invalid"].items()} == {
        k: v[1] for k, v in VECTORS.CORRUPTIONS.items()
    }
    assert {k: v["fails"] for k, v in expected["invalid_mpc"].items()} == {
        k: v[1] for k, v in VECTORS.MPC_CORRUPTIONS.items()
    }
    assert {k: v["fails"] for k, v in expected["invalid_resigned"].items()} == {
        k: v[1] for k, v in PRIVACY.RESIGNED.items()
    }


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
