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
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from protocols import datasets as D
from protocols.base import simulate
from protocols.calm import CalmLDP, kway_queries, kway_sse, true_marginals
from protocols.calm_shuffle import CalmShuffle, published_tables
from protocols.fourier_marginals import FourierMarginals
from protocols.rng import experiment_rng
from protocols.synthetic_data import synthesize

EPS_GRID = tuple(round(0.1 * i, 1) for i in range(1, 11))
SHUFFLE = ("srr-ms", "arr-ss", "psrr-ss")
LABELS = {
    "calm": "Calm (LDP)",
    "ft": "FT (LDP)",
    "srr-ms/paper": "Calm_SRR-MS",
    "arr-ss/paper": "Calm_ARR-SS",
    "psrr-ss/paper": "Calm_PSRR-SS",
    "srr-ms/tight": "Calm_SRR-MS (tight)",
    "arr-ss/tight": "Calm_ARR-SS (tight)",
    "psrr-ss/tight": "Calm_PSRR-SS (tight)",
    "non-private": "non-private",
}
QUICK_SKIP = ("srr-ms/tight", "arr-ss/tight")
PAPER_CLAIMS = {
    "C10": "Kosarak: Calm_PSRR-SS up to ~10^2 below Calm and ~10^3 below FT; Calm_SRR-MS and "
    "Calm_ARR-SS feasible only for eps_c >= 0.5 and better than Calm and FT for eps_c >= 0.6; "
    "FT's SSE > 1 at eps_c = 0.1.",
    "C11": "Mexico: Calm_PSRR-SS ~10^2 below Calm and FT (only these three compared).",
    "C12": "SGD (Mexico): Calm_SRR-MS and Calm_ARR-SS feasible only for eps_c >= 0.6 (LR, SVM); "
    "for eps_c > 0.8 both below Calm with ARR-SS < SRR-MS; Calm_PSRR-SS close to non-private; "
    "Calm_ARR-SS infeasible for linear regression.",
}


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
    from protocols.sgd_models import evaluate_models, income_threshold, load_census_learning

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


# ---------------------------------------------------------------- report
def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def sse_table(res: dict[str, Any], grid: tuple[float, ...]) -> list[str]:
    """Markdown table: 3-way SSE per method (rows) and eps_c (columns)."""
    lines = [
        "| method | " + " | ".join(str(e) for e in grid) + " |",
        "|---" * (len(grid) + 1) + "|",
    ]
    for key, pts in res["points"].items():
        lines.append(
            f"| {LABELS[key]} | " + " | ".join(_fmt(pts[str(e)].get("sse")) for e in grid) + " |"
        )
    return lines


def params_table(res: dict[str, Any], grid: tuple[float, ...]) -> list[str]:
    """Markdown table: chosen (w, m) and local epsilon per method and eps_c."""
    lines = [
        "| method | " + " | ".join(str(e) for e in grid) + " |",
        "|---" * (len(grid) + 1) + "|",
    ]
    for key, pts in res["points"].items():
        if key == "ft":
            cells = [f"T={pts[str(e)]['coefficients']}" for e in grid]
        else:
            cells = [
                "infeasible"
                if "infeasible" in pts[str(e)]
                else f"w={pts[str(e)]['w']}, m={pts[str(e)]['m']}, eps_l={pts[str(e)]['eps_l']:.2f}"
                for e in grid
            ]
        lines.append(f"| {LABELS[key]} | " + " | ".join(cells) + " |")
    return lines


def ratio(res: dict[str, Any], num: str, den: str, eps: float) -> float | None:
    """SSE(num) / SSE(den) at eps (None if either is missing)."""
    a = res["points"].get(num, {}).get(str(eps), {}).get("sse")
    b = res["points"].get(den, {}).get(str(eps), {}).get("sse")
    return None if a is None or b is None or b == 0 else a / b


def feasible_from(res: dict[str, Any], key: str, grid: tuple[float, ...]) -> float | str:
    """Smallest eps_c with a result."""
    if key not in res["points"]:
        return "not run"
    ok = [e for e in grid if res["points"][key][str(e)].get("sse") is not None]
    return min(ok) if ok else "never (in the grid)"


