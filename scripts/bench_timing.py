"""dudect-style timing test of the prover's secret-scalar operations (issue 37 item 3).

For each operation, ``--timings`` calls (default 10^6) are timed one by one with
``time.perf_counter_ns``; each call's input class is drawn at random (interleaved): class 0 a
FIXED secret scalar, class 1 a fresh RANDOM secret scalar (from a pre-drawn pool of 2^16, so
drawing costs nothing inside the timed region). Public inputs (challenges, points) are the same
random values in both classes. Welch's t between the two classes' timings is computed on all
timings and, as dudect does, on the timings below the pooled 50th, 75th, 90th, 95th and 99th
percentiles (load spikes are one-sided); ``t_max`` is the largest |t|. |t| >= 4.5 means the
time depends on the secret (Reparaz, Balasch, Verbauwhede, DATE 2017).

The fixed scalar has full width (a uniformly random secret is that wide except with
probability about 2^-30 per CPython digit): CPython's int-to-bytes conversion is linear in
the integer's digit count, so a SHORT secret is converted faster; ``--small-fixed`` measures
that residual with the fixed scalar 1 (docs/security.md, "Timing of the group code").

Usage: ``python scripts/bench_timing.py [--timings N] [--ops a,b] [--small-fixed]`` prints
JSON (``docs/benchmarks/timing.json``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpc import ct_scalar  # noqa: E402
from mpc import ristretto as r  # noqa: E402
from mpc.ristretto import L  # noqa: E402
from parties.runtime.cost_ledger import bench_peak_rss  # noqa: E402

THRESHOLD = 4.5
CROPS = (None, 50, 75, 90, 95, 99)
POOL = 1 << 16


def welch_t(a: np.ndarray, b: np.ndarray) -> float:
    """Welch's t statistic of two samples (0 if either is too small)."""
    if a.size < 2 or b.size < 2:
        return 0.0
    va, vb = a.var(ddof=1), b.var(ddof=1)
    den = math.sqrt(va / a.size + vb / b.size)
    return float((a.mean() - b.mean()) / den) if den > 0 else 0.0


