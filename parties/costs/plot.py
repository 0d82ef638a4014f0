"""``sdp costs RUN --plot FILE``: a timeline per party with the protocol rounds' boundaries,
then bytes and CPU per (protocol round, step) in protocol order.

Phases are coloured by *family* (at most eight, :data:`FAMILIES`) from the Okabe-Ito palette,
which stays distinguishable under the common colour-vision deficiencies. The format follows
FILE's extension: vector ``.pdf`` and ``.svg`` for papers, ``.png`` and ``.jpg`` raster; any
other extension is refused before anything is drawn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

KINDS = ("payload", "framing", "sealing", "mpyc")
# extension -> matplotlib format; nothing else is written
FORMATS = {".pdf": "pdf", ".svg": "svg", ".png": "png", ".jpg": "jpg", ".jpeg": "jpg"}
# Okabe & Ito (2008), "Color Universal Design": eight colours safe for colour-blind readers
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
             "#999999")  # fmt: skip
# (family, phases or phase prefixes) in protocol order; a phase matches the first entry
FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("setup and close", ("setup", "close")),
    ("round state and encoding", ("state", "encode")),
    ("keys", ("dkg", "mix.key")),
    ("submission", ("submit", "mix.submit", "mpc-submit", "mpc-receive", "mpc-agree")),
    ("shuffle", ("shuffle", "mix.shuffle", "mpc-shuffle", "deliver")),
    ("verification and decryption", ("mix.verify", "mix.decrypt", "mpc-output")),
    ("analysis and publication", ("mix.result", "analyze", "mpc-analyze", "publish")),
    ("other (txpub LM, ...)", ()),
)
FAMILY_ORDER = {name: i for i, (name, _) in enumerate(FAMILIES)}
# the order of phases within a protocol round (unknown phases after them, in family order)
PROTOCOL_ORDER = ("setup", "state", "encode", "dkg", "mix.key", "submit", "mix.submit",
                  "mpc-receive", "mpc-submit", "mpc-agree", "shuffle", "deliver", "mix.shuffle",
                  "mpc-shuffle", "mix.verify", "mix.decrypt", "mpc-output", "mix.result",
                  "mpc-analyze", "analyze", "publish", "lm", "ls", "close")  # fmt: skip


def check_format(path: Path) -> str:
    """The matplotlib format of ``path``; a ValueError names the accepted extensions."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ValueError(
            f"unknown figure format {Path(path).suffix or '(no extension)'!r}: "
            "use .pdf or .svg (vector), .png or .jpg"
        )
    return fmt


def family(phase: str) -> str:
    """The phase's family (the last, 'other', for phases no family names)."""
    for name, members in FAMILIES:
        if phase in members:
            return name
    return FAMILIES[-1][0]


def _phase_rank(phase: str) -> tuple[int, int]:
    """Protocol order within a round (:data:`PROTOCOL_ORDER`, then unknown phases by family)."""
    if phase in PROTOCOL_ORDER:
        return PROTOCOL_ORDER.index(phase), 0
    return len(PROTOCOL_ORDER), FAMILY_ORDER[family(phase)]


