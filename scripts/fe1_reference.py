"""FE1 against its authors' reference run (n = 10^5, B = 2^24, eps = 1, delta = 1e-10; c = 1, 3):
public parameters, then the error quantiles on a Zipf stand-in through protocols.base.simulate
(the encoder and analyzer of the networked run). Prints one JSON object per setting.

    python scripts/fe1_reference.py [--c 1 3] [--domain-bits 24] [--users 100000] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time

from protocols.almost_single.fe1_workload import fe1_workload
from protocols.base import simulate
from protocols.rng import experiment_rng

AUTHORS = {  # result/fe,aol01,... of hkustDB/SDPFE
    1.0: {
        "b": 8685,
        "mu": 97.9614,
        "messages": 9.508,
        "p50": 7.47,
        "p90": 17.47,
        "p99": 26.5,
        "linf": 57.5,
    },
    3.0: {
        "b": 65,
        "mu": 97.9614,
        "messages": 1.0637,
        "p50": 27.8,
        "p90": 67.45,
        "p99": 105,
        "linf": 222,
    },
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--c", type=float, nargs="+", default=[1.0, 3.0])
    ap.add_argument("--domain-bits", type=int, default=24)
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    for c in a.c:
        w = fe1_workload(
            {
                "users": a.users,
                "domain": 1 << a.domain_bits,
                "delta": 1e-10,
                "hash_exponent": c,
                "data_seed": a.seed,
            }
        )
        t0, c0 = time.time(), time.process_time()
        est = simulate(w.protocol, w.records, experiment_rng(a.seed, "fe1_reference", int(c)))
        rep = w.report(est)
        p = w.protocol.p
        print(
            json.dumps(
                {
                    "c": c,
                    "n": a.users,
                    "B": 1 << a.domain_bits,
                    "b": p.b,
                    "q": p.q,
                    "mu": p.mu,
                    "p_col": p.pcol,
                    "messages_per_user": w.protocol.messages_per_user(),
                    **{k: rep[k] for k in ("p50", "p90", "p99", "linf", "expected_rmse")},
                    "privacy": {
                        k: rep["privacy"][k]
                        for k in ("eps_central", "mu_exact", "mu_authors", "smaller_mu")
                    },
                    "authors": AUTHORS.get(c),
                    "wall_s": round(time.time() - t0, 1),
                    "cpu_s": round(time.process_time() - c0, 1),
                    "machine": "2 cores shared by 8 sessions",
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
