"""Benchmark of the DP core's frequency oracles and accountant, ours vs baselines side by side.

    python scripts/bench_oracles.py --json            # default sizes (d=42178 at n=1e5)
    python scripts/bench_oracles.py --json --full     # also n=1e6 at d=42178 (about 10 s more)

Measures (wall clock, one process):
- GRR perturb + estimate reports/s at n = 1e7 (target >= 1e7/s);
- OLH aggregation users/s (eps = 4, g = round(e^4) + 1) at d = 1024 and d = 42178 with the
  inverted-voting aggregation (``protocols.oracles.olh.olh_support``), next to (a) the way common LDP
  libraries aggregate: a per-user Python loop evaluating the hash of every item, on a
  subsample, and (b) a numpy-vectorized pairwise evaluation, with the ratios;
- accountant: seconds per bound at n = 1e6 (forward, delta = 1e-6, eps_local = 1 and 4).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from parties.runtime.cost_ledger import bench_peak_rss  # noqa: E402
from protocols.accountant import amplify  # noqa: E402
from protocols.oracles.grr import grr_estimate, grr_perturb  # noqa: E402
from protocols.oracles.olh import (  # noqa: E402
    olh_default_g,
    olh_family,
    olh_perturb,
    olh_support,
    olh_support_pairwise,
)
from protocols.rng import experiment_rng  # noqa: E402


def best_of(fn, repeat: int = 3) -> float:
    """Minimum wall time of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def support_loop(reports: np.ndarray, d: int, g: int, P: int) -> np.ndarray:
    """Library-style aggregation: for every user, hash every item in Python."""
    support = [0] * d
    for a, b, y in reports.tolist():
        for v in range(d):
            if (a * v + b) % P % g == y:
                support[v] += 1
    return np.array(support)


def bench_grr(n: int, k: int, eps: float) -> dict[str, Any]:
    rng = experiment_rng(0, "bench", "grr")
    vals = rng.integers(0, k, n)

    def run() -> None:
        grr_estimate(grr_perturb(vals, k, eps, rng), k, eps)

    t = best_of(run)
    return {"n": n, "k": k, "eps": eps, "seconds": t, "reports_per_s": n / t, "target": 1e7}


def bench_olh(d: int, n: int, n_loop: int, n_pairwise: int, eps: float = 4.0) -> dict[str, Any]:
    rng = experiment_rng(0, "bench", "olh", d)
    fam = olh_family(d, olh_default_g(eps))
    reports = olh_perturb(rng.integers(0, d, n), fam, eps, rng)
    t_ours = best_of(lambda: olh_support(reports, fam), repeat=1 if n * d > 1e10 else 3)
    sub = reports[:n_loop]
    t0 = time.perf_counter()
    loop = support_loop(sub, d, fam.g, fam.P)
    t_loop = time.perf_counter() - t0
    assert np.array_equal(loop, olh_support(sub, fam)), "loop and voting disagree"
    subp = reports[:n_pairwise]
    t_pair = best_of(lambda: olh_support_pairwise(subp, fam), repeat=1)
    ours = n / t_ours
    return {
        "d": d,
        "g": fam.g,
        "P": fam.P,
        "eps": eps,
        "n": n,
        "seconds": t_ours,
        "users_per_s": ours,
        "loop_users": n_loop,
        "loop_users_per_s": n_loop / t_loop,
        "ratio_vs_loop": ours / (n_loop / t_loop),
        "pairwise_numpy_users": n_pairwise,
        "pairwise_numpy_users_per_s": n_pairwise / t_pair,
        "ratio_vs_pairwise_numpy": ours / (n_pairwise / t_pair),
    }


def bench_accountant() -> list[dict[str, Any]]:
    out = []
    for eps in (1.0, 4.0):
        for bound, kw in (("vr", {}), ("vr", {"mechanism": "grr", "k": 10}), ("fmt21", {})):
            t = time.perf_counter()
            r = amplify(eps, 10**6, 1e-6, bound=bound, **kw)
            out.append(
                {
                    "bound": bound,
                    **kw,
                    "eps_local": eps,
                    "n": 10**6,
                    "eps_central": r.eps_central,
                    "lower": r.lower,
                    "seconds": time.perf_counter() - t,
                }
            )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print JSON (default: also JSON)")
    ap.add_argument("--full", action="store_true", help="n = 1e6 at d = 42178 as well")
    ap.add_argument("--grr-n", type=int, default=10**7)
    a = ap.parse_args(argv)
    res: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "numpy": np.__version__},
        "grr": bench_grr(a.grr_n, 64, 2.0),
        "olh": [
            bench_olh(1024, 10**6, n_loop=1000, n_pairwise=100_000),
            bench_olh(42178, 10**5, n_loop=50, n_pairwise=5_000),
        ],
    }
    if a.full:
        res["olh"].append(bench_olh(42178, 10**6, n_loop=50, n_pairwise=5_000))
    res["accountant"] = bench_accountant()
    res["targets"] = {
        "grr_reports_per_s": 1e7,
        "olh_users_per_s_d1024": 1e6,
        "olh_ratio_vs_loop": 500,
        "olh_n1e6_d42178_seconds": 60,
        "accountant_seconds_n1e6": 0.5,
    }
    res["peak_rss_per_party"] = bench_peak_rss()
    print(json.dumps(res, indent=2, default=lambda x: None if x is None else float(x)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
