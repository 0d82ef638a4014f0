"""``sdp costs RUN_DIR [--json] [--by-round] [--plot FILE.png]``: the run's cost ledger."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def merge_costs(run_dir: Path) -> dict[str, Any]:
    """Merge ``costs/PARTY.json`` into ``costs.json``: {parties: [...], totals_by_phase}."""
    run_dir = Path(run_dir)
    parties = []
    for f in sorted((run_dir / "costs").glob("*.json")) if (run_dir / "costs").exists() else []:
        try:
            parties.append(json.loads(f.read_text()))
        except ValueError:
            continue
    totals: dict[str, dict[str, float]] = {}
    for p in parties:
        for ph in p["phases"]:
            t = totals.setdefault(ph["phase"], {})
            for k, v in ph["totals"].items():
                t[k] = t.get(k, 0) + v
    merged = {"parties": parties, "totals_by_phase": totals}
    (run_dir / "costs.json").write_text(json.dumps(merged, indent=1))
    return merged


def load_costs(run_dir: Path) -> dict[str, Any]:
    """costs.json of a run (merging the per-party files if needed)."""
    path = Path(run_dir) / "costs.json"
    if path.exists():
        return json.loads(path.read_text())
    return merge_costs(Path(run_dir))


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def cost_table(costs: dict[str, Any], by_round: bool = False) -> Any:
    """A rich Table: per party and phase (or round): bytes, messages, rounds, CPU, wall."""
    from rich.table import Table

    t = Table(title="costs per party and phase" + (" and round" if by_round else ""))
    cols = ["party", "phase"] + (["round"] if by_round else ["rounds"])
    cols += ["sent", "recv", "msgs out", "msgs in", "cpu s", "wall s"]
    for c in cols:
        t.add_column(c, justify="right" if c not in ("party", "phase") else "left")
    for p in costs["parties"]:
        for ph in p["phases"]:
            rows = ph["rounds"] if by_round else [dict(ph["totals"], round=ph["n_rounds"])]
            for r in rows:
                if (
                    not any(r[k] for k in ("bytes_sent", "bytes_recv", "msgs_sent", "msgs_recv"))
                    and r["cpu_s"] < 0.001
                ):
                    continue
                t.add_row(
                    p["party"],
                    ph["phase"],
                    str(r["round"]),
                    _fmt_bytes(r["bytes_sent"]),
                    _fmt_bytes(r["bytes_recv"]),
                    str(r["msgs_sent"]),
                    str(r["msgs_recv"]),
                    f"{r['cpu_s']:.3f}",
                    f"{r['wall_s']:.3f}",
                )
    return t


def plot_costs(costs: dict[str, Any], path: Path) -> None:
    """Bytes sent and wall time per (phase, round), one bar group per party."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels: list[str] = []
    for p in costs["parties"]:
        for ph in p["phases"]:
            for r in ph["rounds"]:
                lab = f"{ph['phase']}/{r['round']}"
                if lab not in labels:
                    labels.append(lab)
    fig, axes = plt.subplots(2, 1, figsize=(max(6, 0.6 * len(labels) + 3), 7), sharex=True)
    x = np.arange(len(labels))
    w = 0.8 / max(1, len(costs["parties"]))
    for i, p in enumerate(costs["parties"]):
        sent = np.zeros(len(labels))
        wall = np.zeros(len(labels))
        for ph in p["phases"]:
            for r in ph["rounds"]:
                j = labels.index(f"{ph['phase']}/{r['round']}")
                sent[j] += r["bytes_sent"]
                wall[j] += r["wall_s"]
        axes[0].bar(x + i * w, sent, w, label=p["party"])
        axes[1].bar(x + i * w, wall, w, label=p["party"])
    axes[0].set_ylabel("bytes sent")
    axes[0].set_yscale("symlog")
    axes[1].set_ylabel("wall seconds")
    axes[1].set_xticks(x + 0.4 - w / 2, labels, rotation=45, ha="right")
    axes[0].legend(fontsize="small", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str]) -> int:
    """Entry of ``sdp costs``."""
    ap = argparse.ArgumentParser(prog="sdp costs", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--json", action="store_true", help="machine-readable figures")
    ap.add_argument("--by-round", action="store_true", help="one row per round")
    ap.add_argument("--plot", metavar="FILE.png", help="draw bytes and time per round per party")
    args = ap.parse_args(argv)
    run_dir = Path(args.run_dir)
    if not (run_dir / "costs").exists() and not (run_dir / "costs.json").exists():
        print(f"sdp costs: {run_dir} holds no cost ledger (costs/ or costs.json)", file=sys.stderr)
        return 2
    costs = load_costs(run_dir)
    if args.plot:
        plot_costs(costs, Path(args.plot))
    if args.json:
        print(json.dumps(costs, indent=1))
    else:
        from parties.runtime.ui import console

        console().print(cost_table(costs, by_round=args.by_round))
    return 0
