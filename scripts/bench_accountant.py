"""Seconds per forward evaluation of each accountant bound at n = 1e4 ... 1e7 (prints JSON).

python scripts/bench_accountant.py --json [--ns 10000,100000] [--eps-local 4] [--delta 1e-6]

``decomposition_per_eval``: CPU seconds (time.process_time, robust to a loaded machine) of one
fine evaluation (32 buckets) of the decomposition bound's delta at the central epsilon it
certifies, for the mechanisms with a neutral state (mean and fastest of ``--reps``), and the
evaluations one ``amplify`` makes; ``loadavg`` is the machine's 1/5/15-minute load average at
the start and the end (CPU time still grows somewhat with load: shared caches).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import protocols.accountant.decomposition as _dec  # noqa: E402
from parties.runtime.cost_ledger import bench_peak_rss  # noqa: E402
from protocols.accountant import _amplify, amplify  # noqa: E402

PER_EVAL = [("hadamard", {}), ("oue", {}), ("sue", {}), ("grr", {"k": 10})]


def decomposition_per_eval(n: int, eps_local: float, delta: float, reps: int = 5) -> list[dict]:
    """CPU seconds per fine evaluation of the decomposition bound (module docstring)."""
    rows = []
    for mech, kw in PER_EVAL:
        calls = [0]
        orig = _dec.split_delta

        def counted(*a: object, _orig=orig, _calls=calls, **k: object) -> tuple[float, float]:
            _calls[0] += 1
            return _orig(*a, **k)

        _dec.split_delta = counted
        try:
            t0 = time.process_time()
            eps = _dec.decomposition_epsilon(eps_local, n, delta, mech, **kw)
            t_eps = time.process_time() - t0
        finally:
            _dec.split_delta = orig
        x = eps if eps is not None else eps_local * 0.5
        times = []
        for _ in range(reps):
            t0 = time.process_time()
            _dec.decomposition_delta(x, eps_local, n, mech, tail=delta * 1e-7, points=32, **kw)
            times.append(time.process_time() - t0)
        per = sum(times) / reps
        rows.append(
            {
                "n": n,
                "mechanism": mech,
                **kw,
                "eps_central": eps,
                "cpu_seconds_per_eval": round(per, 4),
                "cpu_seconds_per_eval_min": round(min(times), 4),
                "evals_per_epsilon": calls[0],
                "cpu_seconds_per_epsilon": round(t_eps, 3),
            }
        )
    return rows


CASES = [
    ("balle", "grr", {"k": 2}),
    ("fmt21", "generic", {}),
    ("vr", "generic", {}),
    ("decomposition", "generic", {}),
    ("exact", "grr", {"k": 2}),
    ("decomposition", "grr", {"k": 10}),
    ("decomposition", "hadamard", {}),
    ("decomposition", "oue", {}),
    ("decomposition", "sue", {}),
]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", default="10000,100000,1000000,10000000")
    ap.add_argument("--eps-local", type=float, default=4.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--per-eval-ns", default="10000,100000")
    ap.add_argument("--reps", type=int, default=5, help="evaluations timed per mechanism")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    load = [list(os.getloadavg())]
    per_eval = []
    for n in (int(x) for x in a.per_eval_ns.split(",") if x):
        per_eval += decomposition_per_eval(n, a.eps_local, a.delta, a.reps)
        if not a.json:
            print(per_eval[-len(PER_EVAL) :], flush=True)
    rows = []
    for n in (int(x) for x in a.ns.split(",") if x):
        for bound, mech, kw in CASES:
            if bound == "decomposition" and mech != "generic" and n > 10**6:
                continue  # with a neutral state: minutes at 1e7 (see docs/accountant.md)
            _amplify.cache_clear()
            t0, c0 = time.perf_counter(), time.process_time()
            r = amplify(a.eps_local, n, a.delta, bound=bound, mechanism=mech, **kw)
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            rows.append(
                {
                    "n": n,
                    "bound": bound,
                    "mechanism": mech,
                    **kw,
                    "eps_central": r.eps_central,
                    "kind": r.kind,
                    "lower": r.lower,
                    "seconds": round(dt, 3),
                    "cpu_seconds": round(cpu, 3),
                }
            )
            if not a.json:
                print(rows[-1], flush=True)
    if a.json:
        out = {"eps_local": a.eps_local, "delta": a.delta, "results": rows}
        out["decomposition_per_eval"] = per_eval
        out["loadavg"] = load + [list(os.getloadavg())]
        out["peak_rss_per_party"] = bench_peak_rss()
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
