"""Benchmark: HP-SDP analyzer at the paper's scales (inverted voting vs pairwise hashing); JSON.

    python scripts/bench_hpsdp_aggregation.py [--cases zipf:0.1:1e-9,zipf-kosarak:0.5:1e-6]

For each case (dataset:eps_c:delta, paper accounting, so g is the spec's optimal one): the full
analyzer (support counts by ``protocols.oracles.olh.olh_support`` inverted voting, unbiased estimate, POP)
on all users, and the pairwise reference ``olh_support_pairwise`` (O(n d) hash evaluations) timed
on a subsample and extrapolated linearly to n.
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
from protocols.base import trusted_shuffle
from protocols.hp_sdp.data import load
from protocols.hp_sdp.protocol import HPSDPProtocol, calibrate, srr_reports
from protocols.oracles.olh import olh_support_pairwise

DEFAULT = "zipf:0.1:1e-9,zipf:0.5:1e-6,zipf-kosarak:0.1:1e-9,zipf-kosarak:0.5:1e-6"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=DEFAULT)
    ap.add_argument("--pairwise-users", type=int, default=20_000)
    args = ap.parse_args()
    rows = []
    for case in args.cases.split(","):
        name, eps, delta = case.split(":")
        ds = load(name)
        params = calibrate(float(eps), float(delta), ds.n, d=ds.d)
        proto = HPSDPProtocol(ds.d, params)
        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        batches = trusted_shuffle(proto.encode(ds.values, rng), rng)
        t1 = time.perf_counter()
        proto.analyze(batches)
        t2 = time.perf_counter()
        sub, _ = srr_reports(batches["reports"][: args.pairwise_users], proto.family)
        t3 = time.perf_counter()
        olh_support_pairwise(sub, proto.family)
        t4 = time.perf_counter()
        rows.append(
            {
                "dataset": name,
                "n": ds.n,
                "d": ds.d,
                "eps_c": float(eps),
                "delta": float(delta),
                "g": params.g,
                "votes_per_report": -(-proto.family.P // params.g),
                "encode_shuffle_s": round(t1 - t0, 3),
                "analyze_s": round(t2 - t1, 3),
                "pairwise_extrapolated_s": round((t4 - t3) * ds.n / sub.shape[0], 1),
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(json.dumps({"benchmark": "hp-sdp aggregation", "cases": rows,
                      "peak_rss_per_party": bench_peak_rss()}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
