"""``sdp reproduce seed002 [--quick] --out DIR``: HP-SDP and its seven comparison methods.

Writes ``DIR/report.md`` (Markdown, PNG plots beside it) and ``DIR/results.json``:

1. MSE (Eq. 6, frequencies) versus eps_c in 0.1..1.0 for delta in 1e-6..1e-9, eight methods
   (HP-SDP, HP-SM, MURS, SH, AUE, pureDUMP, mixDUMP, central Laplace) on every dataset of
   :mod:`protocols.hp_sdp.data`, under the paper's accounting and under tight accounting, with the
   exact (theoretical) MSE of each unbiased estimator next to the empirical one;
2. the paper's claims (spec 12/14) side by side with ours;
3. real protocol runs (the protocols' own encode/analyze, trusted shuffler) validating the
   aggregate samplers, HP-SDP's MSE before POP against its exact variance (Zipf, eps_c = 0.5) and
   the MSE gain of POP;
4. aggregation time at the paper's scales (n = 6e5, d = 600 and n = 1e6, d = 42,178);
5. communication per user of each method.

Grid points use each protocol's ``sample(counts, rng)``: the published estimate drawn from the
exact law of the protocol's aggregate (exact for SH/AUE/DUMP; for the OLH-based methods the
per-bin marginals are exact and the bins independent, see ``protocols.hp_sdp.protocol.sample_olh_support``);
section 3 checks these draws against real runs. Repetitions: 10 per point (``--quick``: 3 points of
eps, delta in {1e-6, 1e-9}, tight accounting at 1e-6 only, 3 repetitions).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from parties.reproduce.seed002.report import METHODS
from protocols.base import gate_shuffled, trusted_shuffle
from protocols.hp_sdp import data as hp_sdp_data
from protocols.hp_sdp.baselines import laplace_histogram, laplace_mse
from protocols.hp_sdp.protocol import (
    HPSDPProtocol,
    SRRParams,
    calibrate,
    estimate_paper,
    estimate_unbiased,
    mse,
    paper_estimator_mean,
    srr_support,
)
from protocols.hp_sdp.workload import build_protocol
from protocols.rng import experiment_rng

EPS_GRID = tuple(round(0.1 * i, 1) for i in range(1, 11))
DELTAS = (1e-6, 1e-7, 1e-8, 1e-9)


def grid_point(
    method: str,
    ds: hp_sdp_data.HistogramDataset,
    counts: np.ndarray,
    eps: float,
    delta: float,
    accounting: str,
    reps: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Mean/spread of the MSE over ``reps`` draws, exact MSE, feasibility and communication."""
    f = counts / ds.n
    if method == "laplace":
        errs = [mse(laplace_histogram(counts, eps, rng), f) for _ in range(reps)]
        return {
            "mse": float(np.mean(errs)),
            "lo": float(np.min(errs)),
            "hi": float(np.max(errs)),
            "theory": laplace_mse(ds.n, eps),
            "feasible": True,
            "messages": 1.0,
            "bits": math.ceil(math.log2(ds.d)),
        }
    try:
        proto = build_protocol(method, ds.d, ds.n, eps, delta, accounting)
    except ValueError as exc:  # e.g. Theorem 1 needs g < C
        return {"mse": None, "theory": None, "feasible": False, "why": str(exc)}
    errs = [mse(proto.sample(counts, rng), f) for _ in range(reps)]
    info = proto.privacy()
    return {
        "mse": float(np.mean(errs)),
        "lo": float(np.min(errs)),
        "hi": float(np.max(errs)),
        "theory": float(np.mean(proto.variance(f))),
        "feasible": bool(getattr(proto, "feasible", True)),
        "messages": float(proto.messages_per_user()),
        "bits": float(proto.bits_per_user()),
        "eps_l": info.get("eps_local"),
        "g": info.get("g"),
    }


