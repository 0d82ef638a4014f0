"""Markdown tables of ``docs/scale.md`` from measured runs: the cost model's validation on
held-out runs and its projection to 10^6-10^8 users (``parties/costs/model.py``).

    python scripts/scale_tables.py RUNS_DIR

RUNS_DIR holds the run directories named as in ``docs/scale.md`` (t-N, t-N-rtt100, m-N-k3,
m-400-k5, m-N-k3-rtt100, mpc-N, mpc-N-rtt100), made with
``sdp run grr --users N --domain 10 --epsilon 1 --shuffler S [--netem rtt=100ms] --out RUNS_DIR/NAME``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from parties.costs.model import CostModel, run_facts, validate

SETS = {
    "trusted": (["t-2000", "t-20000", "t-50000"],
                ["t-1000", "t-10000", "t-100000", "t-1000-rtt100", "t-10000-rtt100",
                 "t-100000-rtt100"]),
    "mixnet": (["m-200-k3", "m-1600-k3", "m-10000-k3", "m-400-k5"],
               ["m-800-k3", "m-1000-k3", "m-1000-k3-rtt100", "m-10000-k3-rtt100", "m-100000-k3"]),
    "mpc": (["mpc-1000", "mpc-16000"], ["mpc-4000", "mpc-4000-rtt100"]),
}  # fmt: skip


def _cell(v: dict) -> str:
    return f"{v['predicted']:.3g} / {v['measured']:.3g} ({v['error']:+.0%})"


def validation(runs: Path) -> None:
    for name, (fit, held) in SETS.items():
        model = CostModel([run_facts(runs / r) for r in fit])
        print(f"\n{name}: fitted on {', '.join(fit)}\n")
        print("| run | n | k | RTT ms | CPU s | bytes | wall s | one-way hops |")
        print("|---|---|---|---|---|---|---|---|")
        for v in validate(model, [run_facts(runs / r) for r in held]):
            print(
                f"| {v['run']} | {v['n']} | {v['k'] or '-'} | {v['rtt_ms']:g} | {_cell(v['cpu_s'])} "
                f"| {_cell(v['bytes'])} | {_cell(v['wall_s'])} | "
                f"{v['one_way_hops']['predicted']:.3g} / {v['one_way_hops']['measured']} |"
            )


def projection(runs: Path) -> None:
    every = sorted(p.name for p in runs.iterdir() if p.is_dir() and p.name.startswith("m-"))
    mix = CostModel([run_facts(runs / r) for r in every])
    print(f"\nmix-net projection, fitted on all {len(every)} mix-net runs, RTT 50 ms\n")
    print("| users | k (t) | CPU total (core-h) | busiest-party CPU in sequence (h) | bytes sent (GB) "
          "| messages | one-way hops | wall, 1 core/server (h) | 16 cores/server (h) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for n in (10**6, 10**7, 10**8):
        for k in range(3, 8):
            t = k // 2 + 1
            p = mix.predict(n, k, t, 0.05)
            crit = p["critical_cpu_s"] / 3600
            net = p["one_way_hops"] * 0.025 / 3600
            print(
                f"| 10^{len(str(n)) - 1} | {k} ({t}) | {p['cpu_s'] / 3600:.3g} | {crit:.3g} | "
                f"{p['bytes'] / 1e9:.3g} | {p['messages']:.3g} | {p['one_way_hops']:.3g} | "
                f"{crit + net:.3g} | {crit / 16 + net:.3g} |"
            )
    every = sorted(p.name for p in runs.iterdir() if p.is_dir() and p.name.startswith("mpc-"))
    mpc = CostModel([run_facts(runs / r) for r in every])
    print(f"\nMPC projection (3 servers), fitted on all {len(every)} MPC runs, RTT 50 ms\n")
    print("| users | CPU total (core-h) | busiest-party CPU in sequence (h) | bytes sent (GB) "
          "| one-way hops (MPyC rounds included) | wall, 1 core/server (h) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for n in (10**6, 10**7, 10**8):
        p = mpc.predict(n, 3, None, 0.05)
        print(
            f"| 10^{len(str(n)) - 1} | {p['cpu_s'] / 3600:.3g} | {p['critical_cpu_s'] / 3600:.3g} | "
            f"{p['bytes'] / 1e9:.3g} | {p['one_way_hops']:.3g} | {p['wall_dedicated_s'] / 3600:.3g} |"
        )


def main() -> int:
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        print("usage: python scripts/scale_tables.py RUNS_DIR", file=sys.stderr)
        return 2
    runs = Path(sys.argv[1])
    validation(runs)
    projection(runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
