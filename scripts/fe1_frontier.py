"""The seed-004 frontier at the histogram defaults (d = 64, eps = 0.9, delta = 1e-6): FE1 (c = 1
and 3, the authors' construction) beside Hist_KR, SLH and our earlier Hist_LWY, each through
protocols.base.simulate at equal (eps, delta) on its own workload's data (the estimators are
unbiased; their error hardly depends on the data). Prints one JSON object per method.

    python scripts/fe1_frontier.py [--users 100000] [--domain 64] [--reps 1]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from protocols.base import simulate
from protocols.rng import experiment_rng
from protocols.workloads import get_workload

METHODS = {
    "hist_kr": {},
    "slh": {},
    "hist_lwy": {},
    "fe1 (c=1)": {"hash_exponent": 1.0},
    "fe1 (c=3)": {"hash_exponent": 3.0},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--domain", type=int, default=64)
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    for label, extra in METHODS.items():
        name = label.split(" ")[0]
        params = {"users": a.users, "domain": a.domain, "epsilon": 0.9, "delta": 1e-6, **extra}
        w = get_workload(name, params)
        truth = np.asarray(w.truth()["counts"], dtype=np.float64)
        t0 = time.process_time()
        errs = []
        for r in range(a.reps):
            est = simulate(w.protocol, w.records, experiment_rng(r, "frontier", name))
            errs.append(np.asarray(est["counts"], dtype=np.float64) - truth)
        err = np.concatenate(errs)
        print(
            json.dumps(
                {
                    "method": label,
                    "n": a.users,
                    "d": a.domain,
                    "rmse": float(np.sqrt(np.mean(err**2))),
                    "messages_per_user": w.protocol.messages_per_user(),
                    "cpu_s": round(time.process_time() - t0, 2),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
