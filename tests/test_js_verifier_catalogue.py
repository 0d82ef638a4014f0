"""The JavaScript verifier's catalogue estimators (docs/spec/06-estimates.md K-7: hist_kr and
cnt_rr, linear debiasing LD-1) equal the Python analyzers' on the same shuffled multiset, malformed
rows included; fresh trusted runs verify in both, with only the statements' V-9 and L-4 left
unchecked by the JS verifier (07 P-5)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import NEEDS_NODE

from parties.verify.run import verify_run
from protocols.counting.cnt_rr import CntRR
from protocols.histograms.hist_kr import HistKR

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
pytestmark = NEEDS_NODE
_RUN = """
import { ESTIMATORS } from './verifier/lib/estimates.mjs';
const a = JSON.parse(process.argv[1]);
const rounds = [new Map([[a.batch, a.rows]])];
const r = ESTIMATORS[a.protocol].fn(rounds, { protocol: a.protocol, params: a.params }, { eps_local: a.eps });
console.log(JSON.stringify(r));
"""


def _js(protocol: str, batch: str, rows: np.ndarray, eps: float, params: dict) -> dict:
    arg = {"protocol": protocol, "batch": batch, "rows": rows.tolist(), "eps": eps,
           "params": params}  # fmt: skip
    proc = subprocess.run([NODE, "--input-type=module", "-e", _RUN, json.dumps(arg)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    return json.loads(proc.stdout)


def _close(a: object, b: object) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_close, a, b))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b)) + 1e-12  # spec V-21 closeness
    return a == b


def test_hist_kr_and_cnt_rr_estimates_equal_pythons():
    rng = np.random.default_rng(5)
    h = HistKR(8, 3000, 0.9, 1e-6, bound="vr")
    rows = np.concatenate([rng.integers(0, 8, 2990), [8, -1, 99]]).reshape(-1, 1)
    got = _js("hist_kr", "reports", rows, h.eps_l, {"domain": 8})
    assert _close(got["estimate"], h.analyze({"reports": rows})), got
    assert got["received"] == [2990]
    c = CntRR(500, 0.9, 1e-6)
    bits = np.concatenate([rng.integers(0, 2, 497), [2, -1, 7]]).reshape(-1, 1)
    got = _js("cnt_rr", "bits", bits, c.eps_l, {})
    assert _close(got["estimate"], c.analyze({"bits": bits})), got
    assert got["received"] == [497]
    # an estimate that differs in one count is caught (the comparison is not vacuous)
    other = _js("cnt_rr", "bits", np.vstack([bits, [[1]]]), c.eps_l, {})
    assert not _close(other["estimate"], c.analyze({"bits": bits}))


@pytest.mark.slow  # two multi-process runs
@pytest.mark.parametrize(
    "protocol,args", [("hist_kr", ["--users", "3000", "--param", "domain=8", "--param", "bound=vr"]),
                      ("cnt_rr", ["--users", "500"])],
)  # fmt: skip
def test_catalogue_runs_verify_in_both(tmp_path, protocol, args):
    from conftest import sdp

    run = tmp_path / "run"
    sdp("run", protocol, "--shuffler", "trusted", "--seed", "3", *args, "--out", str(run),
        "--quiet", check=True, timeout=600)  # fmt: skip
    trust = run.with_name("run.trust.json")
    assert verify_run(run, progress=False, trust=json.loads(trust.read_text())).ok
    proc = subprocess.run(
        [NODE, str(ROOT / "verifier" / "verify.mjs"), str(run), "--trust", str(trust), "--json"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    report = json.loads(proc.stdout)
    assert proc.returncode == 3 and report["ok"], proc.stdout  # V-9 / L-4: 07 P-5
    assert {x.split(":")[0] for x in report["not_checked"]} == {"V-9", "V-23 L-4"}, report
    v21 = next(c for c in report["checks"] if c["id"] == "V-21")
    assert v21["ok"] and "matches the published estimate" in v21["detail"]