def plot_sse(res: dict[str, Any], grid: tuple[float, ...], title: str, path: Path) -> None:
    """Log-scale SSE curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for key, pts in res["points"].items():
        xs = [e for e in grid if pts[str(e)].get("sse") is not None]
        if xs:
            ls = "--" if key.endswith("/tight") else "-"
            ax.plot(xs, [pts[str(e)]["sse"] for e in xs], ls, marker="o", ms=3, label=LABELS[key])
    ax.set_yscale("log")
    ax.set_xlabel("eps_c")
    ax.set_ylabel("3-way marginal SSE (mean over C(d,3))")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_sgd(res: dict[str, Any], grid: tuple[float, ...], path: Path) -> None:
    """Three panels: linear MSE, logistic and SVM misclassification versus eps_c."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = (
        ("linear_mse", "linear regression MSE"),
        ("logistic_misclassification", "logistic regression error"),
        ("svm_misclassification", "SVM error"),
    )
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (m, name) in zip(axes, metrics, strict=True):
        for key, pts in res["points"].items():
            xs = [e for e in grid if m in pts[str(e)]]
            if xs:
                ls = "--" if key.endswith("/tight") else "-"
                ax.plot(xs, [pts[str(e)][m] for e in xs], ls, marker="o", ms=3, label=LABELS[key])
        ax.axhline(res["non_private"][m], color="k", lw=1, label="non-private")
        ax.set_xlabel("eps_c")
        ax.set_title(name)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def sgd_table(res: dict[str, Any], grid: tuple[float, ...], metric: str) -> list[str]:
    """Markdown table of one SGD metric."""
    lines = [
        "| method | " + " | ".join(str(e) for e in grid) + " |",
        "|---" * (len(grid) + 1) + "|",
    ]
    for key, pts in res["points"].items():
        lines.append(
            f"| {LABELS[key]} | " + " | ".join(_fmt(pts[str(e)].get(metric)) for e in grid) + " |"
        )
    lines.append(
        "| non-private | " + " | ".join(_fmt(res["non_private"][metric]) for _ in grid) + " |"
    )
    return lines


def checks(results: dict[str, Any]) -> list[str]:
    """The issue's two acceptance checks, computed from the results."""
    out = []
    for name in ("kosarak-synthetic", "census-income"):
        res = results["marginals"].get(name)
        if not res or "1.0" not in next(iter(res["points"].values())):
            continue
        for acc in ("paper", "tight"):
            rc, rf = (
                ratio(res, "calm", f"psrr-ss/{acc}", 1.0),
                ratio(res, "ft", f"psrr-ss/{acc}", 1.0),
            )
            ok = rc is not None and rf is not None and min(rc, rf) >= 10
            out.append(
                f"- {name}, eps_c = 1, {acc} accounting: SSE(Calm)/SSE(Calm_PSRR-SS) = {_fmt(rc)}, "
                f"SSE(FT)/SSE(Calm_PSRR-SS) = {_fmt(rf)}: **{'PASS' if ok else 'FAIL'}** (>= 10x)"
            )
    sgd = results.get("sgd")
    if sgd and "1.0" in sgd["points"]["psrr-ss/tight"]:
        lr = sgd["points"]["psrr-ss/tight"]["1.0"].get("logistic_misclassification")
        ref = sgd["non_private"]["logistic_misclassification"]
        ok = lr is not None and abs(lr - ref) <= 0.05
        out.append(
            f"- SGD, eps_c = 1, tight accounting: logistic misclassification on Calm_PSRR-SS synthetic "
            f"data {_fmt(lr)} vs non-private {_fmt(ref)} (difference {100 * (lr - ref):.2f} points): "
            f"**{'PASS' if ok else 'FAIL'}** (within 5 points)"
        )
    return out


