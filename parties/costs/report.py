"""A run's cost ledgers merged: per protocol round, the steps nested, the per-peer matrix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# per-party row fields summed over parties in a step / round
SUMS = (
    "bytes_sent",
    "payload_sent",
    "framing_sent",
    "sealing_sent",
    "mpyc_sent",
    "tls_overhead_sent_est",
    "msgs_sent",
    "frames_sent",
    "cpu_s",
    "wait_s",
    "send_s",
)
PER_PARTY = ("start", "end", "wall_s", "cpu_s", "wait_s", "send_s", "bytes_sent", "bytes_recv")


def run_network(run_dir: Path) -> dict[str, Any]:
    """The network conditions the run states (first transcript's ``open`` entry)."""
    tdir = Path(run_dir) / "transcripts"
    for f in sorted(tdir.glob("*.jsonl")) if tdir.exists() else []:
        try:
            first = json.loads(f.open().readline())
        except ValueError:
            continue
        if first.get("dir") == "open":
            return dict(first.get("network") or {"emulated": "not recorded"})
    return {"emulated": "not recorded"}


def run_job(run_dir: Path) -> dict[str, Any]:
    """Protocol, shuffler and user count from the run's cluster file (empty if absent)."""
    path = Path(run_dir) / "cluster.toml"
    if not path.exists():
        return {}
    import tomllib

    try:
        cluster = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, OSError):
        return {}
    run = cluster.get("run", {})
    params = run.get("params", {})
    # a run on data files has no users parameter: its client parties state their users, or
    # the published result its privacy statement's count
    users = params.get("users") or sum(int(p.get("users") or 0) for p in cluster.get("party", []))
    if not users:
        users = _published_users(Path(run_dir))
    return {
        "protocol": run.get("protocol"),
        "shuffler": run.get("shuffler"),
        "users": users or None,
        "threshold": params.get("threshold"),
    }


def _published_users(run_dir: Path) -> int:
    """``privacy.n`` of the run's result.json (0 if there is none)."""
    try:
        return int(json.loads((run_dir / "result.json").read_text())["privacy"]["n"] or 0)
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _add(into: dict[str, Any], row: dict[str, Any]) -> None:
    for k in SUMS:
        into[k] = into.get(k, 0) + row.get(k, 0)
    for k, f in (("start", min), ("end", max)):
        if row.get(k) is not None:
            into[k] = row[k] if into.get(k) is None else f(into[k], row[k])


def _before(spans: list[list[float]], t: float) -> float:
    """Seconds of ``spans`` that lie before ``t``."""
    return sum(max(0.0, min(b, t) - a) for a, b in spans)


def by_round(
    parties: list[dict[str, Any]], starts: dict[int, float] | None = None
) -> list[dict[str, Any]]:
    """[{round, start, end, wall_s, sums, steps: [{phase, step, start, end, sums, parties}],
    matrix: {from: {to: {bytes, payload, msgs}}}}] in time order (from the senders' rows).

    ``starts``: when each protocol round after the first began (its first message sent, from
    the transcripts). A party that waits for the message that opens round r (a client's
    ``state``) is waiting for round r - 1 to produce it: the part of its row before round r's
    start is counted in round r - 1 (``wait_for_next_s``), so rounds do not overlap unless the
    protocol pipelines them (then ``overlap_s`` says by how much)."""
    starts = starts or {}
    rounds: dict[int, dict[str, Any]] = {}
    moved: dict[int, float] = {}
    for p in parties:
        for row in p.get("rows", []):
            rs = starts.get(row["round"]) if row["round"] > 0 else None
            if rs is not None and row.get("start") is not None and row["start"] < rs:
                pre = _before(row.get("spans") or [[row["start"], row.get("end") or rs]], rs)
                wait = min(pre, row.get("wait_s", 0.0))
                moved[row["round"] - 1] = moved.get(row["round"] - 1, 0.0) + wait
                row = {
                    **row,
                    "start": min(max(row["start"], rs), row.get("end") or rs),
                    "wall_s": max(0.0, row.get("wall_s", 0.0) - pre),
                    "wait_s": row.get("wait_s", 0.0) - wait,
                }
            r = rounds.setdefault(row["round"], {"round": row["round"], "steps": {}, "matrix": {}})
            key = (row["phase"], row["step"])
            st = r["steps"].setdefault(key, {"phase": row["phase"], "step": row["step"]})
            st.setdefault("parties", {})[p["party"]] = {k: row.get(k) for k in PER_PARTY}
            _add(st, row)
            _add(r, row)
            for peer, c in row.get("peers", {}).items():
                if c["bytes_sent"] or c["msgs_sent"]:
                    cell = (
                        r["matrix"]
                        .setdefault(p["party"], {})
                        .setdefault(peer, {"bytes": 0, "payload": 0, "msgs": 0})
                    )
                    cell["bytes"] += c["bytes_sent"]
                    cell["payload"] += c["payload_sent"]
                    cell["msgs"] += c["msgs_sent"]
    out = []
    for rnd in sorted(rounds):
        r = rounds[rnd]
        steps = sorted(
            r["steps"].values(), key=lambda s: (s.get("start") is None, s.get("start") or 0)
        )
        for s in steps:
            s["wall_s"] = _span(s)
        r["steps"] = steps
        if rnd > 0 and rnd in starts and r.get("start") is not None:
            r["start"] = starts[rnd]
        r["wall_s"] = _span(r)
        out.append(r)
    for i, r in enumerate(out):
        r["wait_for_next_s"] = round(moved.get(r["round"], 0.0), 6)
        r["wait_s"] = r.get("wait_s", 0.0) + r["wait_for_next_s"]
        prev = out[i - 1] if i else None
        r["overlap_s"] = (
            round(max(0.0, prev["end"] - r["start"]), 6)
            if prev and prev.get("end") is not None and r.get("start") is not None
            else 0.0
        )
    return out


