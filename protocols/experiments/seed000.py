"""``sdp reproduce seed000 [--quick] --out DIR``: seed 000 (SRR-MS, ARR-SS, PSRR-SS) reproduced.

Writes ``DIR/report.md`` (Markdown with PNG plots) and ``DIR/results.json``:

1. the local-epsilon table of spec Sec. 12.1 (Kosarak, n = 65,536, d = 8) next to the spec's
   values, and the local epsilons on our datasets under paper and tight accounting;
2. feasibility thresholds (claim C2) against the paper's statements;
3. 1-marginal SSE versus eps_c = 0.1..1.0 for SRR-MS, ARR-SS, PSRR-SS, SUE-MS and sampling + OUE
   on every dataset (20 repetitions; mean and the 10-90 % spread), paper accounting;
4. the percentage tables in the form of the paper's Tables 2-3 next to the paper's values;
5. Table 4 (bits per user) next to the paper's values;
6. the same curves under tight accounting and the PSRR-SS tight-versus-paper SSE reduction;
7. empirical SSE against the exact variance formulas.

Every run uses the protocols' own ``encode``/``analyze`` with the in-process trusted shuffler.
``--quick`` (CI): 2 repetitions per point; otherwise 20.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from protocols import datasets as D
from protocols.arr_ss import ARRSS
from protocols.base import trusted_shuffle
from protocols.calculate import balle_x, calculate, feasibility_threshold
from protocols.multidim import MultidimProtocol
from protocols.multidim_baselines import SUEMS, OUESampling, sue_feasibility_threshold
from protocols.postprocess import project_simplex
from protocols.psrr_ss import PSRRSS
from protocols.srr_ms import SRRMS

PAPER_GRID = tuple(round(0.1 * i, 1) for i in range(1, 11))
EPS_GRID = PAPER_GRID  # the grid simulated; ``--eps`` narrows it
METHODS: dict[str, type[MultidimProtocol]] = {
    "srr-ms": SRRMS,
    "arr-ss": ARRSS,
    "psrr-ss": PSRRSS,
    "sue-ms": SUEMS,
    "oue-ldp": OUESampling,
}
LABELS = {
    "srr-ms": "SRR-MS",
    "arr-ss": "ARR-SS",
    "psrr-ss": "PSRR-SS",
    "psrr-ss/observed": "PSRR-SS (observed n_i)",
    "sue-ms": "SUE-MS",
    "oue-ldp": "OUE (LDP)",
}
# estimator used for each curve: the paper's n/d normalisation, except OUE (standard per-attribute
# OUE estimator over the reports received) and the extra observed-count PSRR-SS curve
CURVES = {
    "srr-ms": ("srr-ms", "paper"),
    "arr-ss": ("arr-ss", "paper"),
    "psrr-ss": ("psrr-ss", "paper"),
    "psrr-ss/observed": ("psrr-ss", "observed"),
    "sue-ms": ("sue-ms", "paper"),
    "oue-ldp": ("oue-ldp", "observed"),
}
DATASETS = ("kosarak-synthetic", "kosarak", "adult", "census-income")

# ---- reference values: the spec's own computation (Sec. 12.1) and the paper's tables ----
SPEC_12_1 = {  # eps_c: (X_s, SRR-MS, ARR-SS, PSRR-SS)
    0.2: (1.986, -0.014, -0.116, 2.701),
    0.3: (4.469, 1.244, 3.033, 3.548),
    0.4: (7.944, 1.938, 3.883, 4.136),
    0.5: (12.413, 2.435, 4.435, 4.588),
    0.6: (17.875, 2.826, 4.852, 4.956),
    0.7: (24.329, 3.150, 5.191, 5.266),
    0.8: (31.777, 3.427, 5.477, 5.534),
    0.9: (40.218, 3.669, 5.726, 5.771),
    1.0: (49.652, 3.885, 5.946, 5.982),
}
PAPER_TABLE2 = {  # Kosarak, % by which PSRR-SS's SSE is below the method's
    "srr-ms": dict(
        zip(PAPER_GRID[1:], (97.2, 65.8, 52.7, 20.1, 34.0, 1.9, 34.9, 31.6, 33.5), strict=True)
    ),
    "arr-ss": dict(
        zip(PAPER_GRID[1:], (98.2, 80.0, 53.4, 56.0, 55.4, 50.6, 54.4, 59.1, 63.6), strict=True)
    ),
    "sue-ms": dict(zip(PAPER_GRID[3:], (99.9, 99.6, 99.2, 98.9, 99.3, 99.4, 99.2), strict=True)),
    "oue-ldp": dict(
        zip(PAPER_GRID[1:], (99.9, 99.9, 99.9, 99.9, 99.9, 99.9, 99.9, 99.8, 99.9), strict=True)
    ),
}
PAPER_TABLE3 = {  # Mexico census
    "srr-ms": dict(zip(PAPER_GRID[3:], (88.7, 80.2, 67.2, 66.9, 67.6, 70.4, 64.1), strict=True)),
    "arr-ss": dict(zip(PAPER_GRID[3:], (84.3, 75.6, 72.2, 67.2, 72.9, 75.0, 69.8), strict=True)),
    "sue-ms": dict(zip(PAPER_GRID[3:], (97.2, 89.4, 89.0, 83.2, 87.9, 89.9, 90.1), strict=True)),
    "oue-ldp": dict(zip(PAPER_GRID[3:], (99.8, 99.8, 99.7, 99.6, 99.7, 99.8, 99.7), strict=True)),
}
PAPER_TABLE4 = {  # bits per user: Kosarak, Mexico, Bank, Adult
    "srr-ms": (1.00, 2.69, 2.77, 3.40),
    "arr-ss": (4.00, 11.69, 11.77, 7.40),
    "psrr-ss": (4.00, 13.00, 13.00, 10.00),
}


def bits_per_user(method: str, domain_sizes: tuple[int, ...]) -> tuple[float, float]:
    """(paper's formula, whole-bit encoding) bits per user message (Table 4 decoding, spec 10.1).

    SRR-MS: log2 k_i averaged (no attribute id); ARR-SS: ceil(log2 d) + log2 k_theta averaged;
    PSRR-SS: ceil(log2 d) + ceil(log2 k_max).
    """
    ks = np.asarray(domain_sizes, dtype=np.float64)
    idb = math.ceil(math.log2(len(ks)))
    if method == "srr-ms":
        return float(np.mean(np.log2(ks))), float(np.mean(np.ceil(np.log2(ks))))
    if method == "arr-ss":
        return idb + float(np.mean(np.log2(ks))), idb + float(np.mean(np.ceil(np.log2(ks))))
    if method == "psrr-ss":
        v = idb + math.ceil(math.log2(ks.max()))
        return float(v), float(v)
    raise ValueError(f"bits_per_user: unknown method {method!r}")


def _protocol(
    method: str,
    ds: D.CategoricalDataset,
    eps_c: float,
    accounting: str,
    tight_bound: str = "vr",
    policy: str = "strict",
) -> MultidimProtocol:
    return METHODS[method](
        ds.domain_sizes,
        ds.n,
        eps_c,
        1.0 / ds.n,
        accounting=accounting,
        attributes=ds.attributes,
        tight_bound=tight_bound,
        policy=policy,
    )


def simulate(
    ds: D.CategoricalDataset,
    method: str,
    eps_c: float,
    accounting: str,
    reps: int,
    seed: int,
    tight_bound: str = "vr",
    policy: str = "strict",
) -> dict[str, Any] | None:
    """Per-repetition per-attribute SSE for every estimator, plus exact expected SSE per attribute.

    Returns None when the method has no feasible local epsilon.
    """
    proto = _protocol(method, ds, eps_c, accounting, tight_bound, policy)
    if not getattr(proto, "feasible", True):
        return None
    truth = ds.marginals()
    rng = np.random.default_rng(seed)
    sse = {e: np.full((reps, ds.d), np.nan) for e in proto.estimators}
    proj = {e: np.full((reps, ds.d), np.nan) for e in proto.estimators}
    for r in range(reps):
        est = proto.analyze(trusted_shuffle(proto.encode(ds.records, rng), rng))
        for e in proto.estimators:
            for j, (m, f) in enumerate(zip(est["estimates"][e], truth, strict=True)):
                if m is not None and np.isfinite(m).all():
                    sse[e][r, j] = float(np.sum((np.asarray(m) - f) ** 2))
                    # ablation (not in the paper): Norm-Sub, i.e. projection onto the simplex
                    proj[e][r, j] = float(np.sum((project_simplex(np.asarray(m)) - f) ** 2))
    expected = {}
    for e in proto.estimators:
        parts = proto.variance(truth, e)
        expected[e] = [None if v is None else float(v.sum()) for v in parts]
    eps_l = proto.eps_local
    return {
        "sse": {e: v.tolist() for e, v in sse.items()},
        "sse_projected": {e: v.tolist() for e, v in proj.items()},
        "expected": expected,
        "eps_l": eps_l if isinstance(eps_l, list) else [eps_l] * ds.d,
        "seed": seed,
    }


def attribute_set(
    results: dict[str, Any], ds: D.CategoricalDataset, eps: float, accounting: str
) -> list[int]:
    """Attributes entering the SSE at eps (paper Sec. 5.1): those feasible for SRR-MS, else all."""
    srr = results[accounting][str(eps)].get("srr-ms")
    if srr is None:
        return list(range(ds.d))
    feas = [j for j, e in enumerate(srr["eps_l"]) if e is not None]
    return feas or list(range(ds.d))


def curve_point(
    run: dict[str, Any] | None, estimator: str, attrs: list[int], key: str = "sse"
) -> dict[str, float] | None:
    """Mean, 10/90 % quantiles and exact expectation of the SSE over ``attrs``.

    ``key="sse_projected"`` uses the estimates after Norm-Sub (simplex projection).
    """
    if run is None:
        return None
    sse = np.asarray(run[key][estimator])[:, attrs]
    if np.isnan(sse).any():
        return None
    tot = sse.sum(axis=1)
    exp = run["expected"][estimator]
    return {
        "mean": float(tot.mean()),
        "std": float(tot.std(ddof=1)) if len(tot) > 1 else 0.0,
        "p10": float(np.quantile(tot, 0.1)),
        "p90": float(np.quantile(tot, 0.9)),
        "expected": float(sum(exp[j] for j in attrs)),
    }


def run_all(
    reps: int, datasets: dict[str, D.CategoricalDataset], log: Any = print
) -> dict[str, Any]:
    """Simulate every (accounting, eps, dataset, method)."""
    out: dict[str, Any] = {}
    for dname, ds in datasets.items():
        out[dname] = {}
        for acc in ("paper", "tight"):
            out[dname][acc] = {}
            for i, eps in enumerate(EPS_GRID):
                t0 = time.time()
                cell = {}
                for mi, method in enumerate(METHODS):
                    if acc == "tight" and method == "oue-ldp":
                        cell[method] = out[dname]["paper"][str(eps)][method]  # no accounting
                        continue
                    seed = int(
                        np.random.SeedSequence(
                            [DATASETS.index(dname), i, mi, acc == "tight"]
                        ).generate_state(1)[0]
                    )
                    cell[method] = simulate(ds, method, eps, acc, reps, seed)
                out[dname][acc][str(eps)] = cell
                log(f"  {dname:18s} {acc:5s} eps_c={eps:.1f} ({time.time() - t0:.1f}s)")
        # PSRR-SS under the generic FMT21 clone bound: tight accounting without the VR assumptions
        out[dname]["fmt21"] = {}
        for i, eps in enumerate(EPS_GRID):
            seed = int(np.random.SeedSequence([DATASETS.index(dname), i, 99]).generate_state(1)[0])
            out[dname]["fmt21"][str(eps)] = {
                "psrr-ss": simulate(ds, "psrr-ss", eps, "tight", reps, seed, tight_bound="fmt21")
            }
        # the paper's Kosarak eps_c = 0.2 entries: negative eps_l (paper_lenient) or eps_c (fallback)
        if dname.startswith("kosarak") and 0.2 in EPS_GRID:
            with warnings.catch_warnings():  # negative eps_l on purpose (see the report)
                warnings.filterwarnings("ignore", message="calculate: eps_l")
                out[dname]["lenient"] = _lenient(ds, reps)
    return out


def _lenient(ds: D.CategoricalDataset, reps: int) -> dict[str, Any]:
    """SRR-MS and ARR-SS at eps_c = 0.2 under the paper_lenient and fallback policies."""
    return {
        pol: {
            m: simulate(ds, m, 0.2, "paper", reps, 1000 + 10 * j + k, policy=pol)
            for j, m in enumerate(("srr-ms", "arr-ss"))
        }
        for k, pol in enumerate(("paper_lenient", "fallback"))
    }


def _from(lo: float) -> tuple[float, ...]:
    """The simulated eps_c values >= lo."""
    return tuple(e for e in EPS_GRID if e >= lo - 1e-9)


def _fmt(x: float | None, spec: str = ".3e") -> str:
    return "-" if x is None else format(x, spec)


def _pct(sse_x: float | None, sse_p: float | None) -> float | None:
    if sse_x is None or sse_p is None or sse_x <= 0:
        return None
    return 100.0 * (sse_x - sse_p) / sse_x


def _curves(sim: dict[str, Any], ds: D.CategoricalDataset, acc: str) -> dict[str, dict[str, Any]]:
    res = sim[ds.name]
    curves: dict[str, dict[str, Any]] = {c: {} for c in CURVES}
    for eps in EPS_GRID:
        attrs = attribute_set(res, ds, eps, acc)
        for c, (method, est) in CURVES.items():
            curves[c][str(eps)] = curve_point(res[acc][str(eps)][method], est, attrs)
    return curves


def _plot(curves: dict[str, dict[str, Any]], title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for c, pts in curves.items():
        xs = [e for e in EPS_GRID if pts[str(e)] is not None]
        if not xs:
            continue
        m = [pts[str(e)]["mean"] for e in xs]
        lo = [pts[str(e)]["p10"] for e in xs]
        hi = [pts[str(e)]["p90"] for e in xs]
        (line,) = ax.plot(xs, m, marker="o", ms=3, label=LABELS[c], ls="--" if "/" in c else "-")
        ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.15)
    ax.set_yscale("log")
    ax.set_xlabel("eps_c")
    ax.set_ylabel("SSE of 1-way marginals")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _eps_table_12_1() -> tuple[list[str], bool]:
    n, d = 65_536, 8
    delta = 1 / n
    lines = [
        "| eps_c | X_s | SRR-MS ours | spec | ARR-SS ours | spec | PSRR-SS ours | spec |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ok = True
    for eps in PAPER_GRID:
        with warnings.catch_warnings():  # the negative entries are shown on purpose
            warnings.filterwarnings("ignore", message="calculate: eps_l")
            ours = [
                balle_x(eps, delta, n / d),
                calculate(eps, delta, n / d, 2, "paper_lenient").eps_local,
                calculate(eps, delta, n, 16, "paper_lenient").eps_local,
                calculate(eps, delta, n, 2, "paper_lenient").eps_local,
            ]
        spec = SPEC_12_1.get(eps)
        if spec is not None:
            ok &= all(o is not None and round(o, 3) == s for o, s in zip(ours, spec, strict=True))
        sp = spec or (None,) * 4
        lines.append(
            f"| {eps:.1f} | {_fmt(ours[0], '.3f')} | "
            + " | ".join(
                f"{_fmt(o, '.3f')} | {_fmt(s, '.3f')}"
                for o, s in zip(ours[1:], sp[1:], strict=True)
            )
            + " |"
        )
    return lines, ok


def _thresholds(datasets: dict[str, D.CategoricalDataset]) -> list[str]:
    lines = [
        "| dataset | n | d | k_max | sum k | PSRR-SS | SRR-MS (k=2 / k_max) | ARR-SS | SUE-MS |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for ds in datasets.values():
        delta = 1 / ds.n
        srr = [
            feasibility_threshold(delta, ds.n / ds.d, k) for k in (min(ds.domain_sizes), ds.k_max)
        ]
        lines.append(
            f"| {ds.name} | {ds.n} | {ds.d} | {ds.k_max} | {sum(ds.domain_sizes)} | "
            f"{feasibility_threshold(delta, ds.n, ds.k_max):.3f} | "
            f"{srr[0]:.3f} (k={min(ds.domain_sizes)}) / {srr[1]:.3f} | "
            f"{feasibility_threshold(delta, ds.n, sum(ds.domain_sizes)):.3f} | "
            f"{sue_feasibility_threshold(delta, ds.n / ds.d):.4f} |"
        )
    return lines


def _eps_local_table(sim: dict[str, Any], ds: D.CategoricalDataset) -> list[str]:
    lines = [
        "| eps_c | SRR-MS paper (min..max over attributes) | tight | ARR-SS paper | tight | PSRR-SS paper | tight | SUE-MS paper | tight |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def one(run: dict[str, Any] | None, rng_: bool = False) -> str:
        if run is None:
            return "infeasible"
        vals = [e for e in run["eps_l"] if e is not None]
        if not vals:
            return "infeasible"
        if rng_:
            nf = len(run["eps_l"]) - len(vals)
            return f"{min(vals):.3f}..{max(vals):.3f}" + (f" ({nf} infeasible)" if nf else "")
        return f"{vals[0]:.3f}"

    for eps in EPS_GRID:
        p, t = sim["paper"][str(eps)], sim["tight"][str(eps)]
        lines.append(
            f"| {eps:.1f} | {one(p['srr-ms'], True)} | {one(t['srr-ms'], True)} | {one(p['arr-ss'])} | "
            f"{one(t['arr-ss'])} | {one(p['psrr-ss'])} | {one(t['psrr-ss'])} | {one(p['sue-ms'])} | {one(t['sue-ms'])} |"
        )
    return lines


def _sse_table(curves: dict[str, dict[str, Any]]) -> list[str]:
    head = "| eps_c | " + " | ".join(LABELS[c] for c in CURVES) + " |"
    lines = [head, "|---" * (len(CURVES) + 1) + "|"]
    for eps in EPS_GRID:
        row = []
        for c in CURVES:
            pt = curves[c][str(eps)]
            row.append("-" if pt is None else f"{pt['mean']:.3e} ± {pt['std']:.1e}")
        lines.append(f"| {eps:.1f} | " + " | ".join(row) + " |")
    return lines


def _pct_table(
    curves: dict[str, dict[str, Any]],
    paper: dict[str, dict[float, float]],
    eps_list: tuple[float, ...],
    psrr: str,
) -> list[str]:
    lines = [
        "| method | " + " | ".join(f"{e:.1f}" for e in eps_list) + " | mean abs. diff (pp) |",
        "|---" * (len(eps_list) + 2) + "|",
    ]
    for m in ("srr-ms", "arr-ss", "sue-ms", "oue-ldp"):
        cells, diffs = [], []
        for e in eps_list:
            a, b = curves[m][str(e)], curves[psrr][str(e)]
            ours = _pct(a and a["mean"], b and b["mean"])
            ref = paper.get(m, {}).get(e)
            cells.append(f"{_fmt(ours, '.1f')} ({_fmt(ref, '.1f')})")
            if ours is not None and ref is not None:
                diffs.append(abs(ours - ref))
        diff = f"{np.mean(diffs):.1f} over {len(diffs)}" if diffs else "-"
        lines.append(f"| {LABELS[m]} | " + " | ".join(cells) + f" | {diff} |")
    return lines


def encode_timing(ds: D.CategoricalDataset, eps_c: float = 1.0) -> dict[str, float]:
    """Amortised user-side encode time per report (microseconds), vectorized over all users."""
    out = {}
    rng = np.random.default_rng(0)
    for method in METHODS:
        proto = _protocol(method, ds, eps_c, "paper")
        if not getattr(proto, "feasible", True):
            continue
        best = math.inf
        for _ in range(3):
            t0 = time.perf_counter()
            proto.encode(ds.records, rng)
            best = min(best, time.perf_counter() - t0)
        out[method] = 1e6 * best / ds.n
    return out


def _claims(
    sim: dict[str, Any],
    curves_p: dict[str, dict[str, dict[str, Any]]],
    datasets: dict[str, D.CategoricalDataset],
    reps: int,
) -> list[str]:
    out = []
    # C1
    n = 65_536
    r = [
        calculate(e, 1 / n, n, 16).eps_local / calculate(e, 1 / n, n / 8, 2).eps_local
        for e in (0.4, 0.6, 0.8, 1.0)
    ]
    p_gt = all(
        calculate(e, 1 / n, n, 2).eps_local > calculate(e, 1 / n, n, 16).eps_local
        for e in PAPER_GRID[2:]
    )
    out.append(
        f"- **C1** eps_l(ARR-SS)/eps_l(SRR-MS) on Kosarak at 0.4, 0.6, 0.8, 1.0: {', '.join(f'{x:.2f}' for x in r)} (paper: about 2); eps_l(PSRR-SS) > eps_l(ARR-SS) for eps_c >= 0.3: {p_gt}."
    )
    # C2
    thr_k = sue_feasibility_threshold(1 / n, n / 8)
    na = 45_222
    thr_a = sue_feasibility_threshold(1 / na, na / 15)
    c2 = f"- **C2** SUE-MS feasibility threshold: Kosarak {thr_k:.4f} (paper: from 0.4; 0.4 itself is infeasible by {thr_k - 0.4:.4f}), Adult {thr_a:.3f} (paper: from 0.7, matches)."
    if "census-income" in datasets:
        ds = datasets["census-income"]
        t = feasibility_threshold(1 / ds.n, ds.n, sum(ds.domain_sizes))
        c2 += f" ARR-SS on Census-Income (sum k = {sum(ds.domain_sizes)}) feasible from {t:.3f} (paper, Mexico: none below 0.3)."
    out.append(c2)
    # C3 monotone: a rise counts when it exceeds 2 standard errors and the attribute set is unchanged
    mono: list[str] = []
    changes: list[str] = []
    for dname, curves in curves_p.items():
        ds = datasets[dname]
        sets = {e: tuple(attribute_set(sim[dname], ds, e, "paper")) for e in EPS_GRID}
        for c in ("srr-ms", "arr-ss", "psrr-ss", "sue-ms", "oue-ldp"):
            pts = [(e, curves[c][str(e)]) for e in EPS_GRID if curves[c][str(e)] is not None]
            rises = [
                f"{e1:.1f}->{e2:.1f}"
                for (e1, a), (e2, b) in zip(pts, pts[1:], strict=False)
                if sets[e1] == sets[e2]
                and b["mean"] - a["mean"] > 2 * math.hypot(a["std"], b["std"]) / math.sqrt(reps)
            ]
            entering = [
                f"{e1:.1f}->{e2:.1f}"
                for (e1, _), (e2, _) in zip(pts, pts[1:], strict=False)
                if sets[e1] != sets[e2]
            ]
            if rises:
                mono.append(f"{LABELS[c]} on {dname} at {', '.join(rises)}")
            if c == "srr-ms" and entering:
                changes.append(f"{dname} at {', '.join(entering)}")
    out.append(
        "- **C3** SSE decreasing in eps_c (a rise counts if above 2 standard errors with an unchanged "
        "attribute set): "
        + ("no significant rise." if not mono else "significant rises: " + "; ".join(mono) + ".")
        + " The attribute set changes (new SRR-MS-feasible attributes enter, the paper's Bank "
        "effect) on " + ("; ".join(changes) or "no dataset") + "."
    )
    # C6
    if "adult" in curves_p:
        c = curves_p["adult"]
        s4, p4 = c["srr-ms"].get("0.4"), c["psrr-ss"].get("0.4")
        if s4 and p4:
            out.append(
                f"- **C6** Adult eps_c = 0.4 (attributes: the SRR-MS-feasible ones): SRR-MS {s4['mean']:.3e} vs PSRR-SS {p4['mean']:.3e} -> SRR-MS better: {s4['mean'] < p4['mean']} (paper: SRR-MS better)."
            )
        better, worse = [], []
        for e in (e for e in EPS_GRID if e > 0.4):
            p = c["psrr-ss"][str(e)]
            rivals = [c[m][str(e)]["mean"] for m in ("srr-ms", "arr-ss") if c[m][str(e)]]
            if p and rivals:
                (better if p["mean"] < min(rivals) else worse).append(f"{e:.1f}")
        out.append(
            "  Adult eps_c > 0.4: PSRR-SS better than the feasible ones of SRR-MS and ARR-SS at "
            f"eps_c = {', '.join(better) or 'none'}; not at {', '.join(worse) or 'none'} (paper: "
            "better at all)."
        )
    return out


def write_report(
    out_dir: Path,
    sim: dict[str, Any],
    datasets: dict[str, D.CategoricalDataset],
    reps: int,
    quick: bool,
    seconds: float,
) -> bool:
    """Write report.md and the plots; returns whether the Sec. 12.1 table matched."""
    md: list[str] = []
    md.append("# Seed 000 reproduction: multidimensional categorical data under shuffle DP\n")
    md.append(
        f"Mode: {'quick' if quick else 'full'}; {reps} repetitions per point; eps_c = 0.1..1.0; "
        f"delta = 1/n; run time {seconds:.0f} s. Every point runs the protocols' own encode/analyze "
        "(`protocols/srr_ms.py`, `arr_ss.py`, `psrr_ss.py`, `multidim_baselines.py`) through the "
        "in-process trusted shuffler. Raw numbers and seeds: `results.json`.\n"
    )
    md.append("## Datasets\n")
    md.append("| name | n | d | k_max | domain sizes | source |\n|---|---|---|---|---|---|")
    for ds in datasets.values():
        md.append(
            f"| {ds.name} | {ds.n} | {ds.d} | {ds.k_max} | {list(ds.domain_sizes)} | {ds.source} |"
        )
    md.append(
        "\nPaper: Kosarak n = 65,536 (8 binary attributes), Bank (not available offline: not "
        "reproduced), Adult (45,222, d = 15, k_max = 41), Mexico census (200,000, d = 13, "
        "k_max = 9). Census-Income (KDD) stands in for Mexico; Kosarak is the 36,683-line head "
        "file (`kosarak`) and its 65,536-user bootstrap (`kosarak-synthetic`, the paper's n). The "
        "preprocessing is ours (the paper gives none): see `protocols/datasets.py`.\n"
    )
    lines, ok = _eps_table_12_1()
    md.append("## 1. Local epsilon (spec Sec. 12.1, Kosarak n = 65,536, d = 8, delta = 1/n)\n")
    md.append(
        "`paper_lenient` policy so that the negative values appear; under the default `strict` "
        "policy they are infeasible. "
        + ("**All values match the spec to 3 decimals.**" if ok else "**MISMATCH with the spec.**")
        + "\n"
    )
    md += lines
    for dname, ds in datasets.items():
        md.append(
            f"\n**Local epsilons on {dname}** (paper = Calculate, tight = DP-core accountant, variation-ratio bound with the mechanism's parameters)\n"
        )
        md += _eps_local_table(sim[dname], ds)
    md.append("\n## 2. Feasibility thresholds (smallest eps_c with eps_l > 0, claim C2)\n")
    md += _thresholds(datasets)
    md.append(
        "\nPaper: SUE-MS feasible from 0.4 on Kosarak and from 0.7 on Adult; no ARR-SS below 0.3 on "
        "Mexico; Adult PSRR-SS > 0.381 and only the two binary attributes count for SRR-MS at 0.4. "
        "The SUE bound is the spec's candidate (2 x Balle k = 2 at eps_l/2): it reproduces Adult and "
        "misses Kosarak 0.4 by 0.0014.\n"
    )
    curves_p = {d: _curves(sim, ds, "paper") for d, ds in datasets.items()}
    curves_t = {d: _curves(sim, ds, "tight") for d, ds in datasets.items()}
    md.append("## 3. SSE of the 1-way marginals versus eps_c (paper accounting)\n")
    md.append(
        "Mean over the repetitions ± standard deviation; plots show the mean and the 10-90 % band. "
        "As in the paper (Sec. 5.1), the SSE of every method at an eps_c sums only the attributes "
        "for which SRR-MS has a feasible eps_l (all attributes when SRR-MS has none). Estimators: "
        "the paper's n/d normalisation for SRR-MS, ARR-SS, PSRR-SS and SUE-MS; the standard per-"
        "attribute OUE estimator; the dashed PSRR-SS curve uses the observed count n_i.\n"
    )
    for dname in datasets:
        png = f"sse_{dname}_paper.png"
        _plot(curves_p[dname], f"{dname}: 1-way marginal SSE (paper accounting)", out_dir / png)
        md.append(f"### {dname}\n\n![{dname}]({png})\n")
        md += _sse_table(curves_p[dname])
        md.append("")
    md.append("## 4. Percentage gaps, Tables 2-3 form: (SSE_X - SSE_PSRR-SS)/SSE_X x 100\n")
    md.append(
        "Ours (paper's value in parentheses). The paper does not define the percentage; this is the spec's reading.\n"
    )
    for dname, table, eps_list, title in (
        ("kosarak-synthetic", PAPER_TABLE2, _from(0.2), "Table 2 (Kosarak) on kosarak-synthetic"),
        ("kosarak", PAPER_TABLE2, _from(0.2), "Table 2 (Kosarak) on the Kosarak head"),
        ("census-income", PAPER_TABLE3, _from(0.4), "Table 3 (Mexico) on Census-Income"),
    ):
        if dname not in curves_p:
            continue
        for psrr, what in (
            ("psrr-ss", "paper estimator"),
            ("psrr-ss/observed", "observed-count estimator"),
        ):
            md.append(f"\n**{title}, PSRR-SS with the {what}**\n")
            md += _pct_table(curves_p[dname], table, eps_list, psrr)
    for dname in ("kosarak-synthetic", "kosarak"):
        len_ = sim.get(dname, {}).get("lenient")
        pp = curves_p.get(dname, {}).get("psrr-ss", {}).get("0.2")
        if not len_ or not pp:
            continue
        cells = []
        for pol, runs in len_.items():
            for m, run in runs.items():
                if run is None:
                    cells.append(
                        f"| {pol} | {LABELS[m]} | infeasible | - | - | {PAPER_TABLE2[m][0.2]:.1f} |"
                    )
                    continue
                pt = curve_point(run, "paper", list(range(datasets[dname].d)))
                gap = _pct(pt and pt["mean"], pp["mean"])
                cells.append(
                    f"| {pol} | {LABELS[m]} | {run['eps_l'][0]:.3f} | {pt['mean']:.3e} | "
                    f"{_fmt(gap, '.1f')} | {PAPER_TABLE2[m][0.2]:.1f} |"
                )
        md.append(
            f"\n**{dname} at eps_c = 0.2** (the paper reports SRR-MS and ARR-SS here although "
            f"X - k + 1 < 1; PSRR-SS SSE {pp['mean']:.3e}):\n"
        )
        md.append(
            "| policy | method | eps_l | SSE | gap % ours | paper |\n|---|---|---|---|---|---|"
        )
        md += cells
        md.append(
            "\nA slightly negative eps_l (`paper_lenient`, near 0) makes RR almost uninformative "
            "and the gap is about 100 %; a strongly negative one (an inverted RR) is |eps_l|-LDP and "
            "leaks like +|eps_l|, so it is no privacy setting at all. Falling back to eps_l = eps_c "
            "(no amplification) comes close to the paper's SRR-MS value but not to its ARR-SS value; "
            "the paper's eps_c = 0.2 entries stay unexplained (a slightly different n or delta is "
            "the likeliest cause).\n"
        )
    md.append("\n## 5. Table 4: bits per user\n")
    md.append(
        "| method | Kosarak ours (paper) | Census-Income ours (paper's Mexico) | Adult ours (paper) | Bank (paper) |\n|---|---|---|---|---|"
    )
    for m in ("srr-ms", "arr-ss", "psrr-ss"):
        cells = []
        for dname, idx in (("kosarak", 0), ("census-income", 1), ("adult", 3)):
            ds = datasets.get(dname)
            if ds is None:
                cells.append("-")
                continue
            f, w = bits_per_user(m, ds.domain_sizes)
            cells.append(f"{f:.2f} [{w:.2f} whole bits] ({PAPER_TABLE4[m][idx]:.2f})")
        lines4 = f"| {LABELS[m]} | " + " | ".join(cells) + f" | ({PAPER_TABLE4[m][2]:.2f}) |"
        md.append(lines4)
    md.append(
        "\nFormulas (spec Sec. 10.1 decoding): SRR-MS = mean log2 k_i (no attribute id); ARR-SS = "
        "ceil(log2 d) + mean log2 k_i; PSRR-SS = ceil(log2 d) + ceil(log2 k_max). Kosarak and Adult "
        "match the paper exactly; the paper's 9 id bits for Mexico/Bank are unexplained (ceil(log2 13) "
        "= 4). The bytes actually sent per shuffler are in the networked runs' cost ledger.\n"
    )
    md.append("### User-side time (claim C9)\n")
    md.append(
        "Amortised encode time per report in microseconds at eps_c = 1.0, vectorized over all "
        "users (best of 3; the paper reports about 5 us per report on Mexico, one user at a time):\n"
    )
    md.append("| dataset | " + " | ".join(LABELS[m] for m in METHODS) + " |")
    md.append("|---" * (len(METHODS) + 1) + "|")
    for dname, ds in datasets.items():
        tm = encode_timing(ds)
        md.append(f"| {dname} | " + " | ".join(_fmt(tm.get(m), ".3f") for m in METHODS) + " |")
    md.append("")
    md.append("## 6. Tight accounting (DP-core accountant with the mechanism actually run)\n")
    md.append(
        "Local epsilons from the variation-ratio bound (`protocols.accountant`, bound `vr`): k_i-RR "
        "for SRR-MS groups of floor(n/d), K-RR for ARR-SS and k_max-RR parameters for PSRR-SS over "
        "n users (the (theta, RR) randomizer has the same likelihood ratio and no larger total-"
        "variation distance), SUE for SUE-MS; OUE unchanged. Every attribute is feasible, so the "
        "SSE sums all attributes. ARR-SS and PSRR-SS do not run plain k-RR: using the k-RR "
        "parameters rests on the variation-ratio theorem holding for any randomizer with those "
        "(ratio, total-variation) parameters; the PSRR-SS rows marked fmt21 use the generic "
        "clone bound instead, which needs only eps_l-LDP.\n"
    )
    for dname in datasets:
        png = f"sse_{dname}_tight.png"
        _plot(curves_t[dname], f"{dname}: 1-way marginal SSE (tight accounting)", out_dir / png)
        md.append(f"### {dname}\n\n![{dname} tight]({png})\n")
        md += _sse_table(curves_t[dname])
        md.append("")
    headline = {}
    if "adult" in datasets:
        ds = datasets["adult"]
        allat = list(range(ds.d))
        rows = [
            "| eps_c | estimator | eps_l paper | eps_l tight (vr) | eps_l fmt21 | SSE paper | "
            "SSE tight (vr) | reduction | SSE fmt21 | reduction |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for eps in EPS_GRID:
            rp = sim["adult"]["paper"][str(eps)]["psrr-ss"]
            rt = sim["adult"]["tight"][str(eps)]["psrr-ss"]
            rf = sim["adult"]["fmt21"][str(eps)]["psrr-ss"]
            if rp is None or rt is None or rf is None:
                continue
            for est in ("paper", "observed"):
                a, b, f = (curve_point(r, est, allat) for r in (rp, rt, rf))
                red = 100 * (a["mean"] - b["mean"]) / a["mean"]
                redf = 100 * (a["mean"] - f["mean"]) / a["mean"]
                rows.append(
                    f"| {eps:.1f} | {est} | {rp['eps_l'][0]:.3f} | {rt['eps_l'][0]:.3f} | "
                    f"{rf['eps_l'][0]:.3f} | {a['mean']:.3e} | {b['mean']:.3e} | {red:.1f} % | "
                    f"{f['mean']:.3e} | {redf:.1f} % |"
                )
                if eps == 0.5:
                    headline[est] = (a["mean"], b["mean"], red, rp["eps_l"][0], rt["eps_l"][0])
                    headline[est + "/fmt21"] = (
                        a["mean"],
                        f["mean"],
                        redf,
                        rp["eps_l"][0],
                        rf["eps_l"][0],
                    )
        md.append("### PSRR-SS on Adult, all 15 attributes: tight versus paper accounting\n")
        if "paper" in headline:
            a, b, red, el_p, el_t = headline["paper"]
            md.append(
                f"**At eps_c = 0.5 the tight bound lowers PSRR-SS's SSE by {red:.1f} %** ({a:.3e} -> {b:.3e}; "
                f"eps_l {el_p:.3f} -> {el_t:.3f}; paper estimator)"
                + (
                    f"; {headline['observed'][2]:.1f} % with the observed-count estimator."
                    if "observed" in headline
                    else "."
                )
                + (
                    f" With the generic FMT21 clone bound (valid for every eps-LDP randomizer, no "
                    f"variation-ratio assumption) the reduction is {headline['paper/fmt21'][2]:.1f} % "
                    f"(eps_l {headline['paper/fmt21'][4]:.3f})."
                    if "paper/fmt21" in headline
                    else ""
                )
                + "\n"
            )
        md += rows
    md.append(
        "\n## 7. Empirical SSE versus the exact variance formulas (all attributes, eps_c = 1.0)\n"
    )
    md.append(
        "Expected SSE = sum over attributes and values of the full Theorem 3/6/9 variances (SRR-MS and SUE-MS include the random partition's sampling term).\n"
    )
    md.append(
        "| dataset | method | estimator | mean SSE | exact expected | ratio |\n|---|---|---|---|---|---|"
    )
    for dname, ds in datasets.items():
        for method in METHODS:
            run = sim[dname]["paper"].get("1.0", {}).get(method)
            if run is None:
                continue
            attrs = [
                j
                for j in range(ds.d)
                if run["expected"][next(iter(run["expected"]))][j] is not None
            ]
            for est in run["sse"]:
                pt = curve_point(run, est, attrs)
                if pt:
                    md.append(
                        f"| {dname} | {LABELS[method]} | {est} | {pt['mean']:.4e} | {pt['expected']:.4e} | {pt['mean'] / pt['expected']:.3f} |"
                    )
    run = sim["adult"]["paper"].get("1.0", {}).get("psrr-ss") if "adult" in datasets else None
    if run is not None:
        pt = curve_point(run, "paper", list(range(datasets["adult"].d)))
        md.append(
            f"\n**PSRR-SS on Adult at eps_c = 1.0: mean SSE {pt['mean']:.4e} vs exact {pt['expected']:.4e} "
            f"(ratio {pt['mean'] / pt['expected']:.3f}; requirement: within 20 %).**\n"
        )
    md.append("## 8. Claims\n")
    md += _claims(sim, curves_p, datasets, reps)
    gaps = []
    for dname, ref in (("kosarak-synthetic", PAPER_TABLE2), ("census-income", PAPER_TABLE3)):
        if dname not in curves_p:
            continue
        c = curves_p[dname]
        for m in ("srr-ms", "arr-ss"):
            if "1.0" not in c[m]:
                continue
            a = c[m]["1.0"]
            g_paper = _pct(a and a["mean"], c["psrr-ss"]["1.0"] and c["psrr-ss"]["1.0"]["mean"])
            g_obs = _pct(
                a and a["mean"],
                c["psrr-ss/observed"]["1.0"] and c["psrr-ss/observed"]["1.0"]["mean"],
            )
            gaps.append(
                f"{dname} vs {LABELS[m]}: {_fmt(g_paper, '.1f')} % (n/d estimator), "
                f"{_fmt(g_obs, '.1f')} % (observed n_i), paper {ref[m][1.0]:.1f} %"
            )
    md.append(
        "\n## 9. Where and why our numbers differ from the paper\n\n"
        + ("PSRR-SS's gap at eps_c = 1.0: " + "; ".join(gaps) + ".\n\n" if gaps else "")
        + "- **Estimator normalisation (spec 12.3).** With the paper's n/d normaliser, PSRR-SS carries "
        "the sampling noise of the random attribute choice, about (d-1)/n per attribute; it dominates "
        "at large eps_c, so PSRR-SS does not beat SRR-MS on Kosarak with the printed estimator (the "
        "spec's own simulation found the same). With the observed count n_i (theta is sent in clear) "
        "PSRR-SS's floor drops and the ordering of the paper returns: compare the two Table 2 blocks.\n"
        "- **Data.** Mexico is replaced by Census-Income (KDD) and Bank is unavailable; Kosarak is the "
        "head of the file (or its bootstrap), and the discretisation of Adult is ours (chosen so that "
        "d = 15, k_max = 41 and Table 4's 3.40 bits hold). Percentages depend on the marginals, so "
        "Table 2-3 values can only agree in trend.\n"
        "- **SUE-MS.** The paper gives no SUE shuffle bound; the spec's candidate reproduces the Adult "
        "threshold (0.7) but puts Kosarak's at 0.4014, so SUE-MS starts at 0.5 there. With it SUE-MS is "
        "much better than the paper's 99 % gaps suggest (for binary attributes it coincides with "
        "SRR-MS at eps_c/2): the paper's SUE-MS must have used a far weaker bound.\n"
        "- **OUE.** 'Sampling + OUE at eps_c' gives gaps around 90-99 % depending on the data, not a "
        "uniform 99.9 %; the paper's configuration is under-specified (spec 12.3).\n"
        "- **SRR-MS theory.** Theorem 3 omits the random partition's sampling error; our exact variance "
        "includes it (Sec. 7 ratios), and the paper's approximations drop the f_v terms.\n"
        "- **Feasibility.** Kosarak eps_c = 0.2 (SRR-MS, ARR-SS) gives X - k + 1 < 1 (negative eps_l); "
        "the default strict policy reports no value there, while the paper printed one.\n"
        "- **Percentage definition** (SSE_X - SSE_PSRR)/SSE_X is the spec's assumption.\n"
    )
    md.append(
        "\n## 10. Ablation (not in the paper): Norm-Sub post-processing\n\n"
        "Each attribute's estimate projected onto the probability simplex (Norm-Sub, "
        "`protocols.postprocess.project_simplex`); mean SSE raw -> projected (change), paper "
        "accounting, same attribute sets as Sec. 3. The paper does not say whether it "
        "post-processed the 1-way marginals.\n"
    )
    md.append("| dataset | eps_c | " + " | ".join(LABELS[c] for c in CURVES) + " |")
    md.append("|---" * (len(CURVES) + 2) + "|")
    for dname, ds in datasets.items():
        for eps in (e for e in EPS_GRID if e in (0.5, 1.0)):
            attrs = attribute_set(sim[dname], ds, eps, "paper")
            cells = []
            for method, est in CURVES.values():
                run = sim[dname]["paper"][str(eps)][method]
                a = curve_point(run, est, attrs)
                b = curve_point(run, est, attrs, "sse_projected")
                cells.append(
                    "-"
                    if a is None or b is None
                    else f"{a['mean']:.2e} -> {b['mean']:.2e} ({_fmt(_pct(a['mean'], b['mean']), '.0f')} %)"
                )
            md.append(f"| {dname} | {eps:.1f} | " + " | ".join(cells) + " |")
    (out_dir / "report.md").write_text("\n".join(md) + "\n")
    summary = {
        "table_12_1_matches": ok,
        "psrr_adult_tight_vs_paper_eps0.5": headline,
        "curves_paper": curves_p,
        "curves_tight": curves_t,
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    return ok


def main(argv: list[str]) -> int:
    """Entry point for ``sdp reproduce seed000``."""
    ap = argparse.ArgumentParser(prog="sdp reproduce seed000", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 repetitions per point (CI)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--reps", type=int, default=None, help="repetitions per point (default 20)")
    ap.add_argument(
        "--data-dir", default=None, help="raw datasets folder (default ../shared/datasets)"
    )
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated subset")
    ap.add_argument("--eps", default=None, help="comma-separated eps_c subset (default 0.1..1.0)")
    args = ap.parse_args(argv)
    global EPS_GRID
    if args.eps:
        try:
            EPS_GRID = tuple(sorted(round(float(x), 1) for x in args.eps.split(",") if x))
        except ValueError:
            ap.error(f"--eps expects numbers like 0.5,1.0, got {args.eps!r}")
        if not EPS_GRID or not set(EPS_GRID) <= set(PAPER_GRID):
            ap.error(f"--eps values must be among {PAPER_GRID}")
    else:
        EPS_GRID = PAPER_GRID
    reps = args.reps or (2 if args.quick else 20)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    names = [s for s in args.datasets.split(",") if s]
    for s in names:
        if s not in DATASETS:
            ap.error(f"unknown dataset {s!r}; choose from {', '.join(DATASETS)}")
    loaded: dict[str, D.CategoricalDataset] = {}
    for s in names:
        try:
            if s == "adult":
                loaded[s] = D.load_adult(args.data_dir)
            else:
                loaded[s] = D.load_dataset(s, args.data_dir)
        except FileNotFoundError as exc:
            print(f"seed000: skipping {s}: {exc}")
    if not loaded:
        print("seed000: no dataset available")
        return 2
    print(f"seed000: {reps} repetitions, datasets {', '.join(loaded)}")
    sim = run_all(reps, loaded)
    (out / "results.json").write_text(json.dumps(sim))
    ok = write_report(out, sim, loaded, reps, args.quick, time.time() - t0)
    print(
        f"seed000: report at {out / 'report.md'} ({time.time() - t0:.0f} s); table 12.1 match: {ok}"
    )
    return 0 if ok else 1
