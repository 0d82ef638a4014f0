"""``sdp costs RUN --table latex|markdown``: the cost table of a paper.

One row per party and protocol round, and a total row per round: messages and bytes the party
sent, the one-way hops (per party: the chain levels at which it sent in the round, MPyC flights
included; per round: the hops the round adds to the critical path), CPU seconds (process and
pool workers) and wall seconds (the party's first to last activity in the round; for the round,
its span). The run's conditions (protocol, shuffler, users, parties, network, host cores, load)
are the caption, in the form MP-SPDZ and MPyC papers report costs.
"""

from __future__ import annotations

from typing import Any

from parties.costs.report import fmt_bytes, network_line, round_hops

COLUMNS = ("round", "party", "messages", "bytes", "one-way hops", "CPU s", "wall s")


def table_rows(costs: dict[str, Any]) -> list[list[str]]:
    """The table's cells, per round its parties then its total."""
    hops = round_hops(costs)
    out: list[list[str]] = []
    for r in costs.get("rounds", []):
        rnd = int(r["round"])
        per: dict[str, dict[str, Any]] = {}
        for s in r["steps"]:
            for party, c in s["parties"].items():
                d = per.setdefault(party, {"msgs": 0, "bytes": 0, "cpu": 0.0, "a": [], "b": []})
                d["cpu"] += c.get("cpu_s") or 0.0
                d["bytes"] += c.get("bytes_sent") or 0
                if c.get("start") is not None:
                    d["a"].append(c["start"])
                if c.get("end") is not None:
                    d["b"].append(c["end"])
        for party_row in (p for p in costs["parties"]):
            for row in party_row.get("rows", []):
                if int(row["round"]) == rnd and party_row["party"] in per:
                    per[party_row["party"]]["msgs"] += row.get("msgs_sent", 0)
        flights = hops.get(rnd, {}).get("flights", {})
        for party in sorted(per):
            d = per[party]
            wall = max(d["b"]) - max(min(d["a"]), r.get("start") or min(d["a"])) if d["a"] else 0.0
            out.append([
                str(rnd), party, str(d["msgs"]), fmt_bytes(d["bytes"]),
                str(flights.get(party, 0)), f"{d['cpu']:.2f}", f"{max(0.0, wall):.2f}",
            ])  # fmt: skip
        out.append([
            str(rnd), "total", str(r.get("msgs_sent", 0)), fmt_bytes(r.get("bytes_sent", 0)),
            str(hops.get(rnd, {}).get("hops", "")), f"{r.get('cpu_s', 0):.2f}",
            f"{r.get('wall_s', 0):.2f}",
        ])  # fmt: skip
    return out


def caption(costs: dict[str, Any]) -> str:
    """The run's conditions in one sentence."""
    job = costs.get("job") or {}
    cores = sorted({p.get("host_cores") for p in costs["parties"] if p.get("host_cores")})
    load = costs.get("load") or {}
    state = {True: "under load", False: "quiet", None: "load not recorded"}[load.get("under_load")]
    cp = costs.get("critical_path") or {}
    return (
        f"{job.get('protocol', '?')} via the {job.get('shuffler', '?')} shuffler, "
        f"{job.get('users', '?')} users, {len(costs['parties'])} parties; "
        f"{network_line(costs).removeprefix('network: ')}; "
        f"{'/'.join(map(str, cores)) or '?'}-core host, {state}; "
        f"critical path {cp.get('one_way_hops', '?')} one-way hops. "
        "Messages and bytes sent; one-way hops per party: chain levels at which it sent; "
        "CPU: process and pool workers."
    )


def _latex_escape(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"),
                 ("#", r"\#"), ("$", r"\$")):  # fmt: skip
        text = text.replace(a, b)
    return text


def cost_table_text(costs: dict[str, Any], fmt: str) -> str:
    """The table as LaTeX (booktabs) or Markdown."""
    rows = table_rows(costs)
    cap = caption(costs)
    if fmt == "markdown":
        lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines + ["", f"*{cap}*"])
    if fmt != "latex":
        raise ValueError(f"unknown table format {fmt!r}: latex or markdown")
    body = []
    last = None
    for r in rows:
        if last is not None and r[0] != last:
            body.append(r"\midrule")
        last = r[0]
        body.append(" & ".join(_latex_escape(c) for c in r) + r" \\")
    return "\n".join(
        [
            r"\begin{table}",
            r"\centering",
            r"\caption{" + _latex_escape(cap) + "}",
            r"\begin{tabular}{llrrrrr}",
            r"\toprule",
            " & ".join(COLUMNS) + r" \\",
            r"\midrule",
            *body,
            r"\bottomrule",
            r"\end{tabular}",
            r"\end{table}",
        ]
    )
