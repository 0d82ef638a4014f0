"""Issue 32's additions to the seed-004 experiment: distinct elements (error against sqrt(k))
and LWY's almost-single-message histogram against the survey's Hist_KR and SLH.

Distinct elements: for every k of the plan, the real encoder for all n users (in blocks of
users, to bound memory) and the real analyzer's XOR of the shares (the XOR of the blocks' XORs
is the XOR of all shares), through the privacy gate; RMSE over repetitions next to the exact
sqrt(variance) and sqrt(k), and the fitted exponent of the error in k (1/2 expected).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from parties.reproduce.seed004.common import err_of, fmt
from parties.reproduce.seed004.methods import METHODS, Setting
from protocols.distinct.parity import RobustDistinct, xor_parities
from protocols.distinct.workload import distinct_column
from protocols.privacy.ledger import USERS, gate
from protocols.rng import experiment_rng

BLOCK_ROWS = 1 << 22  # messages encoded at once (bounded memory)
LWY_RIVALS = ("hist_kr", "slh")


def distinct_results(cfg: dict[str, Any], base: Setting, seed: int) -> dict[str, Any]:
    """Error of the distinct-elements protocol at every k of ``cfg`` (module docstring)."""
    n, rows = int(cfg["n"]), []
    for k in cfg["k"]:
        values = distinct_column(n, k, float(cfg.get("support", 0.5)), base.data_seed)
        truth = int(np.unique(values).size)
        proto = RobustDistinct(n, k, base.eps)
        rel = gate(proto, 0, {"shares": n * proto.max_messages()["shares"], USERS: n})
        errs, spent = [], []
        per = max(1, BLOCK_ROWS // proto.max_messages()["shares"])
        for r in range(int(cfg["reps"])):
            rng = experiment_rng(seed, "seed004", "distinct", int(k), r)
            bits, dt = np.zeros(k, dtype=np.int64), 0.0
            for s in range(0, n, per):
                msgs = proto.encode(values[s : s + per], rng)["shares"]
                t0 = time.perf_counter()
                bits ^= xor_parities(msgs, proto.params)[0]
                dt += time.perf_counter() - t0
            t0 = time.perf_counter()
            est = proto.estimate_from_parities(bits, n)["distinct"]
            spent.append(dt + time.perf_counter() - t0)
            errs.append(est - truth)
        e = np.asarray(errs)
        rows.append(
            {
                "k": int(k),
                "true_distinct": truth,
                "rmse": float(np.sqrt(np.mean(e**2))),
                "mean_error": float(e.mean()),
                "expected_rmse": math.sqrt(proto.variance(truth)),
                "sqrt_k": math.sqrt(k),
                "analyzer_seconds": float(np.median(spent)),
                "messages_per_user": proto.messages_per_user(),
                "bits_per_user": proto.bits_per_user(),
                "eps": rel[0].eps,
                "delta": rel[0].delta,
            }
        )
    ks = np.log([r["k"] for r in rows])
    slope = lambda key: float(np.polyfit(ks, np.log([r[key] for r in rows]), 1)[0])  # noqa: E731
    return {
        "n": n,
        "eps": base.eps,
        "reps": int(cfg["reps"]),
        "rows": rows,
        "k_exponent_measured": slope("rmse") if len(rows) > 1 else None,
        "k_exponent_expected": slope("expected_rmse") if len(rows) > 1 else None,
    }


def large_domain(
    evaluate: Callable[..., dict[str, Any]], base: Setting, cfg: dict[str, Any], seed: int
) -> dict[str, Any]:
    """Hist_LWY (hashed: d > n/ln(n)^2) against Hist_KR and SLH on a large domain, at the
    defaults otherwise; ``evaluate`` is the experiment's own (runs.evaluate)."""
    s = replace(base, d=int(cfg["d"]))
    rows = [evaluate(METHODS[k], s, int(cfg["reps"]), seed) for k in ("hist_lwy", *LWY_RIVALS)]
    return {"d": s.d, "n": s.n, "eps": s.eps, "reps": int(cfg["reps"]), "rows": rows}


