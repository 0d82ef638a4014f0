"""Markdown report of ``sdp reproduce seed000`` (see :mod:`parties.reproduce.seed000.runs`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from parties.reproduce.paper_parameters import paper_parameters_section
from parties.reproduce.seed000 import runs as S
from parties.reproduce.seed000.reference import PAPER_TABLE2, PAPER_TABLE3, PAPER_TABLE4
from parties.reproduce.seed000.runs import (
    METHODS,
    attribute_set,
    bits_per_user,
    curve_point,
    encode_timing,
)
from parties.reproduce.seed000.tables import (
    CURVES,
    LABELS,
    _claims,
    _curves,
    _eps_local_table,
    _eps_table_12_1,
    _fmt,
    _from,
    _pct,
    _pct_table,
    _plot,
    _sse_table,
    _thresholds,
)
from protocols.datasets import categorical as D


def _sse_sections(curves: dict[str, Any], accounting: str, out_dir: Path) -> list[str]:
    """One plot and SSE table per dataset under ``accounting`` (paper or tight)."""
    md: list[str] = []
    for dname, c in curves.items():
        png = f"sse_{dname}_{accounting}.png"
        _plot(c, f"{dname}: 1-way marginal SSE ({accounting} accounting)", out_dir / png)
        alt = dname if accounting == "paper" else f"{dname} {accounting}"
        md.append(f"### {dname}\n\n![{alt}]({png})\n")
        md += _sse_table(c)
        md.append("")
    return md


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
        "(`protocols/multidim/srr_ms.py`, `arr_ss.py`, `psrr_ss.py`, `multidim_baselines.py`) through the "
        "in-process trusted shuffler. Raw numbers and seeds: `results.json`.\n"
    )
    md.append("\n".join(paper_parameters_section(["adult", "kosarak", "census-income", "delta"])))
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
        "preprocessing is ours (the paper gives none): see `protocols/datasets/categorical.py`.\n"
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
    md += _sse_sections(curves_p, "paper", out_dir)
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
    md += _sse_sections(curves_t, "tight", out_dir)
    headline = {}
    if "adult" in datasets:
        ds = datasets["adult"]
        allat = list(range(ds.d))
        rows = [
            "| eps_c | estimator | eps_l paper | eps_l tight (vr) | eps_l fmt21 | SSE paper | "
            "SSE tight (vr) | reduction | SSE fmt21 | reduction |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for eps in S.EPS_GRID:
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
        "`protocols.oracles.postprocess.project_simplex`); mean SSE raw -> projected (change), paper "
        "accounting, same attribute sets as Sec. 3. The paper does not say whether it "
        "post-processed the 1-way marginals.\n"
    )
    md.append("| dataset | eps_c | " + " | ".join(LABELS[c] for c in CURVES) + " |")
    md.append("|---" * (len(CURVES) + 2) + "|")
    for dname, ds in datasets.items():
        for eps in (e for e in S.EPS_GRID if e in (0.5, 1.0)):
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
