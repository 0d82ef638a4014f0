"""Chunked, memory-bounded simulation at 10^7-10^8 users on a pool: wall and peak memory.

    python scripts/bench_simulate_chunked.py --users 10000000 100000000 --json
    python scripts/bench_simulate_chunked.py --users 100000000 --pool dask://127.0.0.1:8786

GRR (``sdp run grr``'s Zipf data, domain 10, central epsilon 1) through
:func:`protocols.simulation.chunked.simulate_chunked`: each chunk of ``--chunk`` users draws its
records, encodes them and returns its histogram, on the pool's workers (``local``: a process
pool of ``--workers``; ``dask://HOST:PORT``: a Dask scheduler's workers). Reported per n: the
calibration's seconds (the accountant, in this process), the simulation's wall (chunks and the
gate), the estimate's largest error against the Zipf law, and the peak resident memory
(``VmHWM``) of this process and of every worker: with the chunk fixed it stays the same from
10^7 to 10^8 users, as the records of all users are never held at once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpc.pools import peak_rss  # noqa: E402
from parties.runtime.pools import open_pool  # noqa: E402
from protocols.grr.workload import GRRProtocol, calibrate  # noqa: E402
from protocols.privacy.statements import default_delta  # noqa: E402
from protocols.simulation.chunked import CHUNK_USERS, ZipfRecords, simulate_chunked  # noqa: E402


def measure(n: int, k: int, eps: float, chunk: int, pool, seed: int) -> dict:  # noqa: ANN001
    t0 = time.perf_counter()
    eps_l, privacy = calibrate(eps, None, n, default_delta(n), k, "vr")
    t1 = time.perf_counter()
    proto = GRRProtocol(k, eps_l, n, privacy)
    est = simulate_chunked(proto, n, ZipfRecords(k), seed, chunk, pool.executor)
    t2 = time.perf_counter()
    p = 1.0 / np.arange(1, k + 1) ** 1.1
    err = float(np.abs(np.asarray(est["frequencies"]) - p / p.sum()).max())
    workers = pool.workers_peak_rss()
    return {
        "users": n,
        "chunk_users": chunk,
        "chunks": est["chunks"],
        "eps_local": eps_l,
        "calibrate_s": round(t1 - t0, 2),
        "simulate_wall_s": round(t2 - t1, 2),
        "max_abs_error": err,
        "peak_rss_bytes": {"driver": peak_rss(), **{f"worker {w}": b for w, b in workers.items()}},
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, nargs="+", default=[10**7, 10**8])
    ap.add_argument("--chunk", type=int, default=CHUNK_USERS, help="users per chunk")
    ap.add_argument("--pool", default="local", help="'local' or 'dask://HOST:PORT'")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local pool size")
    ap.add_argument("--domain", type=int, default=10)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print JSON only")
    a = ap.parse_args()
    with open_pool(a.pool, a.workers) as pool:
        rows = []
        for n in a.users:
            rows.append(measure(n, a.domain, a.epsilon, a.chunk, pool, a.seed))
            if not a.json:
                print(rows[-1], file=sys.stderr, flush=True)
        out = {
            "benchmark": "chunked simulation (grr, trusted shuffle implicit)",
            "pool": a.pool if pool.kind == "dask" else f"local process pool of {pool.workers}",
            "pool_workers": pool.workers,
            "cpu_count": os.cpu_count(),
            "runs": rows,
        }
    print(json.dumps(out, indent=None if a.json else 1))


if __name__ == "__main__":
    main()
