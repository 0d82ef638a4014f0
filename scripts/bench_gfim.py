"""Benchmark: GFIM vs LDPMiner vs one-phase, encode/shuffle/analyze wall time; prints JSON.

    python scripts/bench_gfim.py [--datasets laplace-500k,census-income] [--repeat 3]

Every run is ``protocols.base.simulate`` (all rounds, in-process trusted shuffle) over all users
of the dataset; the best of ``--repeat`` runs is reported with the per-user cost.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from parties.runtime.cost_ledger import bench_peak_rss  # noqa: E402
from protocols.base import simulate
from protocols.gfim.ldpminer import LDPMiner, OnePhase
from protocols.gfim.protocol import GFIM
from protocols.gfim.setvalued_data import load_set_dataset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="laplace-500k,census-income")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args()
    out = []
    for name in args.datasets.split(","):
        t0 = time.perf_counter()
        data = load_set_dataset(name)
        load_s = time.perf_counter() - t0
        ell = data.ell(0.9)
        row = {
            "dataset": name,
            "users": data.n,
            "d": data.d,
            "ell": ell,
            "items_per_user": float(data.sizes.mean()),
            "load_s": round(load_s, 3),
        }
        for label, proto in (
            ("gfim", GFIM(data.d, args.k, ell, args.epsilon)),
            ("ldpminer", LDPMiner(data.d, args.k, ell, args.epsilon)),
            ("one-phase", OnePhase(data.d, args.k, ell, args.epsilon)),
        ):
            best = float("inf")
            for r in range(args.repeat):
                t0 = time.perf_counter()
                simulate(proto, data.records, np.random.default_rng(r))
                best = min(best, time.perf_counter() - t0)
            row[f"{label}_s"] = round(best, 3)
            row[f"{label}_us_per_user"] = round(1e6 * best / data.n, 3)
        out.append(row)
    print(json.dumps({"rows": out, "peak_rss_per_party": bench_peak_rss()}, indent=1))


if __name__ == "__main__":
    main()