def _span(d: dict[str, Any]) -> float:
    if d.get("start") is None or d.get("end") is None:
        return 0.0
    return round(d["end"] - d["start"], 6)


def merge_costs(run_dir: Path) -> dict[str, Any]:
    """Merge ``costs/PARTY.json`` into ``costs.json``: {run, job, network, parties,
    totals_by_phase, rounds}."""
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
    starts = [r["start"] for p in parties for r in p.get("rows", []) if r.get("start")]
    crit = None
    if (run_dir / "transcripts").exists():
        from parties.costs.critical import critical_path

        crit = critical_path(run_dir, parties)
    round_starts = {
        int(r): v["first_send"]
        for r, v in (crit or {}).get("rounds", {}).items()
        if v.get("first_send") is not None
    }
    from parties.costs.load import load_verdict

    merged = {
        "run": run_dir.name,
        "job": run_job(run_dir),
        "network": run_network(run_dir),
        "load": load_verdict(parties),
        "t0": min(starts) if starts else None,
        "parties": parties,
        "totals_by_phase": totals,
        "rounds": by_round(parties, round_starts),
    }
    merged["tls_measured"] = measured_tls(parties)
    if crit is not None:
        merged["critical_path"] = crit
    (run_dir / "costs.json").write_text(json.dumps(merged, indent=1))
    return merged


def load_costs(run_dir: Path) -> dict[str, Any]:
    """costs.json of a run (merging the per-party files if it is missing or predates rounds)."""
    path = Path(run_dir) / "costs.json"
    if path.exists():
        costs = json.loads(path.read_text())
        fresh = "rounds" in costs and "load" in costs
        if fresh or not (Path(run_dir) / "costs").exists():
            return costs
    return merge_costs(Path(run_dir))


