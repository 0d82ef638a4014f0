"""``sdp costs RUN_DIR [--json] [--by-round] [--plot [FILE]]`` and ``sdp costs --model RUNS...``:
the run's cost ledger (fields: ``docs/costs.md``), its timeline, and a fitted cost model."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from parties.costs.report import (
    critical_line,
    fmt_bytes,
    load_costs,
    merge_costs,
    network_line,
    round_table,
)

__all__ = ["cost_table", "load_costs", "main", "merge_costs"]

PARTY_NOTE = (
    "per party, summed over the phase's rows (rounds and steps); wall s: the party's own time "
    "in the phase; cpu s: its process and pool workers; wait s: time with a receive pending"
)


def cost_table(costs: dict[str, Any], by_round: bool = False) -> Any:
    """A rich Table per party and phase: bytes, messages, CPU, waiting and wall seconds."""
    from rich.table import Table

    t = Table(title="costs per party and phase", caption=PARTY_NOTE)
    cols = ["party", "phase", "rows", "sent", "recv", "msgs out", "msgs in", "cpu s", "wait s"]
    for c in cols + ["wall s"]:
        t.add_column(c, justify="right" if c not in ("party", "phase") else "left")
    for p in costs["parties"]:
        for ph in p["phases"]:
            r = ph["totals"]
            if (
                not any(r[k] for k in ("bytes_sent", "bytes_recv", "msgs_sent", "msgs_recv"))
                and r["cpu_s"] < 0.001
            ):
                continue
            t.add_row(
                p["party"],
                ph["phase"],
                str(ph["n_rounds"]),
                fmt_bytes(r["bytes_sent"]),
                fmt_bytes(r["bytes_recv"]),
                str(r["msgs_sent"]),
                str(r["msgs_recv"]),
                f"{r['cpu_s']:.3f}",
                f"{r.get('wait_s', 0):.3f}",
                f"{r['wall_s']:.3f}",
            )
    return t


def main(argv: list[str]) -> int:
    """Entry of ``sdp costs``."""
    ap = argparse.ArgumentParser(prog="sdp costs", description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", metavar="RUN_DIR")
    ap.add_argument("--json", action="store_true", help="machine-readable figures")
    ap.add_argument("--by-round", action="store_true", help="group by protocol round, steps nested")
    ap.add_argument(
        "--table",
        choices=("latex", "markdown"),
        help="a cost table for papers: per party and protocol round, messages, bytes, "
        "one-way hops, CPU and wall, the run's conditions as its caption",
    )
    ap.add_argument(
        "--plot",
        nargs="?",
        const="",
        metavar="FILE",
        help="timeline, bytes and CPU per round; the format by FILE's extension: .pdf, .svg, "
        ".png, .jpg (default RUN_DIR/costs.png)",
    )
    ap.add_argument(
        "--model",
        action="store_true",
        help="fit the cost model to RUN_DIRs (one protocol and shuffler) and print it",
    )
    ap.add_argument(
        "--predict",
        action="append",
        default=[],
        metavar="n=..,k=..,t=..,rtt=..",
        help="with --model: predict a configuration (repeatable)",
    )
    ap.add_argument(
        "--validate",
        action="append",
        default=[],
        metavar="RUN_DIR",
        help="with --model: a held-out run to compare predictions with (repeatable)",
    )
    args = ap.parse_args(argv)
    for run_dir in map(Path, args.runs):
        if not (run_dir / "costs").exists() and not (run_dir / "costs.json").exists():
            print(
                f"sdp costs: {run_dir} holds no cost ledger (costs/ or costs.json)", file=sys.stderr
            )
            return 2
    if args.model:
        from parties.costs.model import model_main

        return model_main(
            [Path(r) for r in args.runs], args.predict, args.json, [Path(v) for v in args.validate]
        )
    if len(args.runs) != 1:
        print("sdp costs: one RUN_DIR (several only with --model)", file=sys.stderr)
        return 2
    run_dir = Path(args.runs[0])
    costs = load_costs(run_dir)
    if args.plot is not None:
        from parties.costs.plot import plot_costs

        path = Path(args.plot) if args.plot else run_dir / "costs.png"
        try:
            from parties.costs.plot import check_format

            check_format(path)
        except ValueError as exc:
            print(f"sdp costs: --plot {path}: {exc}", file=sys.stderr)
            return 2
        try:
            plot_costs(costs, path)
        except (OSError, ValueError) as exc:
            print(f"sdp costs: cannot write {path}: {exc}", file=sys.stderr)
            return 2
        if not args.json:
            print(f"timeline written to {path}", file=sys.stderr)
    if args.json:
        print(json.dumps(costs, indent=1))
        return 0
    from parties.costs.load import load_line, load_verdict
    from parties.runtime.ui import console

    if args.table:
        from parties.costs.table import cost_table_text

        print(cost_table_text(costs, args.table))
        return 0
    if args.by_round:
        console().print(round_table(costs))
    console().print(cost_table(costs))
    print(network_line(costs))
    print(critical_line(costs))
    print(load_line(costs.get("load") or load_verdict(costs["parties"])))
    tls = costs.get("tls_measured") or {}
    if tls.get("tcp_bytes"):
        console().print(
            f"TLS measured (kernel TCP counts of {len(tls['links'])} links): "
            f"{tls['tcp_bytes']:,} bytes on the wire for {tls['ledger_bytes']:,} handed to TLS, "
            f"overhead {tls['overhead_bytes']:,} bytes ({tls['overhead_share']:.1%}: records, "
            "handshakes with certificates, hellos)"
        )
    return 0
