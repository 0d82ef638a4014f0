"""``sdp costs RUN --plot``: a timeline per party, bytes per round/step and CPU per round/step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

KINDS = ("payload", "framing", "sealing", "mpyc")


def _label(r: dict[str, Any], s: dict[str, Any]) -> str:
    return f"r{r['round']} {s['phase']}" + (f"#{s['step']}" if s["step"] else "")


def plot_costs(costs: dict[str, Any], path: Path) -> None:
    """Three panels: (1) per party, its time in each phase as bars on the run's time axis, the
    busy share (CPU / wall of the row) dark and the rest (waiting, idle) light; (2) bytes sent
    per (round, step), split into payload, framing, sealing and MPyC; (3) CPU seconds per
    (round, step), stacked by party. PNG, or SVG if ``path`` ends in .svg (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    parties = costs["parties"]
    t0 = costs.get("t0") or 0.0
    phases: list[str] = []
    for p in parties:
        for row in p.get("rows", []):
            if row["phase"] not in phases and any(b > a for a, b in row.get("spans", [])):
                phases.append(row["phase"])
    palette = list(plt.get_cmap("tab10").colors) + list(plt.get_cmap("Dark2").colors)
    colour = {ph: palette[i % len(palette)] for i, ph in enumerate(phases)}
    # per protocol round, steps in the order they finished (a step that waits from the start,
    # such as the analyzer's result, sits where its result arrived)
    steps = [
        (_label(r, s), s)
        for r in costs.get("rounds", [])
        for s in sorted(r["steps"], key=lambda s: s.get("end") or 0.0)
        if s.get("bytes_sent") or s.get("cpu_s", 0) >= 0.005
    ]
    fig, axes = plt.subplots(
        3,
        1,
        figsize=(12, 3 + 0.35 * len(parties) + 6),
        gridspec_kw={"height_ratios": [max(2.0, 0.35 * len(parties)), 3, 3]},
    )
    ax = axes[0]
    for i, p in enumerate(parties):
        for row in p.get("rows", []):
            busy = min(1.0, row["cpu_s"] / row["wall_s"]) if row["wall_s"] > 0 else 0.0
            for a, b in row.get("spans", []):
                if b - a <= 0 or row["phase"] not in colour:
                    continue
                ax.barh(i, b - a, left=a - t0, height=0.8, color=colour[row["phase"]], alpha=0.3)
                ax.barh(i, (b - a) * busy, left=a - t0, height=0.8, color=colour[row["phase"]])
    ax.set_yticks(range(len(parties)), [p["party"] for p in parties])
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the run started (dark: CPU busy share, light: waiting/idle)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[ph]) for ph in phases]
    ax.legend(
        handles,
        phases,
        fontsize="x-small",
        ncol=min(8, len(phases)),
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        frameon=False,
    )
    x = np.arange(len(steps))
    labels = [lab for lab, _ in steps]
    bottom = np.zeros(len(steps))
    for kind in KINDS:
        vals = np.array([s.get(f"{kind}_sent", 0) for _, s in steps], dtype=float)
        if vals.any():
            axes[1].bar(x, vals, bottom=bottom, label=kind)
            bottom += vals
    axes[1].set_ylabel("bytes sent (all parties)")
    axes[1].set_yscale("symlog")
    axes[1].legend(fontsize="small")
    bottom = np.zeros(len(steps))
    for p in parties:
        vals = np.array(
            [(s["parties"].get(p["party"]) or {}).get("cpu_s") or 0.0 for _, s in steps]
        )
        if vals.any():
            axes[2].bar(x, vals, bottom=bottom, label=p["party"])
            bottom += vals
    axes[2].set_ylabel("CPU seconds")
    axes[2].legend(fontsize="x-small", ncol=4)
    for a in axes[1:]:
        a.set_xticks(x, labels, rotation=45, ha="right", fontsize="small")
    job = costs.get("job") or {}
    net = costs.get("network") or {}
    netdesc = (
        f"rtt {net.get('rtt_ms', 0):g} ms, rate {net.get('rate_mbit', 0):g} Mbit/s"
        if "rtt_ms" in net
        else "loopback, no emulation"
    )
    fig.suptitle(
        f"{costs.get('run', '')}: {job.get('protocol', '?')} via {job.get('shuffler', '?')}, "
        f"{job.get('users', '?')} users, {len(parties)} parties; {netdesc}"
    )
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110, format="svg" if path.suffix.lower() == ".svg" else "png")
    plt.close(fig)
