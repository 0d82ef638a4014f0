"""Markdown + PNG report of ``sdp reproduce seed003`` (from the results dict of ``seed003``).

Every statement about our numbers is computed from the results; the thesis' numbers are the
spec's Sec. 7 (synthetic precisions, single runs) and its qualitative claims C2-C12 (Sec. 9).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from parties.reproduce.paper_parameters import paper_parameters_section

# spec Sec. 7.1: thesis precisions at eps = 2, k = 30 (single runs)
THESIS_SYNTHETIC = {
    "laplace-50k": {"GFIM": 0.4, "LDPMiner": 0.267},
    "normal-50k": {"GFIM": 0.267, "LDPMiner": 0.3},
    "laplace-500k": {"GFIM": 0.967, "LDPMiner": 0.933},
    "normal-500k": {"GFIM": 0.7, "LDPMiner": 0.667},
}
# spec Sec. 11: the spec author's own simulation (10 repetitions), precision
SPEC_SIM = {
    "laplace-50k": {"GFIM": 0.21, "LDPMiner": 0.17},
    "normal-50k": {"GFIM": 0.12, "LDPMiner": 0.11},
    "laplace-500k": {"GFIM": 0.73, "LDPMiner": 0.68},
    "normal-500k": {"GFIM": 0.48, "LDPMiner": 0.46},
}
ORDER = (
    "GFIM",
    "GFIM-ivw",
    "LDPMiner",
    "one-phase",
    "GFIM-shuffle",
    "GFIM-shuffle-ivw",
    "LDPMiner-shuffle",
)


def _pm(s: dict[str, float], key: str, nd: int = 3) -> str:
    return f"{s[key]:.{nd}f} ± {s[key + '_std']:.{nd}f}"


def _c(eps: float) -> float:
    return (math.exp(eps) + 1) / (math.exp(eps) - 1)


def _plot_lines(
    path: Path, xs: list[float], series: dict[str, list[dict]], metric: str, xlabel: str, title: str
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for name, pts in series.items():
        m = [p[metric] for p in pts]
        s = [p[metric + "_std"] for p in pts]
        ax.errorbar(xs, m, yerr=s, marker="o", ms=3, capsize=2, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel({"precision": "precision", "re": "relative error (median)", "ncr": "NCR"}[metric])
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _metric_plots(
    out: Path,
    stem: str,
    xs: list[Any],
    pts: dict[str, Any],
    meths: list[str],
    vs: str,
    xlabel: str,
    title: str,
) -> list[str]:
    """Precision and RE plots over ``xs`` (points keyed by ``str(x)``) of every method but the
    ``-shuffle-ivw`` variants; the report lines that show them."""
    lines: list[str] = []
    for metric in ("precision", "re"):
        fn = f"{stem}_{metric}.png"
        series = {m: [pts[str(x)][m] for x in xs] for m in meths if not m.endswith("shuffle-ivw")}
        _plot_lines(out / fn, xs, series, metric, xlabel, f"{title}: {metric} vs {vs}")
        lines += [f"![{metric} vs {vs}]({fn})", ""]
    return lines


def _methods(points: dict[str, Any]) -> list[str]:
    first = next(iter(points.values()))
    return [m for m in ORDER if m in first]


def _table(rows: list[list[str]], head: list[str]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def non_private(what: str) -> list[str]:
    """The label of a report section whose runs bypass the privacy gate (issue 26)."""
    return [
        f"**Non-private experiment.** {what} run the encoder and analyzer without the privacy "
        "gate, and ℓ is the 90th percentile of set sizes computed from the data: they measure "
        "the estimators, no privacy ledger covers them, and nothing here is a private release.",
        "",
    ]


def write_report(out: Path, res: dict[str, Any]) -> None:
    """Write ``out/report.md`` and its plots."""
    L: list[str] = []
    reps = res["reps"]
    L += [
        "# Seed 003 reproduction: GFIM vs LDPMiner on set-valued data",
        "",
        f"Repetitions per point: **{reps}**{' (quick mode: small grids)' if res['quick'] else ''}."
        f" Wall time {res['wall_seconds']:.0f} s. Every run is the protocols' own two-round "
        "encoder/analyzer with the in-process trusted shuffler (`protocols.base.simulate`).",
        "Metrics: precision = |V ∩ V̂|/k, RE = median over the true top-k of |f̂−f|/f (combined "
        "estimate, defined on all of D), NCR (normalised cumulative rank); mean ± standard "
        "deviation over repetitions. GFIM-ivw is each GFIM run recombined with the variance "
        "weight (paired). Shuffle variants: central (ε_c, δ = "
        f"{res['delta']:g}) with the local ε from the accountant (variation-ratio bound, "
        "Hadamard parameters).",
        "",
        *paper_parameters_section(["ell", "kosarak", "census-income"]),
        "## Data",
        "",
    ]
    rows = []
    for name, s in res["data"].items():
        gap = s["f_rank_k"] - s["f_rank_k1"]
        rows.append(
            [
                name,
                str(s["n"]),
                str(s["d"]),
                str(s["ell"]),
                f"{s['mean_size']:.1f}",
                str(s["k"]),
                f"{s['f_rank1']:.3f}",
                f"{s['f_rank_k']:.4f}",
                f"{s['f_rank_k1']:.4f}",
                f"{gap:.4f}",
            ]
        )
    L += _table(
        rows,
        [
            "dataset",
            "n",
            "d",
            "ℓ (90th pct)",
            "mean |S|",
            "k",
            "f(rank 1)",
            "f(rank k)",
            "f(rank k+1)",
            "gap",
        ],
    )
    L += [""]
    for name, s in res["data"].items():
        if s.get("top_items"):
            L += [f"- realised true top-{s['k']} of {name}: " + ", ".join(s["top_items"])]
    L += [
        "",
        "Census-Income (KDD) rows read as 41 attribute=value items stand in for the "
        "thesis' SPMF US Census 1990 set (1M rows, 396 items, 47 per row), which is not "
        "available offline. The synthetic generator is the spec's reading (Sec. 6.1): 50 "
        "distinct items per user by successive sampling from the discretised density.",
        "",
    ]

    # ---- synthetic -----------------------------------------------------------------------
    syn = res["synthetic"]
    L += ["## 1. Synthetic sets (ε = 2, k = 30, ℓ = 50, d = 1000): thesis Sec. 4.4", ""]
    meths = _methods(syn)
    rows = []
    for name, pts in syn.items():
        for m in meths:
            th = THESIS_SYNTHETIC.get(name, {}).get(m)
            sim = SPEC_SIM.get(name, {}).get(m)
            rows.append(
                [
                    name,
                    m,
                    _pm(pts[m], "precision"),
                    "—" if th is None else f"{th:.3f}",
                    "—" if sim is None else f"{sim:.2f}",
                    _pm(pts[m], "re"),
                    _pm(pts[m], "ncr"),
                ]
            )
    L += _table(rows, ["dataset", "method", "precision (ours)", "thesis", "spec sim", "RE", "NCR"])
    L += [""]
    diffs = []
    for name, pts in syn.items():
        for m in ("GFIM", "LDPMiner"):
            th = THESIS_SYNTHETIC.get(name, {}).get(m)
            if th is not None:
                diffs.append(f"{name} {m}: ours − thesis = {pts[m]['precision'] - th:+.3f}")
    L += ["Differences to the thesis: " + "; ".join(diffs) + ".", ""]
    dev = [
        abs(pts[m]["precision"] - SPEC_SIM[n][m])
        for n, pts in syn.items()
        for m in ("GFIM", "LDPMiner")
        if n in SPEC_SIM
    ]
    dev_th = [
        abs(pts[m]["precision"] - THESIS_SYNTHETIC[n][m])
        for n, pts in syn.items()
        for m in ("GFIM", "LDPMiner")
        if n in THESIS_SYNTHETIC
    ]
    L += [
        "Why they may differ: the thesis' synthetic precisions are single runs (multiples of "
        "1/30) of an unspecified generator, and at rank 30 the true frequencies are nearly "
        "tied (gap column above, far below the estimator's standard deviation ~ℓ·c_ε/√(n/2)),"
        " so precision depends on which near-tied items happen to be ranked. Mean absolute "
        f"difference of our precisions to the thesis: {sum(dev_th) / max(len(dev_th), 1):.3f}; "
        "to the spec author's independent simulation (column *spec sim*, same reading of the "
        f"generator, 10 runs): {sum(dev) / max(len(dev), 1):.3f}.",
        "",
    ]
    checks = []
    for dist in ("laplace", "normal"):
        a, b = syn.get(f"{dist}-50k"), syn.get(f"{dist}-500k")
        if a and b:
            for m in ("GFIM", "LDPMiner"):
                ok = b[m]["precision"] > a[m]["precision"]
                checks.append(
                    f"- C2-C4 precision rises with n ({dist}, {m}): "
                    f"{a[m]['precision']:.3f} → {b[m]['precision']:.3f} "
                    f"**{'holds' if ok else 'does not hold'}**"
                )
    for size in ("50k", "500k"):
        a, b = syn.get(f"laplace-{size}"), syn.get(f"normal-{size}")
        if a and b:
            ok = a["GFIM"]["precision"] > b["GFIM"]["precision"]
            checks.append(
                f"- C5 Laplace easier than Normal (n={size}, GFIM): "
                f"{a['GFIM']['precision']:.3f} vs {b['GFIM']['precision']:.3f} "
                f"**{'holds' if ok else 'does not hold'}**"
            )
    for name, pts in syn.items():
        d = pts["GFIM"]["precision"] - pts["LDPMiner"]["precision"]
        se = math.hypot(pts["GFIM"]["precision_std"], pts["LDPMiner"]["precision_std"])
        se /= math.sqrt(max(reps, 1))
        checks.append(f"- C6 GFIM − LDPMiner at ε = 2 on {name}: {d:+.3f} (± {se:.3f} s.e.)")
    for name, pts in syn.items():
        if "one-phase" in pts and "GFIM-ivw" in pts:
            d1 = pts["one-phase"]["precision"] - pts["GFIM"]["precision"]
            d2 = pts["GFIM-ivw"]["precision"] - pts["GFIM"]["precision"]
            checks.append(
                f"- one-phase − GFIM precision on {name}: {d1:+.3f}; GFIM-ivw − GFIM: {d2:+.3f}"
            )
    L += checks + [""]
    ratios = []
    for name, d in res["data"].items():
        ratios.append(
            f"{name} (ℓ = {d['ell']}, k = {d['k']}): {2 * (2 * d['k']) ** 2 / d['ell'] ** 2:.2f}"
        )
    L += [
        "Why the one-phase baseline can beat GFIM: with the same ε, GFIM's phase-2 estimate "
        "(half the users, padding k_max = 2k) has about 2·k_max²/ℓ² times the variance of the "
        "one-phase estimate (all users, padding ℓ), and the thesis' weight makes it "
        "nearly the whole combined estimate on C. That ratio is "
        + "; ".join(ratios)
        + ". Above 1 the refinement round loses accuracy (the thesis' argument that phase 2 "
        "pads less needs k_max < ℓ); the variance-weighted combination recovers part of it.",
        "",
    ]

    # ---- k sweep -------------------------------------------------------------------------
    ks = res["k_sweep"]
    kx = [int(k) for k in ks]
    meths = _methods(ks)
    L += ["## 2. Census-Income, ε = 1, k = " + f"{kx[0]}..{kx[-1]} (thesis Figs. 5-9/5-10)", ""]
    L += non_private("The k sweep's runs (round-0 reports shared across k)")
    L += _metric_plots(out, "k_sweep", kx, ks, meths, "k", "k", "Census-Income item sets, eps = 1")
    rows = [
        [str(k)] + [f"{ks[str(k)][m]['precision']:.3f} / {ks[str(k)][m]['re']:.3f}" for m in meths]
        for k in kx
    ]
    L += _table(rows, ["k"] + [f"{m} prec / RE" for m in meths]) + [""]
    better_p = [
        k for k in kx if ks[str(k)]["GFIM"]["precision"] > ks[str(k)]["LDPMiner"]["precision"]
    ]
    better_r = [k for k in kx if ks[str(k)]["GFIM"]["re"] < ks[str(k)]["LDPMiner"]["re"]]
    kmin = min(kx, key=lambda k: ks[str(k)]["GFIM"]["re"])
    L += [
        f"- C7 GFIM better than LDPMiner at ε = 1: precision at {len(better_p)}/{len(kx)} k, "
        f"RE at {len(better_r)}/{len(kx)} k (thesis: every k in [1, 20]).",
        f"- C8 GFIM's RE is smallest at k = {kmin} (thesis: minimum near k = 3); precision at "
        f"k = 1, 2: {ks[str(kx[0])]['GFIM']['precision']:.2f}, "
        f"{ks[str(kx[1])]['GFIM']['precision']:.2f}.",
        f"- C9 from k = {kx[0]} to k = {kx[-1]}: GFIM precision "
        f"{ks[str(kx[0])]['GFIM']['precision']:.3f} → {ks[str(kx[-1])]['GFIM']['precision']:.3f}"
        f", RE {ks[str(kx[0])]['GFIM']['re']:.3f} → {ks[str(kx[-1])]['GFIM']['re']:.3f}. On our "
        'stand-in the top of the item list is a block of near-1 frequencies ("Not in universe" '
        "and zero-valued items), so the k-dependence reflects that data's gaps, not the "
        "US Census 1990 set's.",
        "",
    ]

    # ---- eps sweeps ----------------------------------------------------------------------
    L += [
        "## 3. ε sweep at fixed k (thesis Figs. 5-11/5-12; claim C11: GFIM ahead of LDPMiner "
        "for ε < 1.5)",
        "",
    ]
    for name, sw in res["eps_sweep"].items():
        pts = sw["points"]
        ex = [float(e) for e in pts]
        meths = _methods(pts)
        L += [f"### {name}, k = {sw['k']} ({sw.get('reps', reps)} repetitions)", ""]
        xlabel = "epsilon (local; central eps_c for -shuffle)"
        title = f"{name}, k = {sw['k']}"
        L += _metric_plots(out, f"eps_{name}", ex, pts, meths, "eps", xlabel, title)
        rows = []
        for e in ex:
            p = pts[str(e)]
            g, lm = p["GFIM"], p["LDPMiner"]
            ahead = g["precision"] >= lm["precision"] and g["re"] <= lm["re"]
            rows.append(
                [f"{e:g}"]
                + [f"{p[m]['precision']:.3f} / {p[m]['re']:.3f}" for m in meths]
                + ["yes" if ahead else "no"]
            )
        L += _table(rows, ["ε"] + [f"{m} prec / RE" for m in meths] + ["GFIM ahead on both"]) + [""]
        small = [e for e in ex if e < 1.5]
        won = [
            e
            for e in small
            if pts[str(e)]["GFIM"]["precision"] >= pts[str(e)]["LDPMiner"]["precision"]
            and pts[str(e)]["GFIM"]["re"] <= pts[str(e)]["LDPMiner"]["re"]
        ]
        cross = [e for e in ex if pts[str(e)]["LDPMiner"]["re"] < pts[str(e)]["GFIM"]["re"]]
        lost = [
            e
            for e in ex
            if pts[str(e)]["GFIM"]["precision"] < pts[str(e)]["LDPMiner"]["precision"]
            or pts[str(e)]["GFIM"]["re"] > pts[str(e)]["LDPMiner"]["re"]
        ]
        L += [
            f"- Crossover on {name}: the smallest ε of the grid where GFIM is not ahead on both "
            f"metrics is {min(lost):g}."
            if lost
            else f"- Crossover on {name}: GFIM is ahead on both metrics at every ε of the grid."
        ]
        L += [
            f"- C11 on {name}: GFIM ahead of LDPMiner in both metrics at {len(won)} of "
            f"{len(small)} ε < 1.5 points; LDPMiner has the lower RE at ε ∈ "
            f"{{{', '.join(f'{e:g}' for e in cross) or 'none'}}}.",
            "",
        ]
    L += [
        "Analytic reason (spec Sec. 3.6): the per-phase variance ratio LDPMiner/GFIM is "
        "c_{ε/2}²/(2 c_ε²) (LDPMiner halves ε, GFIM halves the users):",
        "",
    ]
    grid = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
    L += _table(
        [[f"{_c(e / 2) ** 2 / (2 * _c(e) ** 2):.2f}" for e in grid]], [f"ε = {e:g}" for e in grid]
    )
    L += [
        "",
        "so GFIM's per-phase estimates are more accurate below ε ≈ 3.06 and the "
        "advantage shrinks as ε grows. Where the true frequencies around rank k are nearly "
        "tied (see the gap column), precision is a noisy measure of that advantage; RE "
        "reflects it more directly. The one-phase baseline spends the whole budget and all "
        "users on one estimate over D; compare its row with GFIM's in every table.",
        "",
    ]

    # ---- shuffle -------------------------------------------------------------------------
    L += ["## 4. Shuffle variant at ε_c = 1", ""]
    rows = []
    for name, sw in res["eps_sweep"].items():
        p = sw["points"].get("1.0")
        if p is None:
            continue
        se = res["shuffle_eps_local_at_eps_c_1"][name]
        for m in [
            m
            for m in ("GFIM", "GFIM-shuffle", "GFIM-shuffle-ivw", "LDPMiner", "LDPMiner-shuffle")
            if m in p
        ]:
            eps_l = {
                "GFIM-shuffle": se["gfim_eps_local"],
                "GFIM-shuffle-ivw": se["gfim_eps_local"],
                "LDPMiner-shuffle": 2 * se["ldpminer_eps_local_per_round"],
            }.get(m, 1.0)
            rows.append(
                [name, m, f"{eps_l:.2f}", _pm(p[m], "precision"), _pm(p[m], "re"), _pm(p[m], "ncr")]
            )
    L += _table(rows, ["dataset", "method", "local ε (total)", "precision", "RE", "NCR"])
    gains = []
    for name, sw in res["eps_sweep"].items():
        p = sw["points"].get("1.0")
        if p and "GFIM-shuffle" in p:
            gains.append(
                f"{name}: precision {p['GFIM']['precision']:.3f} → "
                f"{p['GFIM-shuffle']['precision']:.3f}, RE {p['GFIM']['re']:.3f} → "
                f"{p['GFIM-shuffle']['re']:.3f}"
            )
    el = [v["gfim_eps_local"] for v in res["shuffle_eps_local_at_eps_c_1"].values()]
    L += [
        "",
        "Gain of the shuffle at the same ε = 1 (LDP local ε = 1 vs central ε_c = 1, "
        f"δ = {res['delta']:g}): " + "; ".join(gains) + ". With ~n/2 shuffled single-bit "
        f"reports per round the accountant certifies a local ε of {min(el):.1f}-{max(el):.1f} "
        "for GFIM, where c_ε ≈ 1, so the remaining error is mostly the sampling noise of "
        "padding-and-sampling (≈ ℓ/√(n/2) per phase).",
        "",
    ]
    cmp = []
    for name, sw in res["eps_sweep"].items():
        p = sw["points"].get("1.0")
        if p and "LDPMiner-shuffle" in p:
            g, lm = p["GFIM-shuffle"], p["LDPMiner-shuffle"]
            cmp.append(
                f"{name}: GFIM-shuffle {g['precision']:.3f} / {g['re']:.3f} vs "
                f"LDPMiner-shuffle {lm['precision']:.3f} / {lm['re']:.3f} (precision / RE)"
            )
    if cmp:
        L += [
            "Over the shuffle, splitting ε costs little (amplification makes both rounds' local"
            " ε large), while splitting users halves each round's reports: " + "; ".join(cmp) + ".",
            "",
        ]

    # ---- other datasets ------------------------------------------------------------------
    if res.get("extra"):
        L += ["## 4b. Other set-valued datasets (ε = 1 local, ε_c = 1 for -shuffle, k = 10)", ""]
        rows = []
        for name, pts in res["extra"].items():
            for m in [m for m in ORDER if m in pts]:
                rows.append(
                    [name, m, _pm(pts[m], "precision"), _pm(pts[m], "re"), _pm(pts[m], "ncr")]
                )
        L += _table(rows, ["dataset", "method", "precision", "RE", "NCR"]) + [""]

    # ---- variance, timing ----------------------------------------------------------------
    L += ["## 5. Exact variance vs empirical (Census-Income, ε = 1, k = 10, fixed candidates)", ""]
    L += non_private("The variance check's runs (fixed candidates)")
    rows = [
        [
            m,
            f"{v['ratio_f1_mean']:.3f}",
            f"{v['ratio_f1_min']:.3f}–{v['ratio_f1_max']:.3f}",
            f"{v['ratio_f2_mean']:.3f}",
            f"{v['exact_std_f1_mean']:.4f}",
            f"{v['exact_std_f2_mean']:.4f}",
            str(v["reps"]),
        ]
        for m, v in res["variance"].items()
    ]
    L += _table(
        rows,
        [
            "method",
            "emp/exact var f1 (mean)",
            "range over items",
            "emp/exact var f2 (mean)",
            "exact std f1",
            "exact std f2",
            "reps",
        ],
    )
    L += ["", "## 6. Speed (one process, wall seconds; machine shared, approximate)", ""]
    L += non_private("The timed runs")
    rows = [
        [
            n,
            str(t["users"]),
            f"{t['items_per_user_mean']:.0f}",
            f"{t['encode_round0']:.2f}",
            f"{t['analyze_round0']:.3f}",
            f"{t['encode_round1']:.2f}",
            f"{t['analyze_round1']:.3f}",
            f"{t['total']:.2f}",
        ]
        for n, t in res["timing"].items()
    ]
    L += _table(
        rows,
        [
            "data",
            "users",
            "items/user",
            "encode r0",
            "analyze r0",
            "encode r1",
            "analyze r1",
            "total",
        ],
    )
    L += [
        "",
        "## Notes and deviations",
        "",
        "- ℓ is the 90th percentile of set sizes computed from the data (the thesis assumes "
        "it known; it is not privatised).",
        "- The thesis' ε grid and the k of its ε sweep are unknown; we use the spec's grid and "
        "k = 10 (Census-Income), k = 30 (synthetic).",
        "- LDPMiner is the thesis' reading (same pipeline, all users, ε/2 per phase), not "
        "necessarily the CCS'16 original.",
        "- GFIM-ivw trades variance for selection bias (C is chosen by f1, so f1 is biased "
        "upwards on C); compare its RE with GFIM's above.",
    ]
    (out / "report.md").write_text("\n".join(L) + "\n")