def ordered_steps(costs: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, step) of every step with bytes or CPU, in protocol order: by protocol round,
    then family, phase and step number (not by the time they finished)."""
    out = []
    for r in costs.get("rounds", []):
        steps = [s for s in r["steps"] if s.get("bytes_sent") or s.get("cpu_s", 0) >= 0.005]
        steps.sort(key=lambda s: (*_phase_rank(s["phase"]), s["step"]))
        for s in steps:
            label = f"r{r['round']} {s['phase']}" + (f" #{s['step']}" if s["step"] else "")
            out.append((label, s))
    return out


def _title(costs: dict[str, Any]) -> str:
    from parties.costs.report import network_line

    job = costs.get("job") or {}
    load = (costs.get("load") or {}).get("under_load")
    cp = costs.get("critical_path") or {}
    return (
        f"{job.get('protocol', '?')} via {job.get('shuffler', '?')}, {job.get('users', '?')} "
        f"users, {len(costs['parties'])} parties; {network_line(costs).removeprefix('network: ')}"
        f"; {cp.get('one_way_hops', '?')} one-way hops"
        + ("; MEASURED UNDER LOAD" if load else "")
    )


def plot_costs(costs: dict[str, Any], path: Path) -> None:
    """Three panels: (1) per party, its time in each phase as bars on the run's time axis (dark:
    the row's CPU share; light: waiting or idle), the protocol rounds' starts as dashed lines;
    (2) bytes sent per (round, step), split into payload, framing, sealing and MPyC (log
    scale); (3) CPU seconds per (round, step), stacked by party. Steps in protocol order."""
    fmt = check_format(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    parties = costs["parties"]
    t0 = costs.get("t0") or 0.0
    fams: list[str] = []
    for p in parties:
        for row in p.get("rows", []):
            f = family(row["phase"])
            if f not in fams and any(b > a for a, b in row.get("spans", [])):
                fams.append(f)
    fams.sort(key=FAMILY_ORDER.__getitem__)
    colour = {name: OKABE_ITO[FAMILY_ORDER[name]] for name in fams}
    steps = ordered_steps(costs)
    fig, axes = plt.subplots(
        3,
        1,
        figsize=(7.5, 2.2 + 0.28 * len(parties) + 0.36 * len(steps)),
        gridspec_kw={
            "height_ratios": [max(1.6, 0.28 * len(parties)), 0.18 * len(steps) + 0.6,
                              0.18 * len(steps) + 0.6],  # fmt: skip
        },
    )
    ax = axes[0]
    for i, p in enumerate(parties):
        for row in p.get("rows", []):
            busy = min(1.0, row["cpu_s"] / row["wall_s"]) if row["wall_s"] > 0 else 0.0
            c = colour.get(family(row["phase"]))
            for a, b in row.get("spans", []):
                if b - a <= 0 or c is None:
                    continue
                ax.barh(i, b - a, left=a - t0, height=0.8, color=c, alpha=0.35, linewidth=0)
                ax.barh(i, (b - a) * busy, left=a - t0, height=0.8, color=c, linewidth=0)
    for r in costs.get("rounds", []):
        if r.get("start") is None:
            continue
        x = r["start"] - t0
        ax.axvline(x, color="black", linestyle="--", linewidth=0.8)
        ax.text(x, -0.7, f" round {r['round']}", fontsize="small", va="bottom", ha="left")
    ax.set_yticks(range(len(parties)), [p["party"] for p in parties], fontsize="small")
    ax.set_ylim(len(parties) - 0.4, -0.9)
    ax.set_xlim(left=0)
    ax.set_xlabel("seconds since the run started (dark: CPU busy share; light: waiting or idle)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[f]) for f in fams]
    ax.legend(handles, fams, fontsize="x-small", ncol=min(4, len(fams)), loc="lower center",
              bbox_to_anchor=(0.5, 1.08), frameon=False)  # fmt: skip
    y = np.arange(len(steps))
    labels = [lab for lab, _ in steps]
    left = np.zeros(len(steps))
    kind_colour = dict(zip(KINDS, (OKABE_ITO[4], OKABE_ITO[0], OKABE_ITO[6], OKABE_ITO[2])))
    for kind in KINDS:
        vals = np.array([s.get(f"{kind}_sent", 0) for _, s in steps], dtype=float)
        if vals.any():
            axes[1].barh(y, vals, left=left, label=kind, color=kind_colour[kind], linewidth=0)
            left += vals
    axes[1].set_xscale("log")
    axes[1].set_xlim(left=max(1.0, 0.5 * min((v for v in left if v > 0), default=1.0)))
    axes[1].set_xlabel("bytes sent, all parties (log scale)")
    axes[1].legend(fontsize="x-small", loc="lower right")
    left = np.zeros(len(steps))
    shades = OKABE_ITO[:7]
    for i, p in enumerate(parties):
        vals = np.array(
            [(s["parties"].get(p["party"]) or {}).get("cpu_s") or 0.0 for _, s in steps]
        )
        if vals.any():
            axes[2].barh(y, vals, left=left, label=p["party"], color=shades[i % len(shades)],
                         linewidth=0, hatch="//" if i >= len(shades) else None)  # fmt: skip
            left += vals
    axes[2].set_xlabel("CPU seconds, stacked by party")
    axes[2].legend(fontsize="x-small", ncol=3, loc="lower right")
    for a in axes[1:]:
        a.set_yticks(y, labels, fontsize="x-small")
        a.set_ylim(len(steps) - 0.5, -0.5)
        a.grid(axis="x", linewidth=0.3, alpha=0.5)
    for a in axes:
        a.spines[["top", "right"]].set_visible(False)
    fig.suptitle(_title(costs), fontsize="small")
    fig.tight_layout()
    fig.savefig(Path(path), dpi=150, format=fmt)
    plt.close(fig)