CHOICES = """## Choices (the paper defers them to Calm [20] and FT [21])

- **Calm** (`protocols/calm.py`): published attribute sets = greedy covering designs of all
  attribute pairs (t = 2, PriView/Calm) or of all 3-sets (t = 3), w in 2..4, at most 4,096 cells
  per marginal. (w, m) minimise Calm's modelled error of a 3-way query, noise (c v / r for a
  query inside r published marginals of c cells; v = the per-cell variance of the mechanism)
  plus a reconstruction error r0 = 2e-5 per uncovered query (the order of the max-ent error of
  3-way marginals rebuilt from exact 2-way ones on these datasets, 0.3-1.6e-5). Users are split
  into m groups; adaptive oracle: GRR if c < 3e^eps + 2, otherwise OUE (Calm uses OLH; OUE has
  the same variance). Post-processing: Norm-Sub and PriView's overlap consistency (inverse-
  variance weights, subsets before supersets), 3 rounds, final Norm-Sub. 3-way answers: the
  projection of a covering marginal, otherwise maximum entropy (IPF) from the overlaps.
- **Calm_X** (`protocols/calm_shuffle.py`): the m marginals are the "attributes" of SRR-MS /
  ARR-SS / PSRR-SS (domains = products); the (w, m) choice uses the shuffled mechanism's exact
  per-cell variance (with the attribute-sampling floor), so amplification buys more or wider
  marginals. Paper accounting = the closed-form Balle bound (Calculate), strict policy;
  tight = the DP core's variation-ratio accountant for the RR actually run. Paper estimator (n/d).
- **FT** (`protocols/fourier_marginals.py`): binary-encoded attributes (ceil(log2 k) bits), all
  Fourier coefficients touching 1..3 attributes; each user reports one uniformly sampled
  coefficient's sign with binary RR at eps; unbiased coefficients averaged over their reports;
  marginals by the inverse Walsh-Hadamard transform, no post-processing.
- **Metric**: the SSE of one 3-way marginal (sum over its cells), averaged over all C(d, 3)
  marginals (the paper does not say whether it sums or averages; Calm reports averages).
- **Synthetic data** (`protocols/synthetic_data.py`): records drawn from the maximum-entropy
  joint distribution fitted (IPF) to the published marginals (the 6-attribute learning domain
  has 90,720 cells); a sequential conditional generator serves larger domains (`sdp run`).
- **SGD** (`protocols/sgd_models.py`): Census-Income has no numeric income; weeks worked in
  year (0-52) is the stand-in, 10 equal-width bins; label = bin above the real training mean
  bin. Features: age, class of worker, marital status, sex, tax filer status, dummy-coded
  (28 + intercept), rows scaled to norm <= 1. Mini-batch 32, eta_t = 1/sqrt(t), averaged last-
  epoch iterate, L2 1e-4 for the hinge loss. 80/20 split; synthetic data has the training size.
- **Data**: Kosarak = 65,536 users bootstrapped from the 8 most frequent items of the FIMI head
  (the paper's n); Census-Income (KDD), 200,000 rows, 13 attributes, k_max = 9 (spec: Mexico).
  delta = 1/n throughout.
"""

EXPLAIN = """## Differences from the paper, explained

- **Magnitudes.** The paper's Fig. 5-6 numbers are not available (figures missing from the
  text), only the orders of magnitude; our ratios depend on our (w, m) choice and r0, on the
  averaging of the SSE over the C(d, 3) marginals, and on the stand-in datasets.
- **FT is much worse on Census than on Kosarak**: binary encoding turns a 3-way marginal of
  non-binary attributes into up to 12 bits, so T is ~1.6e5 coefficients and each gets ~1 report;
  the paper only says FT is the worst method (three orders of magnitude).
- **Calm_SRR-MS / Calm_ARR-SS feasibility** follows from Calculate with the chosen marginals:
  SRR-MS's per-group population n/m and ARR-SS's union domain sum_i c_i need eps_c^2 (n/m - 1) /
  (14 ln(2/delta)) > c_i, resp. eps_c^2 (n - 1) / (14 ln(2/delta)) > sum_i c_i. On Census (cells
  up to 81 per pair marginal, sum over 78 pairs) neither is feasible at eps_c <= 1 under the
  paper's bound, which is why the paper compares only Calm_PSRR-SS with Calm and FT on Mexico;
  with tight accounting they become feasible.
- **Calm_PSRR-SS on Census at small eps_c**: pair marginals of 9-valued attributes have up to
  81 cells, so PSRR-SS's padded domain is k_max = 81 and the closed-form bound needs
  eps_c > sqrt(81 * 14 ln(2/delta) / (n - 1)) = 0.27; the paper's Mexico marginals are not given.
  Under tight accounting Calm_PSRR-SS is feasible over the whole grid.
- **FT at eps_c = 0.1 on Kosarak** is below 1 here because the SSE is averaged over the 56
  marginals and each coefficient is normalised by its own report count; summed over the 56
  marginals (see C10 above) it exceeds 1 as in the paper.
- **SGD feasibility**: the learning subset's pair marginals include income x feature tables of
  up to 90 cells; with m = 15 groups of ~10,700 users the closed-form bound gives
  X = eps_c^2 (n/m - 1) / (14 ln(2/delta)) ~ 60 eps_c^2 < 90, so Calm_SRR-MS has no local
  epsilon at eps_c <= 1, and ARR-SS's union domain (sum of the 15 cell counts) fits only at
  eps_c = 1. The paper's Calm apparently published fewer or narrower marginals (feasible from
  0.6); our choice rule always covers every attribute pair. Tight accounting makes both
  feasible everywhere.
- **SGD gaps**: weeks worked replaces income, so the prediction task, the error levels and the
  gaps between methods differ from Mexico's. Calm (LDP) is clearly worse than non-private at
  small eps_c (logistic error 0.10-0.20 at eps_c <= 0.5) and noisy (2 repetitions), while every
  shuffled variant stays within about half a point of the non-private model: the labels depend
  mostly on two-way structure that w >= 2 marginals with little noise capture.
"""