def run_grid(
    datasets: dict[str, hp_sdp_data.HistogramDataset],
    eps_grid: tuple[float, ...],
    deltas: tuple[float, ...],
    tight_deltas: tuple[float, ...],
    reps: int,
    seed: int,
) -> list[dict[str, Any]]:
    """Every (dataset, accounting, delta, eps, method) point."""
    out = []
    for name, ds in datasets.items():
        counts = np.bincount(ds.values, minlength=ds.d).astype(np.int64)
        for acc, dls in (("paper", deltas), ("tight", tight_deltas)):
            for delta in dls:
                for eps in eps_grid:
                    for m in METHODS:
                        rng = experiment_rng(seed, "grid", name, acc, str(delta), str(eps), m)
                        pt = grid_point(m, ds, counts, eps, delta, acc, reps, rng)
                        out.append(
                            {
                                "dataset": name,
                                "accounting": acc,
                                "delta": delta,
                                "eps": eps,
                                "method": m,
                                **pt,
                            }
                        )
    return out


def real_runs(
    ds: hp_sdp_data.HistogramDataset, points: list[tuple[float, float, str]], reps: int, seed: int
) -> list[dict[str, Any]]:
    """HP-SDP through its own encode/shuffle/analyze: MSE before/after POP vs the exact MSE."""
    f = ds.frequencies()
    counts = np.bincount(ds.values, minlength=ds.d)
    out = []
    for eps, delta, acc in points:
        try:
            params = calibrate(eps, delta, ds.n, accounting=acc, d=ds.d)
        except ValueError as exc:
            out.append(
                {
                    "dataset": ds.name,
                    "eps": eps,
                    "delta": delta,
                    "accounting": acc,
                    "feasible": False,
                    "why": str(exc),
                }
            )
            continue
        proto = HPSDPProtocol(ds.d, params)
        rng = experiment_rng(seed, "real", ds.name, acc, str(delta), str(eps))
        before, after, drawn, secs = [], [], [], []
        for _ in range(reps):
            batches = proto.encode(ds.values, rng)
            gate_shuffled(proto, batches, ds.n)  # every release passes the privacy gate
            t = time.perf_counter()
            est = proto.analyze(batches)
            secs.append(time.perf_counter() - t)
            before.append(mse(np.asarray(est["raw_frequencies"]), f))
            after.append(mse(np.asarray(est["frequencies"]), f))
            drawn.append(mse(proto.sample(counts, rng), f))
        theory = float(np.mean(proto.variance(f)))
        out.append(
            {
                "dataset": ds.name,
                "eps": eps,
                "delta": delta,
                "accounting": acc,
                "feasible": True,
                "g": params.g,
                "eps_l": params.eps_l,
                "reps": reps,
                "mse_before_pop": float(np.mean(before)),
                "mse_after_pop": float(np.mean(after)),
                "sampler_mse_after_pop": float(np.mean(drawn)),
                "theory": theory,
                "ratio": float(np.mean(before)) / theory,
                "pop_gain": float(np.mean(before)) / float(np.mean(after)),
                "analyze_seconds": float(np.max(secs)),
            }
        )
    return out


def _calibrated(
    ds: hp_sdp_data.HistogramDataset, eps: float, delta: float, seed: int, stream: str
) -> tuple[SRRParams, HPSDPProtocol, np.random.Generator]:
    """HP-SDP calibrated for ``ds`` at (eps, delta) and the experiment's ``stream`` of draws."""
    params = calibrate(eps, delta, ds.n, d=ds.d)
    return params, HPSDPProtocol(ds.d, params), experiment_rng(seed, stream, ds.name)


def paper_estimator_check(
    ds: hp_sdp_data.HistogramDataset, eps: float, delta: float, seed: int
) -> dict[str, Any]:
    """Erratum E1: MSE of the paper's printed estimator (Eq. 19) vs the unbiased one, same run."""
    params, proto, rng = _calibrated(ds, eps, delta, seed, "e1")
    support, n_ok = srr_support(proto.encode(ds.values, rng)["reports"], proto.family)
    f = ds.frequencies()
    paper = estimate_paper(support, n_ok, params.gamma, params.g)
    unbiased = estimate_unbiased(support, n_ok, params.eps_l, proto.family)
    pred = paper_estimator_mean(f, params.eps_l, params.gamma, proto.family)
    return {
        "dataset": ds.name,
        "eps": eps,
        "delta": delta,
        "g": params.g,
        "gamma": params.gamma,
        "mse_paper_estimator": mse(paper, f),
        "mse_unbiased": mse(unbiased, f),
        "predicted_bias_mse": mse(pred, f),
    }