def fmt_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def round_hops(costs: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Per protocol round the critical path's {depth, hops, round_trips, flights} (int keys)."""
    rounds = (costs.get("critical_path") or {}).get("rounds") or {}
    return {int(k): v for k, v in rounds.items()}


def round_table(costs: dict[str, Any]) -> Any:
    """A rich Table grouped by protocol round, its steps nested: one-way hops and round trips
    of the critical path per round, CPU, waiting, bytes and messages summed over parties."""
    from rich.table import Table

    t0 = costs.get("t0") or 0.0
    hops = round_hops(costs)
    t = Table(
        title=f"costs of {costs.get('run', 'the run')} per protocol round and step",
        caption=SUMS_NOTE,
    )
    cols = ("round / step", "start s", "wall s", "hops", "round trips", "cpu s", "wait s",
            "sent", "msgs")  # fmt: skip
    for c in cols:
        t.add_column(c, justify="left" if c == "round / step" else "right")
    for r in costs.get("rounds", []):
        h = hops.get(int(r["round"]), {})
        t.add_row(
            *_cells(f"round {r['round']}", r, t0, h.get("hops"), h.get("round_trips")),
            style="bold",
        )
        for s in r["steps"]:
            if not (s.get("bytes_sent") or s.get("cpu_s", 0) >= 0.001 or s.get("msgs_sent")):
                continue
            label = f"  {s['phase']}" + (f" #{s['step']}" if s["step"] else "")
            t.add_row(*_cells(label, s, t0, None, None))
        if r.get("wait_for_next_s"):
            t.add_row(
                f"  (waiting for round {r['round'] + 1})", "", "", "", "", "",
                f"{r['wait_for_next_s']:.2f}", "", "",
            )  # fmt: skip
    return t


# what the columns of the text views sum over
SUMS_NOTE = (
    "wall s: the span of the round (step) from its first to its last activity, over all "
    "parties; cpu s, wait s, sent and msgs: summed over parties (waits of parties waiting at "
    "once add up, so wait s can exceed wall s); hops: one-way message hops the round adds to "
    "the critical path (MPyC flights included), round trips = hops / 2"
)


def _cells(
    label: str, d: dict[str, Any], t0: float, hops: int | None, trips: float | None
) -> list[str]:
    start = "" if d.get("start") is None else f"{d['start'] - t0:.2f}"
    return [
        label,
        start,
        f"{d.get('wall_s', 0):.2f}",
        "" if hops is None else str(hops),
        "" if trips is None else f"{trips:g}",
        f"{d.get('cpu_s', 0):.2f}",
        f"{d.get('wait_s', 0):.2f}",
        fmt_bytes(d.get("bytes_sent", 0)),
        str(d.get("msgs_sent", 0)),
    ]


def network_line(costs: dict[str, Any]) -> str:
    """The network conditions the run states, in words."""
    net = costs.get("network") or {}
    if "rtt_ms" in net or "rate_mbit" in net:
        parts = [f"{k.replace('_ms', '').replace('_mbit', '')} {net[k]:g}"
                 + (" ms" if k.endswith("_ms") else " Mbit/s")
                 for k in ("rtt_ms", "rate_mbit") if net.get(k) is not None]  # fmt: skip
        return "network: emulated (--netem), " + ", ".join(parts) + " on every link"
    if net.get("emulated") == "none":
        return "network: loopback, no emulation"
    return f"network: {net.get('emulated', 'not recorded')}"


def critical_line(costs: dict[str, Any]) -> str:
    """The critical path in one line: hops and round trips in total and per round."""
    cp = costs.get("critical_path")
    if not cp:
        return "critical path: no transcripts"
    per = ", ".join(
        f"round {r} {v['hops']} hops ({v['round_trips']:g} round trips)"
        for r, v in sorted(round_hops(costs).items())
    )
    mpyc = f", {cp['mpyc_hops']} of them MPyC flights" if cp.get("mpyc_hops") else ""
    return (
        f"critical path: {cp['one_way_hops']} one-way hops = {cp['round_trips']:g} round trips"
        f"{mpyc} ({per}); transit along it {cp.get('network_s', 0):.3f} s (transcript messages)"
    )


def measured_tls(parties: list[dict[str, Any]]) -> dict[str, Any]:
    """TLS and handshake bytes as measured: per link (sender -> receiver), the kernel's TCP
    byte count of the connection (the sender's own count at its close, else the receiver's)
    minus the bytes the sender's ledger handed to TLS; links nobody measured are left out."""
    tcp = {p["party"]: p.get("tcp") or {} for p in parties}
    ledger: dict[tuple[str, str], int] = {}
    for p in parties:
        for row in p.get("rows", []):
            for peer, c in row.get("peers", {}).items():
                key = (p["party"], peer)
                ledger[key] = ledger.get(key, 0) + c["bytes_sent"]
    links = []
    for (a, b), handed in sorted(ledger.items()):
        wire = tcp.get(a, {}).get(b, {}).get("sent") or tcp.get(b, {}).get(a, {}).get("received")
        if wire:
            links.append({"from": a, "to": b, "tcp_bytes": wire, "ledger_bytes": handed})
    total_wire = sum(x["tcp_bytes"] for x in links)
    total_handed = sum(x["ledger_bytes"] for x in links)
    return {
        "links": links,
        "links_unmeasured": len(ledger) - len(links),
        "tcp_bytes": total_wire,
        "ledger_bytes": total_handed,
        "overhead_bytes": total_wire - total_handed,
        "overhead_share": (total_wire - total_handed) / total_wire if total_wire else None,
    }
