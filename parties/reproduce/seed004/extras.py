"""Seed-004 checks beyond the method comparison: the accountant's tables (Tables 1-4, claims
C1-C4), Split-Mix message counts and Theorem 9 (C13, C16), summation error scaling (C14, C15),
uniformity-testing sample complexity, range counting, and robustness to dropped users (gamma).

Everything here is exact (closed forms, exact variances) except the uniformity powers (Monte
Carlo of the exact law of the testers' input) and the range runs (real encoder and analyzer).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from parties.reproduce.seed004.methods import Setting
from protocols.accountant import survey
from protocols.catalogue.data import normal_categorical, normal_unit
from protocols.counting.cnt_bn import CntBN
from protocols.counting.cnt_rr import CntRR
from protocols.counting.cnt_sgm import CntSGM
from protocols.histograms.hist_kr import HistKR
from protocols.ranges.matrix_mechanism import range_answers
from protocols.ranges.tree import RangeTree, random_ranges
from protocols.rng import experiment_rng
from protocols.summation.split_mix import num_shares
from protocols.sums.rsum_dsg import RSumDSG
from protocols.sums.rsum_kr import RSumKR
from protocols.sums.rsum_rm import RSumRM
from protocols.uniformity.sample_complexity import sample_complexity
from protocols.uniformity.testers import AUT, PUT

TABLE_DELTA = 1e-9
TABLE_N = [10**4, 10**5, 10**6, 10**7]
TABLE_EPS_L = [0.1, 0.2, 0.3, 0.4, 0.5]
TABLE_EPS_C = [0.1, 0.3, 0.5, 0.7, 0.9, 1.0]


def _v(b: survey.Bound) -> float | None:
    return b.value if b.valid else None


def accountant_tables() -> dict[str, Any]:
    """Tables 1-4 at delta = 1e-9, Theorem 4 across k, and the C1/C3 comparisons."""
    d = TABLE_DELTA
    t1 = {n: {e: _v(survey.theorem1(e, n, d)) for e in TABLE_EPS_L} for n in TABLE_N}
    conv = {}
    for name, fn in (
        ("theorem2", lambda e, n: survey.theorem2_inverse(e, n, d)),
        ("theorem3", lambda e, n: survey.theorem3_inverse(e, n, d)),
        ("theorem3_loose", lambda e, n: survey.theorem3_loose_inverse(e, n, d)),
        ("theorem4_k2", lambda e, n: survey.theorem4_inverse(e, n, d, 2)),
    ):
        conv[name] = {n: {e: _v(fn(e, n)) for e in TABLE_EPS_C} for n in TABLE_N}
    ks = [2, 4, 8, 16, 64, 256, 1024]
    across_k = {
        f"n={n},eps_c={e}": {k: _v(survey.theorem4_inverse(e, n, d, k)) for k in ks}
        for n in (10**5, 10**6)
        for e in (0.5, 0.9)
    }
    c3 = []
    for n in TABLE_N:
        for e in TABLE_EPS_C:
            a, b = conv["theorem3"][n][e], conv["theorem4_k2"][n][e]
            c3.append({"n": n, "eps_c": e, "theorem3": a, "theorem4_k2": b})
    return {
        "delta": d,
        "table1_theorem1_forward": t1,
        "tables2_4_inverse": conv,
        "theorem4_across_k": across_k,
        "c3_pairs": c3,
    }


def splitmix_checks() -> dict[str, Any]:
    """C13: Balle et al.'s message count; C16: Theorem 9 on the protocols' parameters."""
    s32 = num_shares(10**4, 10**4 * 2**32, 40)
    by_n = {n: num_shares(n, n * 2**32, 40) for n in (10**3, 10**4, 10**5, 10**6, 10**7, 10**8)}
    sgm = CntSGM(10**6, 0.9)
    dsg = RSumDSG(10**6, 0.9)
    c16 = []
    for name, p in (("cnt_sgm", sgm.params), ("rsum_dsg", dsg.params)):
        e, dlt = survey.theorem9(p.epsilon, 0.0, 2.0 ** (-p.sigma))
        c16.append(
            {
                "protocol": name,
                "eps": e,
                "sigma": p.sigma,
                "delta_theorem9": dlt,
                "delta_reported": p.delta_split,
                "shares": p.shares,
            }
        )
    return {"c13_shares_n1e4_32bit_sigma40": s32, "c13_shares_by_n": by_n, "c16": c16}


def _slope(xs: list[float], ys: list[float]) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def summation_scaling(base: Setting, ns: list[int] | None = None) -> dict[str, Any]:
    """Exact RMSE of the sum protocols as n and eps vary (no simulation: exact variances)."""
    ns = ns or [10**3, 10**4, 10**5, 10**6, 10**7]
    single: dict[int, float | None] = {}
    rm: dict[int, float | None] = {}
    dsg, dsg_msgs = {}, {}
    for n in ns:
        x = normal_unit(n, 0)
        try:
            single[n] = float(RSumKR(n, base.eps, base.delta, levels="optimal").variance(x))
        except ValueError:
            single[n] = None
        try:
            rm[n] = float(RSumRM(n, base.eps, base.delta, m=3).variance(x) ** 0.5)
        except ValueError:
            rm[n] = None
        p = RSumDSG(n, base.eps)
        dsg[n] = float(p.variance(x) ** 0.5)
        dsg_msgs[n] = p.params.shares
    x = normal_unit(base.n, 0)
    eps_grid = [0.2, 0.4, 0.6, 0.8, 1.0]
    dsg_eps = {e: float(RSumDSG(base.n, e).variance(x) ** 0.5) * e for e in eps_grid}
    big = [n for n in ns if single[n] is not None]
    return {
        "c14_single_message_mse_by_n": single,
        "c14_single_message_mse_slope": _slope(big, [single[n] for n in big]),
        "c14_single_message_mse_slope_top_decade": _slope(big[-2:], [single[n] for n in big[-2:]]),
        "rsum_rm3_rmse_by_n": rm,
        "c15_dsg_rmse_by_n": dsg,
        "c15_dsg_shares_by_n": dsg_msgs,
        "c15_dsg_rmse_times_eps": dsg_eps,
    }


def uniformity_complexity(
    ks: list[int], eps: float, delta: float, draws: int, seed: int, alpha: float = 0.25
) -> dict[str, Any]:
    """Smallest n reaching power 0.9 at size 0.1 against Paninski's alternative."""
    rows = []
    for k in ks:
        t0 = time.perf_counter()
        put = sample_complexity(lambda n, k=k: PUT(k, n, eps), k, alpha, draws=draws, seed=seed)
        aut = sample_complexity(
            lambda n, k=k: AUT(k, n, eps, delta), k, alpha, draws=draws, seed=seed
        )
        non = sample_complexity(None, k, alpha, draws=draws, seed=seed)
        rows.append(
            {
                "k": k,
                "put_n": put["n"],
                "aut_n": aut["n"],
                "nonprivate_n": non["n"],
                "put_messages_per_user": PUT(k, put["n"], eps).messages_per_user()
                if put["n"]
                else None,
                "aut_messages_per_user": AUT(k, aut["n"], eps, delta).messages_per_user()
                if aut["n"]
                else None,
                "seconds": time.perf_counter() - t0,
            }
        )
    slopes = {}
    for key in ("put_n", "aut_n", "nonprivate_n"):
        pts = [(r["k"], r[key]) for r in rows if r[key]]
        if len(pts) >= 2:
            slopes[key] = _slope([p[0] for p in pts], [p[1] for p in pts])
    return {"alpha": alpha, "power": 0.9, "size": 0.1, "rows": rows, "k_exponents": slopes}


