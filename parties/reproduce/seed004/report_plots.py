"""PNG plots of the seed-004 reproduction: Fig. 7 (defaults) and Figs. 8-15 (sweeps), each with
RMSE, analyzer seconds and messages per user (log scales, like the survey's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parties.reproduce.seed004.methods import METHODS

FIGS = {
    "fig8_count_eps": "Fig. 8: counting vs eps_c",
    "fig9_count_n": "Fig. 9: counting vs n",
    "fig10_count_q": "Fig. 10: counting vs q",
    "fig11_hist_eps": "Fig. 11: histograms vs eps_c",
    "fig12_hist_d": "Fig. 12: histograms vs d",
    "fig13_hist_n": "Fig. 13: histograms vs n",
    "fig14_sum_eps": "Fig. 14: sums vs eps_c",
    "fig15_sum_n": "Fig. 15: sums vs n",
}
PANELS = (
    ("rmse", "RMSE"),
    ("analyzer_seconds", "analyzer s"),
    ("messages_per_user", "messages/user"),
)


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_sweep(res: dict[str, Any], key: str, path: Path) -> None:
    """Three panels for one sweep, one line per method."""
    plt = _plt()
    sw = res["sweeps"][key]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    methods = sorted({r["method"] for r in sw["rows"]}, key=list(METHODS).index)
    for name in methods:
        rs = [r for r in sw["rows"] if r["method"] == name and r.get("status") == "ok"]
        if not rs:
            continue
        style = "-" if METHODS[name].kind == "shuffle" else "--"
        for ax, (field, _) in zip(axes, PANELS):
            pts = [(r["value"], r[field]) for r in rs if r.get(field) not in (None, 0)]
            if pts:
                ax.plot(*zip(*pts), style, marker="o", label=METHODS[name].label)
    for ax, (_, label) in zip(axes, PANELS):
        ax.set_yscale("log")
        ax.set_xlabel(sw["param"])
        ax.set_ylabel(label)
        if sw["param"] in ("n", "d"):
            ax.set_xscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.suptitle(FIGS[key])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_defaults(res: dict[str, Any], path: Path) -> None:
    """Fig. 7: bars of the three metrics for every method, one row per problem."""
    plt = _plt()
    fig, axes = plt.subplots(3, 3, figsize=(15, 10))
    for row, problem in enumerate(("count", "hist", "sum")):
        names = [k for k, m in METHODS.items() if m.problem == problem]
        for col, (field, label) in enumerate(PANELS):
            ax = axes[row][col]
            vals = [res["methods"][k].get(field) or 0 for k in names]
            ax.bar(
                range(len(names)),
                vals,
                color=["C0" if METHODS[k].kind == "shuffle" else "C7" for k in names],
            )
            ax.set_xticks(
                range(len(names)),
                [METHODS[k].label for k in names],
                rotation=45,
                ha="right",
                fontsize=7,
            )
            ax.set_yscale("symlog" if field == "messages_per_user" else "log")
            ax.set_title(f"{problem}: {label}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_all(res: dict[str, Any], out: Path) -> list[str]:
    """Every plot into ``out``; returns the file names."""
    names = ["fig7_defaults.png"]
    plot_defaults(res, out / names[0])
    for key in FIGS:
        plot_sweep(res, key, out / f"{key}.png")
        names.append(f"{key}.png")
    return names
