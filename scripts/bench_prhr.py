"""PRHR's encoding cost as n and d grow, extrapolated to the survey's Fig. 7(b) (claim C10).

python scripts/bench_prhr.py --json [--quick] [--out docs/benchmarks/prhr.json]

Claim C10 (seed 004): "PRHR is impractical: encoding 30% of the users took 5 h and 22 GB"
(2 x 6-core 1.7 GHz Xeon, 94 GB; Fig. 7(b): n = 10^6, d = 64, eps_c = 0.9, delta = 1e-6).

Every point runs in a fresh process (its peak RSS is its own) and reports CPU seconds
(time.process_time, robust to a loaded machine), the tracemalloc peak and the peak RSS of:
- ``encode``: our vectorised encoder materialising all n (1 + rho) tuples (tau columns each, one
  byte per column for 2^L <= 256), then the analyzer on them;
- ``stream``: the encoder and analyzer over blocks of users (``PRHR.simulate_blocks``), whose
  memory does not grow with n;
- ``loop_message`` / ``loop_column``: interpreted encoders, one Python iteration per tuple (its
  tau columns drawn at once) or per column: direct transcriptions of the randomizer, run on a
  few users only and extrapolated.

``fig7b_30pct`` encodes the actual 30% of Fig. 7(b)'s users (3e5 users, tau = 20 from n = 10^6,
rho = 615) with the streamed encoder, and extrapolates the materialised tuples (1 byte or 8-byte
integers per column) and the per-message loop from the per-coordinate costs measured.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from parties.runtime.cost_ledger import bench_peak_rss  # noqa: E402
from protocols.catalogue.data import normal_categorical  # noqa: E402
from protocols.multi_freq.hadamard import hadamard_order  # noqa: E402
from protocols.multi_freq.prhr import PRHR  # noqa: E402

FIG7B = {"n": 1_000_000, "d": 64, "eps": 0.9, "delta": 1e-6, "fraction": 0.3}
SURVEY = {"seconds": 5 * 3600, "bytes": 22e9, "machine": "2 x 6-core 1.7 GHz Xeon, 94 GB"}


def _rss() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def loop_encode(
    values: np.ndarray, d: int, tau: int, rho: int, order: int, rng: Any, per: str
) -> np.ndarray:
    """The randomizer one Python iteration per message (``per="message"``: a message's tau
    columns drawn at once) or per column (``per="column"``): the interpreted baselines."""
    size = 1 << order
    table = [[c for c in range(size) if bin((v + 1) & c).count("1") % 2 == 0] for v in range(d)]
    out = np.empty((len(values) * (1 + rho), tau), dtype=np.int64)
    k = 0
    for v in values.tolist():
        row = np.asarray(table[v])
        out[k] = row[rng.integers(0, len(row), tau)]
        k += 1
        for _ in range(rho):
            if per == "message":
                out[k] = rng.integers(0, size, tau)
            else:
                for j in range(tau):
                    out[k, j] = int(rng.integers(0, size))
            k += 1
    return out


def point(kind: str, n: int, d: int, eps: float, delta: float, n_total: int) -> dict[str, Any]:
    """One measurement (run in its own process by :func:`run_point`)."""
    p = PRHR(d, n_total, eps, delta)
    values = normal_categorical(n, d, 0)
    rng = np.random.default_rng(7)
    row: dict[str, Any] = {"kind": kind, "n": n, "d": d, "n_total": n_total, "rho": p.rho}
    row.update(tau=p.tau, order=p.order, tuples=n * (1 + p.rho))
    row["coordinates"] = row["tuples"] * p.tau
    tracemalloc.start()
    if kind == "encode":
        t0 = time.process_time()
        t = p.encode_compact(values, rng)
        row["encode_cpu_s"] = time.process_time() - t0
        row["materialised_bytes"] = int(t.nbytes)
        t0 = time.process_time()
        counts, m, _ = p.codeword_counts(t)
        p.estimate(counts, m)
        row["analyze_cpu_s"] = time.process_time() - t0
    elif kind == "stream":
        t0 = time.process_time()
        _, analyze_s, _ = p.simulate_blocks(values, rng)
        total = time.process_time() - t0
        row["encode_cpu_s"] = total - analyze_s
        row["analyze_cpu_s"] = analyze_s
    else:
        t0 = time.process_time()
        loop_encode(values, d, p.tau, p.rho, p.order, rng, kind.split("_")[1])
        row["encode_cpu_s"] = time.process_time() - t0
    row["tracemalloc_peak_bytes"] = int(tracemalloc.get_traced_memory()[1])
    tracemalloc.stop()
    row["peak_rss_bytes"] = _rss()
    row["encode_ns_per_coordinate"] = 1e9 * row["encode_cpu_s"] / row["coordinates"]
    return row


def run_point(kind: str, n: int, d: int, eps: float, delta: float, n_total: int | None = None):
    """:func:`point` in a fresh Python process (its own peak RSS)."""
    args = [kind, n, d, eps, delta, n_total if n_total is not None else n]
    proc = subprocess.run(
        [sys.executable, __file__, "--point", json.dumps(args)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def extrapolate(rows: list[dict[str, Any]], target: dict[str, Any]) -> dict[str, Any]:
    """Fig. 7(b)'s 30%: materialised bytes and per-message-loop seconds from the measured costs."""
    n = int(FIG7B["n"] * FIG7B["fraction"])
    p = PRHR(FIG7B["d"], FIG7B["n"], FIG7B["eps"], FIG7B["delta"])
    coords = n * (1 + p.rho) * p.tau
    enc = [r for r in rows if r["kind"] == "encode"]
    ns_enc = max(r["encode_ns_per_coordinate"] for r in enc) if enc else None

    def loop_s(kind: str) -> float | None:
        ns = [r["encode_ns_per_coordinate"] for r in rows if r["kind"] == kind]
        return float(np.median(ns)) * coords / 1e9 if ns else None

    return {
        "users_encoded": n,
        "tau": p.tau,
        "rho": p.rho,
        "hadamard_order": p.order,
        "tuples": n * (1 + p.rho),
        "coordinates": coords,
        "bits_per_user": p.bits_per_user(),
        "materialised_bytes_uint8": coords,
        "materialised_bytes_int64": coords * 8,
        "vectorised_materialised_cpu_s_extrapolated": None
        if ns_enc is None
        else ns_enc * coords / 1e9,
        "loop_per_message_cpu_s_extrapolated": loop_s("loop_message"),
        "loop_per_column_cpu_s_extrapolated": loop_s("loop_column"),
        "streamed_measured": target,
        "survey": SURVEY,
    }


