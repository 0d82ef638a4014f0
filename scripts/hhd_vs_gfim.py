"""HHD beside GFIM's top-k on the same single-item data at equal (eps, delta): the HHD
workload's Zipf stand-in; GFIM (seed 003, two rounds, shuffle model, the VR bound) runs on the
item universe of the stand-in (its dictionary of items, given to GFIM as its public domain: HHD
needs none), with k = the number of true heavy hitters. Recall and precision against the items
of frequency >= phi n, messages per user. Prints one JSON object per method.

    python scripts/hhd_vs_gfim.py [--users 100000] [--domain-bits 32] [--phi 0.01]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from protocols.base import simulate
from protocols.gfim.setvalued_data import SetData
from protocols.gfim.workload import build_protocol
from protocols.heavy_hitters.workload import hhd_workload, recall_precision
from protocols.rng import experiment_rng


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--domain-bits", type=int, default=32)
    ap.add_argument("--phi", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    n, delta = a.users, 1.0 / a.users**2
    w = hhd_workload(
        {
            "users": n,
            "domain": 1 << a.domain_bits,
            "phi": a.phi,
            "delta": delta,
            "data_seed": a.seed,
        }
    )
    truth = np.asarray(w.truth()["heavy_hitters"], dtype=np.int64)
    t0 = time.process_time()
    est = simulate(w.protocol, w.records, experiment_rng(a.seed, "hhd_vs_gfim", "hhd"))
    rep = w.report(est)
    print(
        json.dumps(
            {
                "method": "hhd",
                "n": n,
                **{
                    k: rep[k]
                    for k in (
                        "recall",
                        "precision",
                        "reported",
                        "true_heavy_hitters",
                        "messages_per_user",
                    )
                },
                "eps": rep["privacy"]["eps_central"],
                "delta": delta,
                "cpu_s": round(time.process_time() - t0, 1),
            }
        ),
        flush=True,
    )
    universe, ranks = np.unique(w.records.reshape(-1), return_inverse=True)
    k = max(1, int(truth.size))
    data = SetData(
        "hhd stand-in",
        ranks.reshape(-1, 1).astype(np.int32),
        int(universe.size),
        tuple(str(i) for i in universe),
        "scripts/hhd_vs_gfim.py",
        public_ell=1,
    )
    g = build_protocol({"k": k, "epsilon": 1.0, "delta": delta, "ell": 1}, data, "gfim")
    t0 = time.process_time()
    out = simulate(g, data.records, experiment_rng(a.seed, "hhd_vs_gfim", "gfim"))
    found = universe[np.asarray(out["top_k"], dtype=np.int64)[:k]].tolist()
    print(
        json.dumps(
            {
                "method": "gfim top-k",
                "n": n,
                "k": k,
                **recall_precision(found, truth),
                "messages_per_user": 1.0,
                "eps": g.privacy().get("eps_central"),
                "delta": delta,
                "cpu_s": round(time.process_time() - t0, 1),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
