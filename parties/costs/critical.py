"""The run's longest chain of causally dependent messages, from its transcripts and MPyC's
counted flights.

A message sent by party P after P received message m (in P's transcript order) may depend on
m. Along such a chain of k messages each one crosses a link, so with a one-way delay d on every
link the chain takes at least k * d: ``one_way_hops`` is what turns an emulated RTT into wall
time (``docs/costs.md``). ``round_trips`` is half of it; ``network_s`` sums the transit times
(receiver's minus sender's transcript time, one machine's clock) along the deepest chain of
*transcript* messages (MPyC's mesh is not in the transcripts: its flights add hops, no transit).

MPyC's mesh (the MPC shuffler's servers) is not recorded in transcripts; its ledger rows count
*flights* (``mpyc_flights``: the most flights on one mesh link in the row). The mesh is
synchronous, so a server that enters an MPyC row at chain depth h leaves it at depth h + F,
F the most flights any server counted in that (phase, protocol round): the walk adds F to the
server's depth at the first transcript entry after the row started (``mpyc_hops`` in total).

Only messages some transcript records as received count (a ``close`` sent to a party that had
already closed crossed no link anyone saw). Per protocol round (``rounds``): the depth of the
deepest message sent in the round (``depth``,
the chain so far), the hops the round itself adds (``hops``: its depth minus the previous
round's), ``round_trips`` (half), and per party the number of chain levels at which it sent in
the round (``flights``, MPyC's included) -- what a cost table reports per party and round.
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


def _mesh_rows(parties: list[dict[str, Any]]) -> dict[str, list[tuple[float, int, int]]]:
    """Per party: (start, protocol round, mesh flights) of its MPyC rows in time order, the
    flights being the most any party counted in that (phase, protocol round)."""
    most: dict[tuple[str, int], int] = {}
    for p in parties:
        for r in p.get("rows", []):
            if r.get("mpyc_flights"):
                key = (r["phase"], r["round"])
                most[key] = max(most.get(key, 0), int(r["mpyc_flights"]))
    out: dict[str, list[tuple[float, int, int]]] = {}
    for p in parties:
        rows = [
            (float(r["start"]), int(r["round"]), most[(r["phase"], r["round"])])
            for r in p.get("rows", [])
            if r.get("mpyc_flights") and r.get("start") is not None
        ]
        if rows:
            out[p["party"]] = sorted(rows)
    return out


def critical_path(run_dir: Path, parties: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """{one_way_hops, round_trips, transcript_hops, mpyc_hops, network_s, by_round: {protocol
    round: deepest send in it}, rounds: {protocol round: {depth, hops, round_trips, first_send,
    flights: {party: n}}}}; ``parties``: the run's ledgers (for MPyC's flights)."""
    tdir = Path(run_dir) / "transcripts"
    logs = {f.stem: _entries(f) for f in sorted(tdir.glob("*.jsonl"))}
    mesh = _mesh_rows(parties or [])
    # a chain's (hops, transit seconds, MPyC flights among the hops)
    Chain = tuple[int, float, int]
    # (sender, receiver, msg) -> (chain up to and with the message, send time, protocol round)
    depth: dict[tuple[str, str, int], tuple[Chain, float, int]] = {}
    pos = dict.fromkeys(logs, 0)
    level: dict[str, Chain] = {p: (0, 0.0, 0) for p in set(logs) | set(mesh)}
    by_round: dict[int, int] = {}
    first_send: dict[int, float] = {}
    levels: dict[int, dict[str, set[int]]] = {}  # round -> party -> chain levels it sent at

    def through_mesh(party: str, until: float) -> None:
        """Add the flights of the party's MPyC rows that started by ``until``."""
        pending = mesh.get(party)
        while pending and pending[0][0] <= until:
            _, pr, flights = pending.pop(0)
            hops, net, fl = level[party]
            level[party] = (hops + flights, net, fl + flights)
            levels.setdefault(pr, {}).setdefault(party, set()).update(
                range(hops + 1, hops + flights + 1)
            )
            by_round[pr] = max(by_round.get(pr, 0), hops + flights)

    progressed = True
    while progressed:  # walk every transcript in order; a recv waits for its send's depth
        progressed = False
        for party, entries in logs.items():
            while pos[party] < len(entries):
                e = entries[pos[party]]
                t = e["t"] / 1e6
                through_mesh(party, t)
                if e["dir"] == "send":
                    hops, net, fl = level[party]
                    pr = int(e.get("pr", e["rd"]))
                    depth[(party, e["peer"], e["msg"])] = ((hops + 1, net, fl), t, pr)
                else:
                    sent = depth.get((e["peer"], party, e["msg"]))
                    if sent is None:
                        if e["peer"] in logs and pos[e["peer"]] < len(logs[e["peer"]]):
                            break  # its sender's transcript has not reached it yet
                        sent = ((1, 0.0, 0), t, int(e.get("pr", e["rd"])))  # no sender log
                    (hops, net, fl), t_sent, pr = sent
                    level[party] = max(level[party], (hops, net + max(0.0, t - t_sent), fl))
                    # a message counts once it was received (one crossing of a link)
                    by_round[pr] = max(by_round.get(pr, 0), hops)
                    first_send[pr] = min(first_send.get(pr, t_sent), t_sent)
                    levels.setdefault(pr, {}).setdefault(e["peer"], set()).add(hops)
                pos[party] += 1
                progressed = True
    for party in mesh:  # MPyC rows after a party's last transcript entry
        through_mesh(party, float("inf"))
    # the deepest chain any party reached (a message no transcript received does not count)
    deepest = max(level.values(), default=(0, 0.0, 0))
    rounds: dict[int, dict[str, Any]] = {}
    previous = 0
    for pr in sorted(by_round):
        rounds[pr] = {
            "depth": by_round[pr],
            "hops": max(0, by_round[pr] - previous),
            "round_trips": max(0, by_round[pr] - previous) / 2,
            "first_send": round(first_send[pr], 6) if pr in first_send else None,
            "flights": {p: len(s) for p, s in sorted(levels.get(pr, {}).items())},
        }
        previous = max(previous, by_round[pr])
    return {
        "one_way_hops": deepest[0],
        "round_trips": deepest[0] / 2,
        "transcript_hops": deepest[0] - deepest[2],
        "mpyc_hops": deepest[2],
        "network_s": round(deepest[1], 6),
        "by_round": by_round,
        "rounds": rounds,
    }
