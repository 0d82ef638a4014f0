"""The JavaScript verifier recomputes the linear debiasing estimators of docs/spec/06-estimates.md
K-6 (arr-ss, sue-ms, oue-ldp) on honest trusted runs: both verifiers accept, JS's V-21 re-runs
the estimator and matches the published estimate, and V-23 L-3 re-derives the ledger's counts.
The known answers of the estimators themselves are in verifier/test/estimates.test.mjs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import NEEDS_NODE

from parties.verify.run import verify_run

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
pytestmark = NEEDS_NODE


def _js(run: Path, trust: Path) -> tuple[int, dict]:
    proc = subprocess.run(
        [NODE, str(ROOT / "verifier" / "verify.mjs"), str(run), "--trust", str(trust), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["arr-ss", "sue-ms", "oue-ldp"])
def test_linear_debiasing_estimate_recomputed_by_js(tmp_path, protocol):
    from conftest import sdp

    run = tmp_path / "run"
    sdp(
        "run", protocol, "--shuffler", "trusted", "--users", "3000", "--epsilon", "2",
        "--seed", "5", "--out", str(run), "--quiet", "--no-verify", check=True, timeout=900,
    )  # fmt: skip
    trust = run.with_name("run.trust.json")
    assert verify_run(run, progress=False, trust=json.loads(trust.read_text())).ok
    rc, report = _js(run, trust)
    assert rc == 0 and report["ok"], report
    checks = {c["id"]: c for c in report["checks"]}
    assert checks["V-21"]["ok"] and f"{protocol} estimator re-run" in checks["V-21"]["detail"]
    assert "re-derived from the signed multisets" in checks["V-23"]["detail"]
    assert not any("V-21" in x for x in report["not_checked"]), report["not_checked"]
