"""The JavaScript verifier's model of the multidimensional protocols' statements
(docs/spec/07-privacy.md P-3/P-4): the statements and releases the Python protocols make pass
V-9 and L-4 in JS, and an edited local epsilon, infeasible list or bound text fails (the checks
are not vacuous). ``paper`` accounting (A-9: Calculate inside Balle et al.'s theorem, infeasible
attributes, the route to the accountant outside it) for psrr-ss and srr-ms; arr-ss, sue-ms
(tight and paper) and oue-ldp."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

from conftest import NEEDS_NODE

from protocols.multidim.arr_ss import ARRSS
from protocols.multidim.baselines import SUEMS, OUESampling
from protocols.multidim.psrr_ss import PSRRSS
from protocols.multidim.srr_ms import SRRMS
from protocols.privacy.ledger import compose

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
pytestmark = NEEDS_NODE
ADULT = (16, 7, 20, 16, 16, 7, 14, 6, 5, 2, 20, 20, 20, 41, 2)  # spec 06 D-1
NAMES = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
         "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
         "hours-per-week", "native-country", "income")  # fmt: skip
_CHECK = """
import { checkReleases, checkStatement } from './verifier/lib/privacy.mjs';
const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
console.log(JSON.stringify(cases.map(([cluster, s]) => {
  const v9 = checkStatement(cluster, s), l4 = checkReleases(cluster, s);
  return { ok: v9.ok && !v9.unchecked.length && !l4.failure && !l4.unchecked, why: v9.ok ? (l4.failure ?? l4.unchecked ?? '') : v9.detail };
})));
"""


def _statement(protocol: object, counts: dict[str, int]) -> dict:
    releases = protocol.releases(0, counts)
    s = protocol.privacy() | {"releases": [dataclasses.asdict(r) for r in releases]}
    return json.loads(json.dumps(s | {"total": compose(releases), "simulation": False}))


def _js(cases: list[tuple[dict, dict]]) -> list[dict]:
    script = (
        "const require = (await import('node:module')).createRequire(import.meta.url);" + _CHECK
    )
    proc = subprocess.run([NODE, "--input-type=module", "-e", script], input=json.dumps(cases),
                          cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_paper_accounting_statements_pass_and_edits_fail():
    n = 45222
    srr = SRRMS(ADULT, n, 1.0, min(1e-6, 0.01 / n), accounting="paper", attributes=NAMES)
    srr_s = _statement(srr, {f"a{j}": n for j in range(len(ADULT))})
    assert srr_s["infeasible"] and srr_s["bound"] == "balle19-closed-form"  # some attributes none
    psrr = PSRRSS(ADULT, 3000, 2.0, min(1e-6, 0.01 / 3000), accounting="paper", attributes=NAMES)
    psrr_s = _statement(psrr, {"reports": 3000})
    assert "outside its theorem" in psrr_s["bound"]  # eps_c > 1: routed to the accountant
    srr_c = {"protocol": "srr-ms", "params": {"bound": "paper", "users": n}}
    psrr_c = {"protocol": "psrr-ss", "params": {"bound": "paper", "users": 3000, "epsilon": 2.0}}
    feasible = next(j for j, e in enumerate(srr_s["eps_l"]) if e is not None)
    edits = []
    s = copy.deepcopy(srr_s)
    s["eps_l"][feasible] *= 1.001  # not Calculate's ln(X - k + 1)
    edits.append((srr_c, s))
    s = copy.deepcopy(srr_s)
    s["infeasible"] = s["infeasible"][1:]  # an infeasible attribute hidden
    edits.append((srr_c, s))
    s = copy.deepcopy(srr_s)
    s["releases"][0]["bound"] = "balle19-closed-form"  # the release text is Theorem 1's
    edits.append((srr_c, s))
    s = copy.deepcopy(psrr_s)
    s["eps_l"] *= 1.2  # above the vr calibration
    edits.append((psrr_c, s))
    s = copy.deepcopy(psrr_s)
    s["bound"] = "balle19-closed-form"  # claims the closed form outside its theorem
    edits.append((psrr_c, s))
    got = _js([(srr_c, srr_s), (psrr_c, psrr_s), *edits])
    assert got[0]["ok"] and got[1]["ok"], got[:2]
    assert not any(g["ok"] for g in got[2:]), got[2:]


def _case(cls: type, protocol: str, n: int, eps: float, counts: dict, acct: str = "tight") -> tuple:
    delta = min(1e-6, 0.01 / n)
    p = cls(ADULT, n, eps, delta, attributes=NAMES, accounting=acct)
    params = {"users": n, "epsilon": eps} | ({"bound": "paper"} if acct == "paper" else {})
    return {"protocol": protocol, "params": params}, _statement(p, counts)


def test_arr_sue_oue_statements_pass_and_edits_fail():
    groups = {f"a{j}": 10**6 for j in range(len(ADULT))}
    cases = [
        _case(ARRSS, "arr-ss", 3000, 2.0, {"reports": 3000}),
        _case(SUEMS, "sue-ms", 3000, 2.0, groups),
        _case(SUEMS, "sue-ms", 3000, 2.0, groups, "paper"),
        _case(OUESampling, "oue-ldp", 3000, 2.0, groups),
    ]
    assert cases[2][1]["bound"] == "accountant:decomposition/sue (whole vectors)"
    edits = []
    for cluster, s in cases[:3]:
        e = copy.deepcopy(s)
        e["eps_l"] *= 1.2  # above the calibration
        edits.append((cluster, e))
    e = copy.deepcopy(cases[1][1])
    e["releases"][3]["eps"] /= 2  # one group's release halved (the total recomposed below)
    e["total"]["eps"] = max(r["eps"] for r in e["releases"])
    edits.append((cases[1][0], e))
    e = copy.deepcopy(cases[3][1])
    e["eps_l"] = 4.0  # the pure-LDP budget is eps_c
    edits.append((cases[3][0], e))
    got = _js([*cases, *edits])
    assert all(g["ok"] for g in got[: len(cases)]), got[: len(cases)]
    assert not any(g["ok"] for g in got[len(cases) :]), got[len(cases) :]