def verdict(x: dict[str, Any]) -> dict[str, Any]:
    """C10's parts against the measurements."""
    s = x["streamed_measured"]
    return {
        "volume_reproduced": bool(x["materialised_bytes_int64"] > 0.5 * SURVEY["bytes"]),
        "int64_tuples_over_survey_bytes": x["materialised_bytes_int64"] / SURVEY["bytes"],
        "survey_seconds_over_streamed_cpu": SURVEY["seconds"] / s["encode_cpu_s"],
        "survey_seconds_over_loop_per_message": SURVEY["seconds"]
        / x["loop_per_message_cpu_s_extrapolated"],
        "survey_seconds_over_loop_per_column": SURVEY["seconds"]
        / x["loop_per_column_cpu_s_extrapolated"],
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the JSON")
    ap.add_argument("--quick", action="store_true", help="fewer, smaller points")
    ap.add_argument("--out", help="also write the JSON here")
    ap.add_argument("--point", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.point:
        print(json.dumps(point(*json.loads(a.point))))
        return 0
    eps, delta = FIG7B["eps"], FIG7B["delta"]
    ns = [10_000, 30_000] if a.quick else [10_000, 30_000, 100_000]
    ds = [16, 64, 256] if a.quick else [16, 64, 256, 1024]
    rows = [run_point("encode", n, 64, eps, delta) for n in ns]
    rows += [run_point("encode", 10_000, d, eps, delta) for d in ds if d != 64]
    rows += [run_point("stream", n, 64, eps, delta) for n in ns]
    rows += [run_point("loop_message", m, 64, eps, delta, FIG7B["n"]) for m in (100, 200)]
    rows += [run_point("loop_column", m, 64, eps, delta, FIG7B["n"]) for m in (10, 20)]
    n30 = int(FIG7B["n"] * FIG7B["fraction"])
    target = run_point("stream", n30 if not a.quick else 30_000, 64, eps, delta, FIG7B["n"])
    if a.quick:  # scale the 30_000-user stream to the 30%
        k = n30 / 30_000
        target = target | {"encode_cpu_s": target["encode_cpu_s"] * k, "scaled_from": 30_000}
    x = extrapolate(rows, target)
    out = {
        "benchmark": "prhr",
        "claim": "C10",
        "setting": FIG7B,
        "hadamard_order_d64": hadamard_order(64),
        "points": rows,
        "fig7b_30pct": x,
        "verdict": verdict(x),
        "cpu": "time.process_time (one core)",
    }
    out["peak_rss_per_party"] = bench_peak_rss()
    text = json.dumps(out, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n")
    if a.json or not a.out:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