def aggregation_timing(
    ds: hp_sdp_data.HistogramDataset, eps: float, delta: float, seed: int
) -> dict[str, Any]:
    """Wall time of one HP-SDP analyzer run (support counting + estimate + POP) at full scale."""
    params, proto, rng = _calibrated(ds, eps, delta, seed, "timing")
    t0 = time.perf_counter()
    batches = trusted_shuffle(proto.encode(ds.values, rng), rng)
    t1 = time.perf_counter()
    proto.analyze(batches)
    t2 = time.perf_counter()
    return {
        "dataset": ds.name,
        "n": ds.n,
        "d": ds.d,
        "eps": eps,
        "delta": delta,
        "g": params.g,
        "votes_per_report": -(-proto.family.P // params.g),
        "encode_shuffle_seconds": t1 - t0,
        "analyze_seconds": t2 - t1,
    }


def main(argv: list[str]) -> int:
    """CLI entry: ``sdp reproduce seed002 [--quick] --out DIR``."""
    from parties.reproduce.seed002.report import write_report

    ap = argparse.ArgumentParser(prog="sdp reproduce seed002")
    ap.add_argument("--quick", action="store_true", help="small grid (CI, under 2 minutes)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--reps", type=int, help="repetitions per grid point (default 10, quick 3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--datasets", default=",".join(hp_sdp_data.DATASETS))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = [s for s in args.datasets.split(",") if s]
    for s in names:
        if s not in hp_sdp_data.DATASETS:
            ap.error(f"unknown dataset {s!r}; known: {', '.join(hp_sdp_data.DATASETS)}")
    t0 = time.perf_counter()
    datasets = {s: hp_sdp_data.load(s, seed=args.seed) for s in names}
    if args.quick:
        eps_grid, deltas, tight_deltas, reps = (0.1, 0.5, 1.0), (1e-6, 1e-9), (1e-6,), 3
    else:
        eps_grid, deltas, tight_deltas, reps = EPS_GRID, DELTAS, DELTAS, 10
    reps = args.reps or reps
    grid = run_grid(datasets, eps_grid, deltas, tight_deltas, reps, args.seed)
    print(f"grid: {len(grid)} points in {time.perf_counter() - t0:.1f} s", flush=True)
    real: list[dict[str, Any]] = []
    real_reps = 2 if args.quick else 5
    if "zipf" in datasets:  # the headline check: Zipf, eps_c = 0.5, delta = 1e-6
        real += real_runs(
            datasets["zipf"], [(0.5, 1e-6, "paper"), (0.5, 1e-6, "tight")], real_reps, args.seed
        )
    if not args.quick:
        for s, ds in datasets.items():
            pts = [(e, 1e-6, "paper") for e in (0.1, 0.5, 1.0) if (s, e) != ("zipf", 0.5)]
            pts += [(1.0, 1e-9, "tight")]
            real += real_runs(ds, pts, 3 if ds.n < 10**6 else 1, args.seed)
    e1 = (
        [paper_estimator_check(datasets["zipf"], 0.5, 1e-6, args.seed)]
        if "zipf" in datasets
        else []
    )
    print(f"real runs done at {time.perf_counter() - t0:.1f} s", flush=True)
    timing = []
    worst = (0.5, 1e-6) if args.quick else (0.1, 1e-9)
    for s in ("zipf", "zipf-kosarak"):
        if s in datasets:
            timing.append(aggregation_timing(datasets[s], *worst, args.seed))
            if not args.quick:
                timing.append(aggregation_timing(datasets[s], 0.5, 1e-6, args.seed))
    results = {
        "quick": args.quick,
        "reps": reps,
        "seed": args.seed,
        "datasets": {s: {"n": ds.n, "d": ds.d, "source": ds.source} for s, ds in datasets.items()},
        "eps_grid": list(eps_grid),
        "deltas": list(deltas),
        "tight_deltas": list(tight_deltas),
        "grid": grid,
        "real": real,
        "timing": timing,
        "e1": e1,
    }
    results["elapsed_seconds"] = time.perf_counter() - t0
    (out / "results.json").write_text(json.dumps(results, indent=1))
    write_report(results, out)
    print(f"report: {out / 'report.md'} ({results['elapsed_seconds']:.1f} s)")
    return 0
