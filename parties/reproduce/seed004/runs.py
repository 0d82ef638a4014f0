"""``sdp reproduce seed004 [--quick] --out DIR [--json]``: the survey's experiment (section 7).

Synthetic Bernoulli(q) bits, a normal over [d] and a normal over [0, 1]; defaults n = 10^6
(``--quick``: 10^5), eps_c = 0.9, q = 0.5, delta = 10^-6, d = 64. For every method of
:mod:`parties.reproduce.seed004.methods` at the defaults: RMSE over repetitions (absolute:
counts, per-bin counts, sums), the exact expected RMSE where the estimator's variance is known,
the median analyzer seconds and the measured messages (and bits) per user. Then the sweeps of
Figs. 8-15 (eps_c, n, q, d), the accountant tables (Tables 1-4), the Split-Mix and summation
scaling checks, uniformity-testing sample complexities and range counting; ``report`` writes
the Markdown report with claims C1-C16 and the PNG plots.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from parties.reproduce.seed004.methods import (
    METHODS,
    Method,
    Setting,
    data_for,
    expected_rmse,
    methods_of,
    run_once,
)
from protocols.multi_freq.experiment import c10_measurement, capped_reps, sweep_skip
from protocols.rng import experiment_rng

PLANS: dict[str, dict[str, Any]] = {
    "quick": {
        "defaults": Setting(n=100_000, eps=0.9),
        "reps": 10,
        "sweep_reps": 4,
        "eps": [0.2, 0.5, 1.0],
        "n_count": [10_000, 30_000, 100_000],
        "q": [0.1, 0.5, 0.9],
        "d": [16, 64, 256],
        "n_hist": [10_000, 100_000],
        "n_sum": [10_000, 30_000, 100_000],
        "uniformity_k": [16, 64],
        "uniformity_draws": 100,
        "range": {"n": 100_000, "d": 64, "branching": [2, 4]},
        "gamma": [1.0, 0.5],
        "distinct": {"n": 100_000, "k": [16, 64, 256, 1024], "reps": 8},
        "large_d": {"d": 1 << 16, "reps": 3},
        "c10_users": 30_000,
    },
    "full": {
        "defaults": Setting(n=1_000_000, eps=0.9),
        "reps": 30,
        "sweep_reps": 6,
        "eps": [0.1, 0.2, 0.4, 0.6, 0.8, 1.0],
        "n_count": [10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000],
        "q": [0.1, 0.3, 0.5, 0.7, 0.9],
        "d": [16, 32, 64, 128, 256, 512],
        "n_hist": [10_000, 100_000, 1_000_000],
        "n_sum": [10_000, 100_000, 1_000_000],
        "uniformity_k": [16, 64, 256],
        "uniformity_draws": 300,
        "range": {"n": 1_000_000, "d": 256, "branching": [2, 4, 16]},
        "gamma": [1.0, 0.9, 0.5, 0.25],
        "distinct": {"n": 1_000_000, "k": [16, 64, 256], "reps": 10},
        "large_d": {"d": 1 << 16, "reps": 5},
    },
}


def evaluate(method: Method, s: Setting, reps: int, seed: int) -> dict[str, Any]:
    """RMSE, analyzer seconds, messages/bits per user of ``reps`` runs at s (or why not)."""
    row: dict[str, Any] = {"method": method.name, "label": method.label, "kind": method.kind}
    data = data_for(method.problem, s)
    errs, times, msgs, bits, guar = [], [], [], [], None
    reps = capped_reps(method, s, reps)
    try:
        for r in range(reps):
            rng = experiment_rng(seed, "seed004", method.name, str(asdict(s)), r)
            out = run_once(method, s, data, rng)
            errs.append(out.error)
            times.append(out.analyzer_s)
            msgs.append(out.messages_per_user)
            bits.append(out.bits_per_user)
            guar = (out.eps, out.delta)
    except ValueError as exc:
        row.update(status=f"infeasible: {exc}", rmse=None, analyzer_seconds=None)
        row.update(messages_per_user=None, bits_per_user=None, expected_rmse=None)
        return row
    e = np.concatenate([np.atleast_1d(x) for x in errs])
    row.update(
        status="ok",
        rmse=float(np.sqrt(np.mean(e**2))),
        mean_error=float(np.mean(e)),
        expected_rmse=expected_rmse(method, s, data),
        analyzer_seconds=float(np.median(times)),
        messages_per_user=float(np.mean(msgs)),
        bits_per_user=float(np.mean(bits)),
        eps=guar[0] if guar else None,
        delta=guar[1] if guar else None,
        reps=reps,
    )
    return row


def sweep(
    problem: str, param: str, values: list[Any], base: Setting, reps: int, seed: int
) -> list[dict[str, Any]]:
    """Every method of ``problem`` at every value of ``param`` (other parameters at ``base``)."""
    rows = []
    for v in values:
        s = replace(base, **{param: v})
        for m in methods_of(problem):
            if m.name == "hist_mm" and s.n * s.d > 4e8:
                rows.append({"method": m.name, "value": v, "status": "skipped: > 4e8 labels"})
                continue
            why = sweep_skip(m, s)
            if why:
                rows.append({"method": m.name, "value": v, "status": why})
                continue
            rows.append(evaluate(m, s, reps, seed) | {"value": v})
    return rows


def run(plan_name: str, seed: int, log: Any = print) -> dict[str, Any]:
    """The whole experiment of one plan; returns the JSON-ready results."""
    from parties.reproduce.seed004 import extras, newer
    from protocols.pure_dp.audit import pure_audit

    plan = PLANS[plan_name]
    base: Setting = plan["defaults"]
    t0 = time.perf_counter()
    out: dict[str, Any] = {"plan": plan_name, "seed": seed, "defaults": asdict(base)}
    methods = {}
    for m in METHODS.values():
        methods[m.name] = evaluate(m, base, plan["reps"], seed)
        log(f"  default {m.name}: rmse {methods[m.name].get('rmse')}")
    out["methods"] = methods
    r = plan["sweep_reps"]
    sweeps = {
        "fig8_count_eps": ("count", "eps", plan["eps"]),
        "fig9_count_n": ("count", "n", plan["n_count"]),
        "fig10_count_q": ("count", "q", plan["q"]),
        "fig11_hist_eps": ("hist", "eps", plan["eps"]),
        "fig12_hist_d": ("hist", "d", plan["d"]),
        "fig13_hist_n": ("hist", "n", plan["n_hist"]),
        "fig14_sum_eps": ("sum", "eps", plan["eps"]),
        "fig15_sum_n": ("sum", "n", plan["n_sum"]),
    }
    out["sweeps"] = {}
    for key, (problem, param, values) in sweeps.items():
        t1 = time.perf_counter()
        out["sweeps"][key] = {
            "problem": problem,
            "param": param,
            "rows": sweep(problem, param, values, base, r, seed),
        }
        log(f"  {key}: {time.perf_counter() - t1:.1f} s")
    out["accountant"] = extras.accountant_tables()
    out["splitmix"] = extras.splitmix_checks()
    out["scaling"] = extras.summation_scaling(base, plan.get("scaling_ns"))
    out["uniformity"] = extras.uniformity_complexity(
        plan["uniformity_k"], base.eps, base.delta, plan["uniformity_draws"], seed
    )
    out["range"] = extras.range_results(plan["range"], base, seed)
    out["robustness"] = extras.robustness(plan["gamma"], base, seed)
    out["pure"] = pure_audit(base.n, base.eps, base.delta)  # issue 32: exact pure-DP audit
    out["distinct"] = newer.distinct_results(plan["distinct"], base, seed)
    out["lwy"] = newer.lwy_verdict(out)
    out["lwy_large"] = newer.large_domain(evaluate, base, plan["large_d"], seed)
    out["prhr_c10"] = c10_measurement(plan.get("c10_users"), seed)
    out["seconds"] = time.perf_counter() - t0
    return out


def summary(res: dict[str, Any]) -> dict[str, Any]:
    """The --json summary: per method rmse, analyzer seconds, messages per user at defaults."""
    return {
        "plan": res["plan"],
        "defaults": res["defaults"],
        "methods": {
            k: {
                "rmse": v.get("rmse"),
                "expected_rmse": v.get("expected_rmse"),
                "analyzer_seconds": v.get("analyzer_seconds"),
                "messages_per_user": v.get("messages_per_user"),
                "status": v.get("status"),
            }
            for k, v in res["methods"].items()
        },
        "claims": res.get("claims", {}),
        "seconds": res["seconds"],
    }


def main(argv: list[str]) -> int:
    """Entry of ``sdp reproduce seed004``."""
    from parties.reproduce.seed004 import report

    ap = argparse.ArgumentParser(prog="sdp reproduce seed004", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--quick", action="store_true", help="n = 10^5 and shorter sweeps (< 5 min)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print the JSON summary")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = (lambda m: print(m, file=sys.stderr)) if args.json else print
    res = run("quick" if args.quick else "full", args.seed, log)
    res["claims"] = report.claims(res)
    (out / "seed004.json").write_text(json.dumps(res, indent=1, default=float))
    report.write(res, out)
    if args.json:
        print(json.dumps(summary(res), indent=1, default=float))
    else:
        print((out / "README.md").read_text())
    return 0
