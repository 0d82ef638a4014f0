"""Markdown tables of ``docs/scale.md`` from measured runs: the cost model's validation on
held-out runs and its projection to 10^6-10^8 users (``parties/costs/model.py``).

    python scripts/scale_tables.py RUNS_DIR

RUNS_DIR holds the run directories named as in ``docs/scale.md`` (t-N, t-N-rtt100, m-N-k3,
m-400-k5, m-N-k3-rtt100, mpc-N, mpc-N-rtt100), made with
``sdp run grr --users N --domain 10 --epsilon 1 --shuffler S [--netem rtt=100ms] --out RUNS_DIR/NAME``.
The memory table reads ``RUNS_DIR/m-N-k3*/peak_rss.json``, written during the run by
``python scripts/sample_peak_rss.py RUNS_DIR/NAME/peak_rss.json PID_OF_SDP_RUN``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

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


ROLES = {"mix server": "mix-", "client party": "client-", "analyzer": "analyzer",
         "sdp run (launcher, verifier)": "sdp run"}  # fmt: skip
# the whole run's resident memory at its fullest moment (the sampler's largest total of one
# sample: every party, its workers and the launcher; the parties' peaks do not coincide)
AT_ONCE = "the run at once"


def role_peaks(path: Path) -> dict[str, float]:
    """Per role, the largest peak RSS of one party of that role (its pool workers added)."""
    parties = json.loads(path.read_text())["parties"]
    out: dict[str, float] = {}
    for role, prefix in ROLES.items():
        got = [v["peak_rss_bytes"] + v["workers_peak_rss_sum_bytes"]
               for name, v in parties.items() if name.startswith(prefix)]  # fmt: skip
        if got:
            out[role] = float(max(got))
    return out


def memory(runs: Path) -> None:
    """Peak RSS per party, fitted as base + slope x n per role like the CPU (k = 3, t = 2)."""
    pts = []
    for d in sorted(runs.glob("m-*-k3*/peak_rss.json")):
        n = int(d.parent.name.split("-")[1])
        at_once = float(json.loads(d.read_text())["peak_total_rss_bytes"])
        pts.append((n, d.parent.name, {**role_peaks(d), AT_ONCE: at_once}))
    pts.sort()
    if len(pts) < 2:
        return
    print(f"\nmix-net memory, peak RSS per party (GB), fitted on {len(pts)} runs (k = 3)\n")
    print("| users | " + " | ".join([*ROLES, AT_ONCE]) + " | sum of the 6 parties' peaks |")
    print("|---|" + "---|" * (len(ROLES) + 2))
    fits = {}
    for role in [*ROLES, AT_ONCE]:
        xy = [(n, p[role]) for n, _, p in pts if role in p]
        slope, base = np.polyfit([x for x, _ in xy], [y for _, y in xy], 1)
        fits[role] = (base, slope)
    for n, name, p in pts:
        cells = [f"{p.get(r, float('nan')) / 1e9:.3g} / {(b + s * n) / 1e9:.3g}"
                 for r, (b, s) in fits.items()]  # fmt: skip
        print(f"| {name} (measured / fitted) | " + " | ".join(cells) + " | |")
    # the launcher verifies after the parties have exited: not at once with them
    count = {"mix server": 3, "client party": 2, "analyzer": 1, "sdp run (launcher, verifier)": 0}
    for n in (10**6, 10**7, 10**8):
        est = {r: b + s * n for r, (b, s) in fits.items()}
        total = sum(count.get(r, 0) * v for r, v in est.items())
        cells = [f"{v / 1e9:.3g}" for v in est.values()]
        print(f"| 10^{len(str(n)) - 1} | " + " | ".join(cells) + f" | {total / 1e9:.3g} |")
    print("\nslope per user (kB): " + ", ".join(f"{r} {s / 1e3:.3g}" for r, (_, s) in fits.items()))


def refit_k3(runs: Path) -> None:
    """The mix-net (k = 3) fitted on the runs in ``runs`` but the largest, which it predicts
    (held out), then on all of them and projected (the 10^6 point of docs/scale.md)."""
    names = sorted(
        (p.name for p in runs.iterdir() if p.is_dir() and p.name.startswith("m-")
         and p.name.endswith("-k3") and (p / "costs.json").is_file()),
        key=lambda x: int(x.split("-")[1]),
    )  # fmt: skip
    if len(names) < 3:
        return
    facts = [run_facts(runs / r) for r in names]
    model = CostModel(facts[:-1])
    print(f"\nmix-net k = 3: fitted on {', '.join(names[:-1])}, predicting {names[-1]}\n")
    print("| run | n | CPU s | bytes | wall s |")
    print("|---|---|---|---|---|")
    for v in validate(model, facts[-1:]):
        print(f"| {v['run']} | {v['n']} | {_cell(v['cpu_s'])} | {_cell(v['bytes'])} | "
              f"{_cell(v['wall_s'])} |")  # fmt: skip
    every = CostModel(facts)
    print(f"\nfitted on all of {', '.join(names)}, RTT 50 ms\n")
    print("| users | CPU total (core-h) | busiest-party CPU in sequence (h) | bytes sent (GB) |")
    print("|---|---|---|---|")
    for n in (10**6, 10**7, 10**8):
        p = every.predict(n, 3, 2, 0.05)
        print(f"| 10^{len(str(n)) - 1} | {p['cpu_s'] / 3600:.3g} | "
              f"{p['critical_cpu_s'] / 3600:.3g} | {p['bytes'] / 1e9:.3g} |")  # fmt: skip


def main() -> int:
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        print("usage: python scripts/scale_tables.py RUNS_DIR", file=sys.stderr)
        return 2
    runs = Path(sys.argv[1])
    if (runs / "m-200-k3").is_dir():
        validation(runs)
        projection(runs)
    else:  # the runs of one day at one load (2000, 10^4, 10^5, 10^6 of docs/scale.md)
        refit_k3(runs)
    memory(runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