def lwy_verdict(res: dict[str, Any]) -> dict[str, Any]:
    """Does Hist_LWY beat Hist_KR and SLH at equal (eps_c, delta)? At the defaults and per sweep
    point (error: exact expected RMSE where known)."""
    m = res["methods"]
    at = {k: err_of(m[k]) for k in ("hist_lwy", *LWY_RIVALS)}
    wins_default = at["hist_lwy"] is not None and all(
        v is None or at["hist_lwy"] < v for k, v in at.items() if k != "hist_lwy"
    )
    points, wins = 0, 0
    for key in ("fig11_hist_eps", "fig12_hist_d", "fig13_hist_n"):
        rows = res["sweeps"].get(key, {}).get("rows", [])
        for v in sorted({r["value"] for r in rows}):
            e = {r["method"]: err_of(r) for r in rows if r["value"] == v}
            if e.get("hist_lwy") is None:
                continue
            points += 1
            wins += all(e.get(k) is None or e["hist_lwy"] < e[k] for k in LWY_RIVALS)
    return {
        "wins_at_defaults": wins_default,
        "rmse_at_defaults": at,
        "messages_per_user": {k: m[k].get("messages_per_user") for k in at},
        "sweep_points": points,
        "sweep_wins": wins,
    }


def markdown(res: dict[str, Any]) -> list[str]:
    """The report's section on the two newer protocols."""
    lines = ["## Newer protocols (issue 32)", ""]
    v = res.get("lwy")
    if v:
        r, msg = v["rmse_at_defaults"], v["messages_per_user"]
        word = "wins" if v["wins_at_defaults"] else "does not win"
        lines += [
            f"**Hist_LWY** (Luo-Wang-Yi, almost a single message) {word} at the defaults: RMSE "
            + ", ".join(f"`{k}` {fmt(x)} ({fmt(msg[k])} msg/user)" for k, x in r.items())
            + f"; lowest error of the three at {v['sweep_wins']} of {v['sweep_points']} sweep "
            "points (eps, d, n), at equal (eps_c, delta).",
            "",
        ]
    big = res.get("lwy_large")
    if big:
        lines += [
            f"On a large domain (d = {big['d']}, n = {big['n']}, eps_c = {big['eps']}, "
            f"{big['reps']} repetitions; Hist_LWY hashes): "
            + "; ".join(
                f"`{r['method']}` "
                + (
                    f"RMSE {fmt(err_of(r))}, {fmt(r['messages_per_user'])} msg/user, analyzer "
                    f"{fmt(r['analyzer_seconds'])} s"
                    if r.get("status") == "ok"
                    else str(r.get("status"))[:80]
                )
                for r in big["rows"]
            )
            + ".",
            "",
        ]
    de = res.get("distinct")
    if de:
        lines += [
            f"**Distinct elements** (robust, parities + XOR split-mix), n = {de['n']}, eps_c = "
            f"{de['eps']}, {de['reps']} repetitions, half the domain held:",
            "",
            "| k | true D | RMSE | expected RMSE | sqrt(k) | RMSE/sqrt(k) | msg/user | "
            "analyzer s | (eps, delta) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in de["rows"]:
            lines.append(
                f"| {r['k']} | {r['true_distinct']} | {fmt(r['rmse'])} | "
                f"{fmt(r['expected_rmse'])} | {fmt(r['sqrt_k'])} | "
                f"{fmt(r['rmse'] / r['sqrt_k'])} | {fmt(r['messages_per_user'])} | "
                f"{fmt(r['analyzer_seconds'])} | ({fmt(r['eps'])}, {fmt(r['delta'])}) |"
            )
        lines += [
            "",
            f"Fitted exponent of the error in k: measured {fmt(de['k_exponent_measured'])}, "
            f"exact {fmt(de['k_exponent_expected'])} (BCJM: Theta(sqrt(k)), exponent 1/2).",
        ]
    return lines