def measure(op: Callable[[int, int], object], fixed: list[int], pool: list[int], n: int,
            public: list[int], seed: int) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Time ``op(secret, public)`` ``n`` times, classes interleaved at random; returns
    (timings in ns, classes). ``fixed`` holds distinct objects of one value, picked at the
    same random positions as ``pool``: both classes touch memory alike, only the value differs."""
    rng = random.Random(seed)
    classes = np.array([rng.getrandbits(1) for _ in range(n)], dtype=np.int8)
    idx = [rng.randrange(POOL) for _ in range(n)]
    times = np.empty(n, dtype=np.int64)
    clock = time.perf_counter_ns
    for i in range(n):
        s = fixed[idx[i]] if classes[i] == 0 else pool[idx[i]]
        p = public[idx[i]]
        t0 = clock()
        op(s, p)
        times[i] = clock() - t0
    return times, classes


def analyse(times: np.ndarray, classes: np.ndarray) -> dict:
    out: dict = {"timings": int(times.size), "t": {}}
    for crop in CROPS:
        keep = times <= np.percentile(times, crop) if crop else np.ones(times.size, bool)
        t = welch_t(times[keep & (classes == 0)], times[keep & (classes == 1)])
        out["t"]["all" if crop is None else f"p{crop}"] = round(t, 3)
    out["t_max"] = max(abs(v) for v in out["t"].values())
    out["median_ns_fixed"] = float(np.median(times[classes == 0]))
    out["median_ns_random"] = float(np.median(times[classes == 1]))
    out["constant_time"] = out["t_max"] < THRESHOLD
    return out


def operations() -> dict[str, tuple[Callable[[int, int], object], int, str]]:
    """name -> (op(secret, public), secret bit width, what it is)."""
    point = r.smul_base(r.random_scalar())
    ops: dict[str, tuple[Callable[[int, int], object], int, str]] = {
        "ct_scalar_bytes": (
            lambda s, p: r.ct_scalar_bytes(s),
            505,
            "new: a secret integer such as w + c*r (< 2^505) reduced mod L by libsodium "
            "(every secret scalar handed to C goes through it)",
        ),
        "ct_muladd": (
            lambda s, p: r.ct_muladd(p, s, s),
            252,
            "new: the DLEQ response (w + e x) mod L, secret x and w, public e",
        ),
        "random_scalar_reduce": (
            lambda s, p: r.ct_reduce(s.to_bytes(64, "little")),
            512,
            "new: 64 random bytes reduced mod L (random_scalar, seeded_scalars)",
        ),
        "smul_base": (lambda s, p: r.smul_base(s), 252, "secret * G, libsodium"),
        "smul_fixed": (
            lambda s, p: r.smul_fixed_many([([s], point)]),
            252,
            "secret * fixed base: native ct_mul if built, else libsodium",
        ),
        "msm_secret": (
            lambda s, p: r.msm_secret([s, p], [point, r.G]),
            252,
            "prover's t3/t4: native ct_msm (2 terms) if built, else libsodium",
        ),
        "python_mod_L_old": (
            lambda s, p: (s % L).to_bytes(32, "little"),
            505,
            "old path (before issue 37): Python's % L on a secret integer, for comparison",
        ),
        "shuffle_chain_step": (
            lambda s, p: ct_scalar.ct_chain([s], [s], [s], [p], s, p),
            252,
            "new: one step of the proof of shuffle's commitment chain (ct_chain: R, x2, y2 "
            "secret; shuffle_proof._phase_b)",
        ),
        "shuffle_dot_step": (
            lambda s, p: ct_scalar.ct_dot([p, p], [s, s]),
            252,
            "new: rtil/rstar's sum of public u' times secret rho (ct_dot, two terms)",
        ),
        "shuffle_chain_step_python_old": (
            lambda s, p: (s + p * s) % L,
            252,
            "old (before issue 37): the chain step r_i = rhat_i + u'_i r_{i-1} in Python's "
            "big integers (% L)",
        ),
    }
    return ops


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timings", type=int, default=1_000_000)
    ap.add_argument("--ops", default="", help="comma-separated subset (default: all)")
    ap.add_argument("--small-fixed", action="store_true", help="fixed secret = 1 (short)")
    args = ap.parse_args()
    ops = operations()
    chosen = [o for o in args.ops.split(",") if o] or list(ops)
    unknown = sorted(set(chosen) - set(ops))
    if unknown:
        raise SystemExit(f"bench_timing: unknown operations {unknown}; known: {sorted(ops)}")
    results = {}
    for k, name in enumerate(chosen):
        op, bits, what = ops[name]
        rng = random.Random(1000 + k)
        top = 1 << (bits - 1)  # full width: the top bit set
        pool = [top | rng.getrandbits(bits - 1) for _ in range(POOL)]
        public = [rng.getrandbits(252) % L or 1 for _ in range(POOL)]
        value = 1 if args.small_fixed else top | random.Random(7).getrandbits(bits - 1)
        raw = value.to_bytes(64, "little")
        fixed = [int.from_bytes(raw, "little") for _ in range(POOL)]  # distinct objects
        t0 = time.perf_counter()
        times, classes = measure(op, fixed, pool, args.timings, public, 2000 + k)
        res = analyse(times, classes)
        res.update(what=what, wall_s=round(time.perf_counter() - t0, 1))
        results[name] = res
        print(f"{name}: t_max {res['t_max']:.2f}", file=sys.stderr, flush=True)
    out = {
        "benchmark": "dudect-style fixed-vs-random timing of secret-scalar operations",
        "threshold_abs_t": THRESHOLD,
        "fixed_class": "scalar 1 (short)" if args.small_fixed else "a fixed full-width scalar",
        "backend": r.backend_line(),
        "load_average": os.getloadavg(),
        "results": results,
    }
    out["peak_rss_per_party"] = bench_peak_rss()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
