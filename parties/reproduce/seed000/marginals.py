"""``sdp reproduce seed000-marginals [--quick] --out DIR``: seed 000, k-way marginals and SGD on
synthetic data (spec Sec. 8, 10.2-10.3, claims C10-C12).

Writes ``DIR/report.md`` (Markdown + PNG plots) and ``DIR/results.json``:

1. 3-way-marginal SSE (mean over all C(d, 3) marginals of the per-marginal SSE) versus eps_c for
   Calm (LDP), FT (LDP), Calm_SRR-MS, Calm_ARR-SS and Calm_PSRR-SS (paper accounting, and the
   three shuffle variants again under tight accounting) on Kosarak (8 binary attributes, the
   n = 65,536 bootstrap of the FIMI head) and Census-Income (KDD) (13 attributes, n = 200,000,
   the stand-in for the Mexico census), with the chosen (w, m) and local epsilons;
2. the SGD experiment on the Census-Income learning subset: linear regression (MSE on the income
   bins), logistic regression and linear SVM (misclassification) trained on synthetic data from
   each method's published marginals, tested on the real 20 %, with the non-private reference;
3. the paper's claims next to ours, and the two checks of the issue (Calm_PSRR-SS >= 10x below
   Calm and FT at eps_c = 1; synthetic logistic regression within 5 points of non-private at
   eps_c = 1 under tight accounting).

``--quick``: eps_c in {0.5, 1.0} (Census: 1.0), one repetition, 1 SGD epoch (under 2 minutes).
The report (tables, plots, checks, claims) is written by
:mod:`parties.reproduce.seed000.marginals_report`.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from protocols.base import simulate
from protocols.datasets import categorical as D
from protocols.marginals.calm import CalmLDP, kway_queries, kway_sse, true_marginals
from protocols.marginals.calm_shuffle import CalmShuffle, published_tables
from protocols.marginals.fourier import FourierMarginals
from protocols.marginals.synthetic_data import synthesize
from protocols.rng import experiment_rng

EPS_GRID = tuple(round(0.1 * i, 1) for i in range(1, 11))
SHUFFLE = ("srr-ms", "arr-ss", "psrr-ss")
QUICK_SKIP = ("srr-ms/tight", "arr-ss/tight")


def _method_keys() -> list[str]:
    return ["calm", "ft"] + [f"{m}/{a}" for a in ("paper", "tight") for m in SHUFFLE]


def build(key: str, ds: D.CategoricalDataset, eps: float) -> tuple[Any, dict[str, Any]]:
    """(method object or None if infeasible, description)."""
    delta = 1.0 / ds.n
    if key == "calm":
        c = CalmLDP(ds.domain_sizes, ds.n, eps)
        return c, {
            "w": c.params.w,
            "m": c.params.m,
            "eps_l": eps,
            "oracles": sorted(set(c.oracles)),
        }
    if key == "ft":
        f = FourierMarginals(ds.domain_sizes, eps, 3)
        return f, {"coefficients": f.T, "eps_l": eps}
    mech, acc = key.split("/")
    try:
        p = CalmShuffle(ds.domain_sizes, ds.n, eps, delta, mech, accounting=acc)
    except ValueError as exc:
        return None, {"infeasible": str(exc)[:120]}
    el = p.inner.eps_local
    el = [e for e in el if e is not None] if isinstance(el, list) else [el]
    return p, {
        "w": p.params.w,
        "m": p.params.m,
        "eps_l": float(min(el)),
        "eps_l_max": float(max(el)),
    }


def publish(key: str, obj: Any, records: np.ndarray, rng: np.random.Generator):  # noqa: ANN201
    """(tables, sets) of one run of a Calm-type method."""
    if key == "calm":
        return obj.publish(records, rng), obj.sets
    tables, sets, _ = published_tables(simulate(obj, records, rng))
    return tables, sets


def marginal_experiment(
    ds: D.CategoricalDataset,
    grid: tuple[float, ...],
    reps: int,
    seed: int,
    log: Any,
    methods: list[str] | None = None,
) -> dict[str, Any]:
    """3-way SSE per method and eps_c (mean and spread over ``reps``)."""
    truth = true_marginals(ds.records, ds.domain_sizes, kway_queries(ds.d, 3))
    out: dict[str, Any] = {
        "n": ds.n,
        "d": ds.d,
        "domain_sizes": list(ds.domain_sizes),
        "points": {},
    }
    for key in methods or _method_keys():
        for eps in grid:
            t0 = time.perf_counter()
            obj, info = build(key, ds, eps)
            sses = []
            if obj is not None:
                for r in range(reps):
                    rng = experiment_rng(seed, "marg", ds.name, key, int(round(eps * 10)), r)
                    if key == "ft":
                        pub = obj.publish(ds.records, rng, list(truth))
                        sses.append(
                            float(np.mean([np.sum((pub[q] - t) ** 2) for q, t in truth.items()]))
                        )
                    else:
                        tables, sets = publish(key, obj, ds.records, rng)
                        sses.append(kway_sse(tables, sets, truth, ds.domain_sizes))
            info.update(
                sse=float(np.mean(sses)) if sses else None,
                sse_p10=float(np.percentile(sses, 10)) if sses else None,
                sse_p90=float(np.percentile(sses, 90)) if sses else None,
                seconds=round(time.perf_counter() - t0, 2),
            )
            out["points"].setdefault(key, {})[str(eps)] = info
            log(f"  {ds.name} {key} eps={eps}: {info.get('sse')} ({info['seconds']} s)")
    return out


def sgd_experiment(
    grid: tuple[float, ...],
    reps: int,
    seed: int,
    epochs: int,
    log: Any,
    base: D.CategoricalDataset | None = None,
    methods: list[str] | None = None,
) -> dict[str, Any]:
    """SGD metrics per method and eps_c on the Census-Income learning subset."""
    from protocols.marginals.sgd_models import (
        evaluate_models,
        income_threshold,
        load_census_learning,
    )

    learn = load_census_learning(base=base)
    ks, train, test = learn.dataset.domain_sizes, learn.train, learn.test
    thr = income_threshold(train)
    ds = D.CategoricalDataset("census-learning-train", train, ks, learn.dataset.attributes, "")
    sgd = {"epochs": epochs}
    ref = evaluate_models(
        train, test, learn.feature_sizes, thr, experiment_rng(seed, "sgd", "ref"), **sgd
    )
    out: dict[str, Any] = {
        "n_train": len(train),
        "n_test": len(test),
        "domain_sizes": list(ks),
        "threshold": thr,
        "non_private": ref,
        "points": {},
    }
    for key in [k for k in methods or _method_keys() if k != "ft"]:
        for eps in grid:
            obj, info = build(key, ds, eps)
            runs = []
            if obj is not None:
                for r in range(reps):
                    rng = experiment_rng(seed, "sgd", key, int(round(eps * 10)), r)
                    tables, sets = publish(key, obj, train, rng)
                    syn = synthesize(tables, sets, ks, len(train), rng)
                    runs.append(evaluate_models(syn, test, learn.feature_sizes, thr, rng, **sgd))
            if runs:
                info.update({m: float(np.mean([x[m] for x in runs])) for m in runs[0]})
            out["points"].setdefault(key, {})[str(eps)] = info
            log(f"  sgd {key} eps={eps}: {info.get('logistic_misclassification')}")
    return out


def main(argv: list[str]) -> int:
    """Entry point of ``sdp reproduce seed000-marginals``."""
    from parties.reproduce.seed000.marginals_report import write_report

    ap = argparse.ArgumentParser(
        prog="sdp reproduce seed000-marginals", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--quick", action="store_true", help="eps_c in {0.5, 1.0}, one repetition (CI)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--reps", type=int, default=None, help="Kosarak repetitions (default 20)")
    ap.add_argument(
        "--census-reps", type=int, default=None, help="Census and SGD repetitions (default 5)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--parts", default="kosarak,census,sgd", help="comma-separated subset")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    quick = args.quick
    grid = (0.5, 1.0) if quick else EPS_GRID
    cgrid = (1.0,) if quick else EPS_GRID
    sgrid = (1.0,) if quick else tuple(e for e in EPS_GRID if e >= 0.2)
    reps = args.reps or (1 if quick else 20)
    creps = args.census_reps or (1 if quick else 5)
    parts = set(args.parts.split(","))
    # --quick on Census/SGD: the tight-accounting SRR-MS and ARR-SS choices are the slow ones
    quick_methods = [k for k in _method_keys() if k not in QUICK_SKIP] if quick else None
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(msg, flush=True)

    results: dict[str, Any] = {
        "quick": quick,
        "seed": args.seed,
        "reps": reps,
        "census_reps": creps,
        "marginals": {},
    }
    if "kosarak" in parts:
        log("3-way marginals on Kosarak")
        results["marginals"]["kosarak-synthetic"] = marginal_experiment(
            D.load_kosarak_synthetic(), grid, reps, args.seed, log
        )
    census = D.load_census_income() if parts & {"census", "sgd"} else None
    if census is not None and "census" in parts:
        log("3-way marginals on Census-Income")
        results["marginals"]["census-income"] = marginal_experiment(
            census, cgrid, creps, args.seed, log, quick_methods
        )
    if "sgd" in parts:
        log("SGD on synthetic data")
        results["sgd"] = sgd_experiment(
            sgrid, creps, args.seed, 1 if quick else 2, log, census, quick_methods
        )
    results["seconds"] = time.perf_counter() - t0
    (out / "results.json").write_text(
        json.dumps(
            results,
            indent=1,
            default=lambda o: None if isinstance(o, float) and math.isnan(o) else str(o),
        )
    )
    write_report(out, results, grid, cgrid, sgrid)
    log(f"report: {out / 'report.md'} ({results['seconds']:.0f} s)")
    return 0
