"""The run's longest chain of causally dependent messages, from its transcripts.

A message sent by party P after P received message m (in P's transcript order) may depend on
m. Along such a chain of k messages each one crosses a link, so with a one-way delay d on every
link the chain takes at least k * d: ``one_way_hops`` is what turns an emulated RTT into wall
time (``docs/costs.md``). ``round_trips`` is half of it; ``network_s`` sums the transit times
(receiver's minus sender's transcript time, one machine's clock) along the deepest chain.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _entries(path: Path) -> list[dict[str, Any]]:
    out = []
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            if e.get("dir") in ("send", "recv"):
                out.append(e)
    return out


def critical_path(run_dir: Path) -> dict[str, Any]:
    """{one_way_hops, round_trips, network_s, by_round: {protocol round: deepest send in it}}."""
    tdir = Path(run_dir) / "transcripts"
    logs = {f.stem: _entries(f) for f in sorted(tdir.glob("*.jsonl"))}
    # (sender, receiver, msg) -> (hops, transit seconds along the chain, send time)
    depth: dict[tuple[str, str, int], tuple[int, float, float]] = {}
    pos = dict.fromkeys(logs, 0)
    level = dict.fromkeys(logs, (0, 0.0))  # deepest chain each party has received so far
    by_round: dict[int, int] = {}
    progressed = True
    while progressed:  # walk every transcript in order; a recv waits for its send's depth
        progressed = False
        for party, entries in logs.items():
            while pos[party] < len(entries):
                e = entries[pos[party]]
                if e["dir"] == "send":
                    d = level[party][0] + 1
                    depth[(party, e["peer"], e["msg"])] = (d, level[party][1], e["t"] / 1e6)
                    pr = int(e.get("pr", e["rd"]))
                    by_round[pr] = max(by_round.get(pr, 0), d)
                else:
                    sent = depth.get((e["peer"], party, e["msg"]))
                    if sent is None:
                        if e["peer"] in logs and pos[e["peer"]] < len(logs[e["peer"]]):
                            break  # its sender's transcript has not reached it yet
                        sent = (1, 0.0, e["t"] / 1e6)  # no sender transcript: the hop itself
                    got = (sent[0], sent[1] + max(0.0, e["t"] / 1e6 - sent[2]))
                    level[party] = max(level[party], got)
                pos[party] += 1
                progressed = True
    hops, net = max(level.values(), default=(0, 0.0))
    return {
        "one_way_hops": hops,
        "round_trips": hops / 2,
        "network_s": round(net, 6),
        "by_round": by_round,
    }