def claims_section(
    results: dict[str, Any], grid: tuple[float, ...], cgrid: tuple[float, ...]
) -> list[str]:
    """Each paper claim next to what we measured."""
    lines = ["## Paper's claims next to ours", ""]
    kos = results["marginals"].get("kosarak-synthetic")
    if kos:
        rc = [ratio(kos, "calm", "psrr-ss/paper", e) for e in grid]
        rf = [ratio(kos, "ft", "psrr-ss/paper", e) for e in grid]
        rc = [x for x in rc if x]
        rf = [x for x in rf if x]
        beat = [
            e
            for e in grid
            if e >= 0.6
            and all(
                (s := kos["points"][f"{m}/paper"][str(e)].get("sse")) is not None
                and s
                < min(kos["points"]["calm"][str(e)]["sse"], kos["points"]["ft"][str(e)]["sse"])
                for m in ("srr-ms", "arr-ss")
            )
        ]
        ft01 = kos["points"]["ft"].get("0.1", {}).get("sse")
        lines += [
            f"- **C10** (paper): {PAPER_CLAIMS['C10']}",
            f"  - ours: Calm/Calm_PSRR-SS up to {_fmt(max(rc) if rc else None)}x, FT/Calm_PSRR-SS up to "
            f"{_fmt(max(rf) if rf else None)}x; Calm_SRR-MS feasible from eps_c = "
            f"{_fmt(feasible_from(kos, 'srr-ms/paper', grid))}, Calm_ARR-SS from "
            f"{_fmt(feasible_from(kos, 'arr-ss/paper', grid))}; both below Calm and FT at eps_c in "
            f"{beat or 'none'} (of those >= 0.6 in the grid); FT SSE at 0.1: {_fmt(ft01)} "
            f"(summed over the {math.comb(kos['d'], 3)} marginals: "
            f"{_fmt(None if ft01 is None else ft01 * math.comb(kos['d'], 3))}).",
        ]
    cen = results["marginals"].get("census-income")
    if cen:
        rc = [x for x in (ratio(cen, "calm", "psrr-ss/paper", e) for e in cgrid) if x]
        rf = [x for x in (ratio(cen, "ft", "psrr-ss/paper", e) for e in cgrid) if x]
        lines += [
            f"- **C11** (paper): {PAPER_CLAIMS['C11']}",
            f"  - ours (Census-Income): Calm/Calm_PSRR-SS {_fmt(min(rc) if rc else None)}-"
            f"{_fmt(max(rc) if rc else None)}x, FT/Calm_PSRR-SS {_fmt(min(rf) if rf else None)}-"
            f"{_fmt(max(rf) if rf else None)}x over the grid; Calm_SRR-MS feasible from "
            f"{_fmt(feasible_from(cen, 'srr-ms/paper', cgrid))}, Calm_ARR-SS from "
            f"{_fmt(feasible_from(cen, 'arr-ss/paper', cgrid))} (paper accounting).",
        ]
    sgd = results.get("sgd")
    if sgd:
        sg = tuple(float(e) for e in next(iter(sgd["points"].values())))
        pts = sgd["points"]

        def feas(key: str) -> float | str:
            ok = [e for e in sg if "logistic_misclassification" in pts[key][str(e)]]
            return min(ok) if ok else "never (in the grid)"

        hi = [e for e in sg if e > 0.8]
        cmp_ = []
        for e in hi:
            p = {
                k: pts[k][str(e)].get("logistic_misclassification")
                for k in ("calm", "srr-ms/paper", "arr-ss/paper")
            }
            cmp_.append(f"eps_c={e}: " + ", ".join(f"{LABELS[k]} {_fmt(v)}" for k, v in p.items()))
        gap = [
            abs(
                pts["psrr-ss/paper"][str(e)]["logistic_misclassification"]
                - sgd["non_private"]["logistic_misclassification"]
            )
            for e in sg
            if "logistic_misclassification" in pts["psrr-ss/paper"][str(e)]
        ]
        lines += [
            f"- **C12** (paper): {PAPER_CLAIMS['C12']}",
            f"  - ours: Calm_SRR-MS feasible from {_fmt(feas('srr-ms/paper'))}, Calm_ARR-SS from "
            f"{_fmt(feas('arr-ss/paper'))} (paper accounting; one marginal set serves all three models, "
            "so linear regression has the same feasibility); logistic errors for eps_c > 0.8: "
            f"{'; '.join(cmp_) or 'not in grid'}; Calm_PSRR-SS within "
            f"{_fmt(100 * max(gap) if gap else None)} points of non-private (logistic, paper accounting).",
        ]
    return lines + [""]


