"""``sdp reproduce seed003 [--quick] --out DIR``: GFIM vs LDPMiner on set-valued data (seed 003).

Writes ``DIR/report.md`` (Markdown with PNG plots, see ``seed003_report``) and
``DIR/results.json``. Experiments (every run uses the protocols' own ``encode_round`` /
``analyze_round`` with the in-process trusted shuffler, exactly as ``simulate``):

1. **synthetic** (thesis Sec. 4.4, spec Sec. 7.1): Laplace/Normal, n = 50k and 500k, d = 1000,
   ell = 50, k = 30, eps = 2, next to the thesis' precisions;
2. **k sweep** on Census-Income item sets (stand-in for US Census 1990), eps = 1, k = 1..20;
3. **eps sweep** at fixed k on Census-Income (k = 10) and on the synthetic Laplace/Normal 500k
   sets (k = 30), eps in {0.5, 1, 1.5, 2, 2.5, 3, 4};
4. **shuffle variant** at eps_c = 1 (and over the eps grid as the central target);
5. per-phase exact variance against the empirical one; encode/analyze timings.

Methods: GFIM (thesis combination), GFIM-ivw (the same runs recombined with the variance
weight: paired post-processing), LDPMiner (eps/2 per round, all users), one-phase sampling
S-Hist, GFIM-shuffle and LDPMiner-shuffle (local epsilon from the accountant for a central
eps_c, delta = 1e-6). Metrics: precision, RE (median over the true top-k), NCR; mean and
standard deviation over the repetitions (20; ``--quick`` 2 with smaller grids).

Privacy: ``run_point`` analyzes through ``simulate`` (the privacy gate). ``run_k_sweep``,
``variance_check`` and ``timings`` call the encoder and analyzer directly, without the gate,
and every experiment takes ``ell`` from the data (90th percentile of set sizes): the report
labels their sections "Non-private experiment" (``report.non_private``).

In the k sweep the round-0 reports of a repetition are shared by all k (round 0 does not depend
on k; each k's run is a complete, correctly distributed GFIM/LDPMiner run; the curves are
correlated across k, common random numbers).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from protocols.base import ShuffleProtocol, simulate, trusted_shuffle
from protocols.gfim.ldpminer import LDPMiner, OnePhase
from protocols.gfim.protocol import GFIM, TwoPhaseMiner, top_indices, topk_metrics
from protocols.gfim.setvalued_data import SetData, load_set_dataset
from protocols.gfim.shuffle import gfim_shuffle, ldpminer_shuffle
from protocols.rng import experiment_rng

SEED = 3
DELTA = 1e-6
EPS_GRID = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0)
K_GRID = tuple(range(1, 21))
LDP_METHODS = ("GFIM", "GFIM-ivw", "LDPMiner", "one-phase")
SHUFFLE_METHODS = ("GFIM-shuffle", "GFIM-shuffle-ivw", "LDPMiner-shuffle")
SYNTHETIC = ("laplace-50k", "normal-50k", "laplace-500k", "normal-500k")

Builder = Callable[[int], ShuffleProtocol]


def builders(data: SetData, eps: float, ell: int) -> dict[str, Builder]:
    """k -> protocol, per run method (the -ivw methods are recombinations of their base)."""
    d, n = data.d, data.n
    return {
        "GFIM": lambda k: GFIM(d, k, ell, eps),
        "LDPMiner": lambda k: LDPMiner(d, k, ell, eps),
        "one-phase": lambda k: OnePhase(d, k, ell, eps),
        "GFIM-shuffle": lambda k: gfim_shuffle(d, k, ell, eps, n, DELTA),
        "LDPMiner-shuffle": lambda k: ldpminer_shuffle(d, k, ell, eps, n, DELTA),
    }


RECOMBINED = {"GFIM-ivw": "GFIM", "GFIM-shuffle-ivw": "GFIM-shuffle"}


def _metrics(est: dict[str, Any], true_f: np.ndarray, k: int) -> dict[str, float]:
    return topk_metrics(np.asarray(est["top_k"]), np.asarray(est["frequencies"]), true_f, k)


def run_point(
    data: SetData, eps: float, k: int, methods: tuple[str, ...], reps: int, tag: str
) -> dict[str, dict[str, list[float]]]:
    """Metrics per method over ``reps`` repetitions at one (eps, k)."""
    ell = data.ell(0.9)
    true_f = data.frequencies()
    build = builders(data, eps, ell)
    out: dict[str, dict[str, list[float]]] = {
        m: {"precision": [], "re": [], "ncr": []} for m in methods
    }
    base_needed = {RECOMBINED.get(m, m) for m in methods}
    for rep in range(reps):
        for base in sorted(base_needed):
            proto = build[base](k)
            est = simulate(proto, data.records, experiment_rng(SEED, tag, base, rep))
            runs = {base: est}
            for alt, b in RECOMBINED.items():
                if b == base and alt in methods:
                    assert isinstance(proto, TwoPhaseMiner)
                    runs[alt] = proto.recombine(est, "ivw")
            for m, e in runs.items():
                if m in out:
                    for key, v in _metrics(e, true_f, k).items():
                        out[m][key].append(v)
    return out


def run_k_sweep(
    data: SetData, eps: float, ks: tuple[int, ...], methods: tuple[str, ...], reps: int, tag: str
) -> dict[int, dict[str, dict[str, list[float]]]]:
    """Metrics per k; two-phase methods share a repetition's round-0 reports across k.
    Non-private experiment: no privacy gate, ``ell`` from the data."""
    ell = data.ell(0.9)
    true_f = data.frequencies()
    build = builders(data, eps, ell)
    res = {k: {m: {"precision": [], "re": [], "ncr": []} for m in methods} for k in ks}
    base_needed = sorted({RECOMBINED.get(m, m) for m in methods})
    for rep in range(reps):
        for base in base_needed:
            rng = experiment_rng(SEED, tag, base, rep)
            first = build[base](ks[0])
            if isinstance(first, TwoPhaseMiner):
                loc: dict[str, Any] = {}
                shuffled0 = trusted_shuffle(first.encode_round(0, data.records, rng, {}, loc), rng)
            else:
                shuffled0 = trusted_shuffle(first.encode(data.records, rng), rng)
            for k in ks:
                proto = build[base](k)
                if isinstance(proto, TwoPhaseMiner):
                    pub = proto.analyze_round(0, shuffled0, {})
                    b1 = proto.encode_round(1, data.records, rng, pub, loc)
                    est = proto.analyze_round(1, trusted_shuffle(b1, rng), pub)
                    runs = {base: est}
                    for alt, b in RECOMBINED.items():
                        if b == base:
                            runs[alt] = proto.recombine(est, "ivw")
                else:
                    runs = {base: proto.analyze(shuffled0)}
                for m, e in runs.items():
                    if m in res[k]:
                        for key, v in _metrics(e, true_f, k).items():
                            res[k][m][key].append(v)
    return res


def variance_check(data: SetData, eps: float, k: int, reps: int) -> dict[str, Any]:
    """Empirical variance of f1 and f2 (fixed candidates) against ``TwoPhaseMiner.variances``.
    Non-private experiment: no privacy gate, ``ell`` from the data."""
    out: dict[str, Any] = {}
    cand_true = np.argsort(-data.frequencies(), kind="stable")[: 2 * k]
    for name, cls in (("GFIM", GFIM), ("LDPMiner", LDPMiner)):
        p = cls(data.d, k, data.ell(0.9), eps)
        f1s, f2s = [], []
        for rep in range(reps):
            rng = experiment_rng(SEED, "variance", name, rep)
            loc: dict[str, Any] = {}
            pub = p.analyze_round(0, p.encode_round(0, data.records, rng, {}, loc), {})
            pub["candidates"] = cand_true.tolist()
            est = p.analyze_round(1, p.encode_round(1, data.records, rng, pub, loc), pub)
            f1s.append(est["f1"])
            f2s.append(est["f2"])
        var = p.variances(data.records, cand_true, est["n1"], est["n2"])
        r1 = np.var(f1s, axis=0, ddof=1) / var["f1"]
        r2 = np.var(f2s, axis=0, ddof=1) / var["f2"]
        out[name] = {
            "ratio_f1_mean": float(r1.mean()),
            "ratio_f1_min": float(r1.min()),
            "ratio_f1_max": float(r1.max()),
            "ratio_f2_mean": float(r2.mean()),
            "exact_std_f1_mean": float(np.sqrt(var["f1"]).mean()),
            "exact_std_f2_mean": float(np.sqrt(var["f2"]).mean()),
            "reps": reps,
        }
    return out


def timings(data: SetData, k: int, eps: float) -> dict[str, float]:
    """Wall seconds of GFIM's encode and analyze per round on all users (one block).
    Non-private experiment: no privacy gate, ``ell`` from the data."""
    p = GFIM(data.d, k, data.ell(0.9), eps)
    rng = experiment_rng(SEED, "timing", data.name)
    loc: dict[str, Any] = {}
    t = {}
    t0 = time.perf_counter()
    b0 = p.encode_round(0, data.records, rng, {}, loc)
    t["encode_round0"] = time.perf_counter() - t0
    s0 = trusted_shuffle(b0, rng)
    t0 = time.perf_counter()
    pub = p.analyze_round(0, s0, {})
    t["analyze_round0"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    b1 = p.encode_round(1, data.records, rng, pub, loc)
    t["encode_round1"] = time.perf_counter() - t0
    s1 = trusted_shuffle(b1, rng)
    t0 = time.perf_counter()
    p.analyze_round(1, s1, pub)
    t["analyze_round1"] = time.perf_counter() - t0
    t["total"] = sum(t.values())
    t["users"] = data.n
    t["items_per_user_mean"] = float(data.sizes.mean())
    return t


def summarize(values: dict[str, list[float]]) -> dict[str, float]:
    """mean and std of every metric."""
    out = {}
    for key, v in values.items():
        a = np.asarray(v, dtype=np.float64)
        out[key] = float(a.mean())
        out[key + "_std"] = float(a.std(ddof=1)) if a.size > 1 else 0.0
    return out


def data_summary(data: SetData, k: int) -> dict[str, Any]:
    """n, d, ell, and the true frequencies around rank k (the gap the estimator must resolve)."""
    freq = data.frequencies()
    f = np.sort(freq)[::-1]
    return {
        "top_items": [data.labels[v] for v in top_indices(freq, k)],
        "n": data.n,
        "d": data.d,
        "ell": data.ell(0.9),
        "mean_size": float(data.sizes.mean()),
        "f_rank1": float(f[0]),
        "f_rank_k": float(f[k - 1]),
        "f_rank_k1": float(f[k]),
        "f_rank_2k": float(f[2 * k - 1]) if 2 * k <= f.size else None,
        "k": k,
        "source": data.source,
    }


PARTS = ("synthetic", "k", "eps", "variance", "timing", "extra")
EXTRA = ("kosarak", "t10i4d100k")


def run_all(
    quick: bool,
    reps: int,
    data_dir: str | None,
    log: Callable[[str], None],
    parts: tuple[str, ...] = PARTS,
    res: dict[str, Any] | None = None,
) -> dict:
    """The experiments of the module docstring (``parts``), added to ``res``; JSON-serialisable."""
    res = res if res is not None else {}
    res.update(quick=quick, reps=reps, delta=DELTA)
    res.setdefault("data", {})
    all_methods = LDP_METHODS + SHUFFLE_METHODS
    if "synthetic" in parts:
        res["synthetic"] = {}
        for name in SYNTHETIC[:2] if quick else SYNTHETIC:
            data = load_set_dataset(name)
            res["data"][name] = data_summary(data, 30)
            log(f"synthetic {name}")
            pt = run_point(data, 2.0, 30, all_methods, reps, f"syn-{name}")
            res["synthetic"][name] = {m: summarize(v) for m, v in pt.items()}
    census = load_set_dataset("census-income", data_dir)
    res["data"]["census-income"] = data_summary(census, 10)
    if "k" in parts:
        ks = (1, 2, 3, 5, 10, 20) if quick else K_GRID
        log("census k sweep")
        ksw = run_k_sweep(census, 1.0, ks, all_methods, reps, "census-k")
        res["k_sweep"] = {str(k): {m: summarize(v) for m, v in ksw[k].items()} for k in ks}
    sweep_syn = ("laplace-50k",) if quick else ("laplace-500k", "normal-500k")
    if "eps" in parts:
        eps_grid = (0.5, 1.0, 2.0) if quick else EPS_GRID
        res["eps_sweep"] = {}
        sweeps = [("census-income", census, 10)]
        sweeps += [(s, load_set_dataset(s), 30) for s in sweep_syn]
        syn_methods = ("GFIM", "GFIM-ivw", "LDPMiner", "GFIM-shuffle")
        for name, data, k in sweeps:
            res["data"].setdefault(name, data_summary(data, k))
            # 500k synthetic points cost ~10 s per repetition: fewer methods and half the reps
            big = data.n > 400_000
            meth, nrep = (syn_methods, max(2, reps // 2)) if big else (all_methods, reps)
            res["eps_sweep"][name] = {"k": k, "reps": nrep, "points": {}}
            for eps in eps_grid:
                log(f"eps sweep {name} eps={eps}")
                pt = run_point(data, eps, k, meth, nrep, f"eps-{name}-{eps}")
                res["eps_sweep"][name]["points"][str(eps)] = {
                    m: summarize(v) for m, v in pt.items()
                }
    if "extra" in parts:
        res["extra"] = {}
        for name in EXTRA:
            try:
                data = load_set_dataset(name, data_dir)
            except FileNotFoundError as exc:
                log(f"extra: skipping {name}: {exc}")
                continue
            res["data"][name] = data_summary(data, 10)
            log(f"extra {name}")
            pt = run_point(data, 1.0, 10, all_methods, reps, f"extra-{name}")
            res["extra"][name] = {m: summarize(v) for m, v in pt.items()}
    shuffle_eps = {}
    for name in ["census-income", *sweep_syn, *res.get("extra", {})]:
        data = census if name == "census-income" else load_set_dataset(name, data_dir)
        g = gfim_shuffle(data.d, 10, data.ell(0.9), 1.0, data.n, DELTA)
        lm = ldpminer_shuffle(data.d, 10, data.ell(0.9), 1.0, data.n, DELTA)
        shuffle_eps[name] = {
            "gfim_eps_local": g.eps1,
            "ldpminer_eps_local_per_round": lm.eps1,
            "n_per_round_gfim": g.min_reports,
        }
    res["shuffle_eps_local_at_eps_c_1"] = shuffle_eps
    if "variance" in parts:
        log("variance check")
        res["variance"] = variance_check(census, 1.0, 10, 4 if quick else 30)
    if "timing" in parts:
        log("timings")
        big = load_set_dataset("laplace-500k")
        res["timing"] = {
            "laplace-500k": timings(big, 30, 2.0),
            "census-income": timings(census, 10, 1.0),
        }
    return res


def main(argv: list[str]) -> int:
    """Entry point for ``sdp reproduce seed003``."""
    from parties.reproduce.seed003.report import write_report

    ap = argparse.ArgumentParser(prog="sdp reproduce seed003", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 repetitions, small grids (CI)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--reps", type=int, default=None, help="repetitions per point (default 20)")
    ap.add_argument("--data-dir", default=None, help="raw datasets folder")
    ap.add_argument(
        "--report-only", action="store_true", help="rewrite report.md from DIR/results.json"
    )
    ap.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"comma-separated subset of {','.join(PARTS)}; with an existing DIR/results.json "
        "only these parts are recomputed and merged",
    )
    args = ap.parse_args(argv)
    if args.report_only:
        res = json.loads((Path(args.out) / "results.json").read_text())
        for name, summ in res["data"].items():  # results of older versions: add the top items
            if "top_items" not in summ:
                data = load_set_dataset(name, args.data_dir)
                summ["top_items"] = [
                    data.labels[v] for v in top_indices(data.frequencies(), summ["k"])
                ]
        (Path(args.out) / "results.json").write_text(json.dumps(res, indent=1))
        write_report(Path(args.out), res)
        print(f"seed003: report at {Path(args.out) / 'report.md'}")
        return 0
    reps = args.reps or (2 if args.quick else 20)
    if reps < 1:
        ap.error("--reps must be >= 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()

    def log(msg: str) -> None:
        print(f"seed003 [{time.time() - t0:6.1f} s] {msg}", flush=True)

    parts = tuple(p for p in args.parts.split(",") if p)
    if any(p not in PARTS for p in parts):
        ap.error(f"--parts: choose from {', '.join(PARTS)}")
    old = None
    if set(parts) != set(PARTS) and (out / "results.json").is_file():
        old = json.loads((out / "results.json").read_text())
        t0 -= old.get("wall_seconds", 0.0)
    try:
        res = run_all(args.quick, reps, args.data_dir, log, parts, old)
    except FileNotFoundError as exc:
        print(f"seed003: {exc}")
        return 2
    res["wall_seconds"] = time.time() - t0
    (out / "results.json").write_text(json.dumps(res, indent=1))
    write_report(out, res)
    print(f"seed003: report at {out / 'report.md'} ({time.time() - t0:.0f} s)")
    return 0
