"""HHD against its authors' reference run (n = 10^7, B = 2^48, phi = 0.005, eps = 1,
delta = 1/n^2): recall, precision and messages per user on a Zipf stand-in (10^6 items,
exponent 0.9, scattered over 2^48) through protocols.base.simulate. Prints one JSON object.

    python scripts/hhd_reference.py [--users 10000000] [--domain-bits 48] [--phi 0.005]
"""

from __future__ import annotations

import argparse
import json
import time

from protocols.base import simulate
from protocols.heavy_hitters.workload import hhd_workload
from protocols.rng import experiment_rng

AUTHORS = {"recall": 100.0, "precision": 21.875, "dummy_messages_per_user": 0.401024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--users", type=int, default=10_000_000)
    ap.add_argument("--domain-bits", type=int, default=48)
    ap.add_argument("--phi", type=float, default=0.005)
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    params = {"users": a.users, "domain": 1 << a.domain_bits, "phi": a.phi, "items": a.items}
    w = hhd_workload({**params, "data_seed": a.seed})
    t0, c0 = time.time(), time.process_time()
    est = simulate(w.protocol, w.records, experiment_rng(a.seed, "hhd_reference"))
    rep = w.report(est)
    out = {
        **params,
        **{k: rep[k] for k in ("recall", "precision", "true_heavy_hitters", "reported")},
        "messages_per_user": rep["messages_per_user"],
        "dummy_messages_per_user": rep["dummy_messages_per_user"],
        "survivors_per_level": est["survivors_per_level"],
        "privacy": rep["privacy"],
        "authors": AUTHORS,
        "wall_s": round(time.time() - t0, 1),
        "cpu_s": round(time.process_time() - c0, 1),
        "machine": "2 cores shared by 8 sessions",
    }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