def write_report(
    out: Path,
    results: dict[str, Any],
    grid: tuple[float, ...],
    cgrid: tuple[float, ...],
    sgrid: tuple[float, ...],
) -> None:
    """report.md with tables, plots, checks, claims, choices."""
    md = [
        "# Seed 000: k-way marginals and synthetic data from shuffled reports",
        "",
        f"Repetitions: {results['reps']} (Kosarak), {results['census_reps']} (Census-Income and SGD); "
        f"seed {results['seed']}; {'quick' if results['quick'] else 'full'} run in {results['seconds']:.0f} s. "
        "Every Calm_X run goes through the protocols' own encode/analyze with the in-process "
        "trusted shuffler (`protocols.base.simulate`).",
        "",
        "## Checks required by the issue",
        "",
        *checks(results),
        "",
    ]
    for name, g, title in (
        ("kosarak-synthetic", grid, "Kosarak (n = 65,536, d = 8, binary)"),
        ("census-income", cgrid, "Census-Income (n = 200,000, d = 13, k_max = 9)"),
    ):
        res = results["marginals"].get(name)
        if not res:
            continue
        png = f"sse3_{name}.png"
        plot_sse(res, g, f"3-way marginals, {title}", out / png)
        md += [
            f"## 3-way marginal SSE: {title}",
            "",
            f"![]({png})",
            "",
            *sse_table(res, g),
            "",
            "Chosen parameters:",
            "",
            *params_table(res, g),
            "",
        ]
    sgd = results.get("sgd")
    if sgd:
        plot_sgd(sgd, sgrid, out / "sgd.png")
        md += [
            "## SGD on synthetic data (Census-Income learning subset)",
            "",
            f"Train (synthetic source) {sgd['n_train']} records, real test {sgd['n_test']}; label "
            f"threshold (mean income bin) {sgd['threshold']:.3f}.",
            "",
            "![](sgd.png)",
            "",
            "Linear regression, MSE on the 10 income bins (SSE / n_test):",
            "",
            *sgd_table(sgd, sgrid, "linear_mse"),
            "",
            "Logistic regression, misclassification rate:",
            "",
            *sgd_table(sgd, sgrid, "logistic_misclassification"),
            "",
            "Linear SVM, misclassification rate:",
            "",
            *sgd_table(sgd, sgrid, "svm_misclassification"),
            "",
        ]
    md += claims_section(results, grid, cgrid)
    md += [CHOICES, EXPLAIN]
    (out / "report.md").write_text("\n".join(md))


def main(argv: list[str]) -> int:
    """Entry point of ``sdp reproduce seed000-marginals``."""
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