def range_results(cfg: dict[str, Any], base: Setting, seed: int) -> dict[str, Any]:
    """Range-tree RMSE (random and prefix ranges) per branching, against flat Hist_KR sums."""
    n, d = int(cfg["n"]), int(cfg["d"])
    v = normal_categorical(n, d, 0)
    truth = np.bincount(v, minlength=d).astype(np.float64)
    queries = random_ranges(d, 200, seed)
    rows = []
    candidates: list[tuple[str, Any, str]] = []
    for bound in ("theorem4", "vr"):
        candidates.append((f"flat hist_kr ({bound})", None, bound))
        candidates += [(f"tree b={b} ({bound})", b, bound) for b in cfg["branching"]]
    for label, b, bound in candidates:
        rng = experiment_rng(seed, "seed004", "range", label)
        try:
            if b is None:
                p: Any = HistKR(d, n, base.eps, base.delta, bound=bound)
            else:
                p = RangeTree(d, n, base.eps, base.delta, branching=b, queries=queries, bound=bound)
            batches = p.encode(v.reshape(-1, 1), rng)
            t0 = time.perf_counter()
            est = p.analyze(batches)
            dt = time.perf_counter() - t0
        except ValueError as exc:
            rows.append({"method": label, "status": f"infeasible: {exc}"})
            continue
        leaves = np.asarray(est["counts"] if b is None else est["leaf_counts"])
        err = range_answers(leaves, queries) - range_answers(truth, queries)
        rows.append(
            {
                "method": label,
                "status": "ok",
                "rmse_random_ranges": float(np.sqrt(np.mean(err**2))),
                "analyzer_seconds": dt,
                "messages_per_user": p.messages_per_user(),
            }
        )
    return {"n": n, "d": d, "eps": base.eps, "queries": int(queries.shape[0]), "rows": rows}


def robustness(gammas: list[float], base: Setting, seed: int) -> dict[str, Any]:
    """Cost of robustness (gamma) and the guarantees re-accounted when 10% of users drop out."""
    n = base.n
    cost = []
    for g in gammas:
        sgm = CntSGM(n, base.eps, gamma=g)
        bn = CntBN(n, base.eps, base.delta, gamma=g)
        dsg = RSumDSG(n, base.eps, gamma=g)
        cost.append(
            {
                "gamma": g,
                "cnt_sgm_rmse": math.sqrt(sgm.noise_variance()),
                "cnt_sgm_messages": sgm.messages_per_user(),
                "cnt_bn_rmse": math.sqrt(bn.noise_variance()),
                "cnt_bn_messages": bn.messages_per_user(),
                "rsum_dsg_noise_rmse": math.sqrt(dsg.params.noise_variance()) / dsg.p,
            }
        )
    received = int(0.9 * n)
    dropout = []
    for label, p in (
        ("cnt_rr", CntRR(n, base.eps, base.delta)),
        ("cnt_sgm (gamma=1)", CntSGM(n, base.eps)),
        ("cnt_sgm (gamma=0.9)", CntSGM(n, base.eps, gamma=0.9)),
        ("cnt_bn (gamma=1)", CntBN(n, base.eps, base.delta)),
        ("hist_kr", HistKR(base.d, n, base.eps, base.delta)),
    ):
        g = p.guarantee(received)
        dropout.append({"protocol": label, "users": received, "eps": g.eps, "delta": g.delta})
    return {"cost": cost, "dropout_10pct": dropout, "n": n, "seed": seed}
