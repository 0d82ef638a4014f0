"""Who deviated when an MPC server refuses a client's sharing (issue 37; spec V-31).

Shared by the MPC servers (during the run, ``parties.mpc_shuffle.input_evidence``) and
``sdp verify`` (afterwards), so both reach the same verdict from the same signed data:

* a client party signs, per block of its submission, a **statement** ``{client, block, last,
  digests, open}`` (``mpc.input_commit``: the digest of each server's salted shares and the
  openings of the block's check) with its Ed25519 key (kind ``mpc-input``);
* after the servers agreed on the accepted clients, each server signs a **report** ``{server,
  clients: {client: {statements, complaint}}}`` (kind ``mpc-input-report``): the statements
  it received from each client and, if the opening the client signed for it does not match the
  shares it received, a **complaint** revealing that block's salt, mask and shares (one
  server's shares of one block: nothing about the values for t >= 1);
* ``judge`` decides each client from the m signed reports: a report carrying a statement its
  client never signed convicts its **server**; two different signed statements for one block
  convict the **client** (equivocation), as do signed openings not of degree <= t; a complaint
  convicts the client if the revealed shares hash to the client's digest for that server and
  give another opening than the client signed, and the complaining **server** otherwise (it
  revealed what it never received, or the client's opening was right).

A convicted client is refused and named; a convicted server makes the run abort, naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mpc import input_commit, shamir
from mpc.mac_check import INPUT_CHECK_REPETITIONS
from mpc.shamir import PRIME
from parties.verify.evidence import digest, signed_by

STATEMENT_KIND = "mpc-input"
REPORT_KIND = "mpc-input-report"

Verdict = tuple[str, str | None, str]  # ("ok" | "client" | "server", who, why)


def statement_valid(
    keys: dict[str, bytes], session: str, client: str, m: int, block: int, st: Any
) -> bool:
    """``st`` (``{body, sig}``) is ``client``'s signed statement for block ``block`` of m
    servers, well formed."""
    if not isinstance(st, dict) or not isinstance(st.get("body"), dict):
        return False
    body = st["body"]
    ok = (
        body.get("client") == client
        and body.get("block") == block
        and isinstance(body.get("last"), bool)
        and isinstance(body.get("digests"), list)
        and len(body["digests"]) == m
        and all(isinstance(d, str) and len(d) == 64 for d in body["digests"])
        and isinstance(body.get("open"), list)
        and len(body["open"]) == m
        and all(
            isinstance(o, list)
            and len(o) == INPUT_CHECK_REPETITIONS
            and all(isinstance(v, int) and 0 <= v < PRIME for v in o)
            for o in body["open"]
        )
    )
    return ok and signed_by(keys, client, STATEMENT_KIND, session, digest(body), st.get("sig"))


def statements_valid(keys: dict[str, bytes], session: str, client: str, m: int, sts: Any) -> bool:
    """A whole submission's statements: blocks 0, 1, .., only the last marked ``last``."""
    return (
        isinstance(sts, list)
        and len(sts) > 0
        and all(
            statement_valid(keys, session, client, m, b, st)
            and st["body"]["last"] == (b == len(sts) - 1)
            for b, st in enumerate(sts)
        )
    )


def report_signed(keys: dict[str, bytes], session: str, server: str, signed: Any) -> bool:
    """``signed`` (``{report, sig}``) is ``server``'s signed report of this round."""
    return (
        isinstance(signed, dict)
        and isinstance(signed.get("report"), dict)
        and signed["report"].get("server") == server
        and isinstance(signed["report"].get("clients"), dict)
        and signed_by(
            keys, server, REPORT_KIND, session, digest(signed["report"]), signed.get("sig")
        )
    )


def complaint_arrays(complaint: dict[str, Any]) -> dict[str, np.ndarray]:
    """The share arrays a complaint reveals (``{name: {shape, data}}``); ValueError if malformed."""
    batches = complaint.get("batches")
    if not isinstance(batches, dict):
        raise ValueError("complaint without its shares")
    out = {}
    for name, v in batches.items():
        if not (isinstance(v, dict) and isinstance(v.get("shape"), list)
                and isinstance(v.get("data"), bytes)):  # fmt: skip
            raise ValueError(f"complaint batch {name!r} malformed")
        out[name] = shamir.from_wire(v["data"], tuple(v["shape"]), f"complaint batch {name!r}")
    return out


def _complaint_verdict(
    label: bytes, client: str, servers: Sequence[str], j: int, sts: list[dict], c: Any
) -> Verdict:
    server = servers[j]
    try:
        if not isinstance(c, dict) or not isinstance(c.get("block"), int):
            raise ValueError("complaint without its block")
        b = c["block"]
        if not 0 <= b < len(sts):
            raise ValueError(f"complaint about block {b}, which the client never sent")
        salt, mask = c.get("salt"), c.get("mask")
        if not isinstance(salt, bytes) or not isinstance(mask, list):
            raise ValueError("complaint without its salt and mask")
        arrays = complaint_arrays(c)
        body = sts[b]["body"]
        got = input_commit.share_digest(label, client, b, j, server, salt, mask, arrays)
    except (ValueError, TypeError, OverflowError) as exc:
        return "server", server, f"{server}'s complaint against {client} is malformed ({exc})"
    if got != body["digests"][j]:
        return (
            "server",
            server,
            (
                f"{server}'s complaint against {client} reveals shares that are not what {client} "
                f"signed for it (block {b})"
            ),
        )
    seed = input_commit.coin_seed(label, client, b, body["digests"])
    if input_commit.openings(arrays, mask, seed) == body["open"][j]:
        return (
            "server",
            server,
            (
                f"{server} complained falsely against {client}: the opening {client} signed for it "
                f"matches the shares it received (block {b})"
            ),
        )
    return (
        "client",
        client,
        (
            f"{client} signed an opening for {server} that its own shares to {server} do not give "
            f"(block {b}; {server}'s complaint reveals them)"
        ),
    )


def judge(
    keys: dict[str, bytes],
    label: bytes,
    servers: Sequence[str],
    t: int,
    client: str,
    reports: Sequence[dict[str, Any]],
) -> Verdict:
    """The verdict on ``client`` from the m servers' reports (``report`` parts, each already
    checked as signed by its server, in server order). A server's fault comes first (the run
    aborts); then the client's (it is refused)."""
    session, m = label.decode(), len(servers)
    entries = [r["clients"].get(client) for r in reports]
    for j, e in enumerate(entries):
        sts = e.get("statements") if isinstance(e, dict) else None
        if not statements_valid(keys, session, client, m, sts):
            return (
                "server",
                servers[j],
                (f"{servers[j]}'s report gives {client} statements {client} never signed"),
            )
    lists = [e["statements"] for e in entries]
    complaints = [
        _complaint_verdict(label, client, servers, j, lists[j], e["complaint"])
        for j, e in enumerate(entries)
        if e.get("complaint") is not None
    ]
    bad_server = next((v for v in complaints if v[0] == "server"), None)
    if bad_server is not None:
        return bad_server
    for b in range(max(len(s) for s in lists)):
        bodies = {digest(s[b]["body"]) for s in lists if b < len(s)}
        if len(bodies) > 1 or any(b >= len(s) for s in lists):
            return "client", client, f"{client} signed two different statements for block {b}"
        if not input_commit.consistent_openings(lists[0][b]["body"]["open"], t):
            return (
                "client",
                client,
                (
                    f"{client}'s signed openings of block {b} are not of degree <= {t} (its sharing "
                    "is inconsistent)"
                ),
            )
    if complaints:
        return complaints[0]
    return "ok", None, ""


def judge_all(
    keys: dict[str, bytes],
    label: bytes,
    servers: Sequence[str],
    t: int,
    signed_reports: Sequence[Any],
    clients: Sequence[str],
) -> list[Verdict]:
    """Every client's verdict (``clients`` in order), or one server verdict if a report is not
    signed by its server (proof a server must give: an unsigned report convicts nobody)."""
    session = label.decode()
    for s, r in zip(servers, signed_reports, strict=True):
        if not report_signed(keys, session, s, r):
            return [("server", s, f"{s}'s input report is not signed by {s}")]
    reports = [r["report"] for r in signed_reports]
    return [judge(keys, label, servers, t, c, reports) for c in clients]


def check_evidence(
    keys: dict[str, bytes],
    label: bytes,
    servers: Sequence[str],
    t: int,
    evidence: Any,
) -> tuple[dict[str, str], dict[str, str]]:
    """``sdp verify``: re-judge a round's ``input_evidence`` (``{reports: [signed report per
    server]}``); returns ({convicted client: why}, {convicted server: why}). ValueError if the
    evidence is malformed or a report is not signed by its server (it then proves nothing)."""
    if not isinstance(evidence, dict) or not isinstance(evidence.get("reports"), list):
        raise ValueError("input evidence without the servers' reports")
    reports = evidence["reports"]
    if len(reports) != len(servers):
        raise ValueError(f"input evidence has {len(reports)} reports for {len(servers)} servers")
    session = label.decode()
    unsigned = [s for s, r in zip(servers, reports, strict=True)
                if not report_signed(keys, session, s, r)]  # fmt: skip
    if unsigned:
        raise ValueError(f"the input reports of {', '.join(unsigned)} are not signed by them")
    clients = sorted({c for r in reports for c in r["report"]["clients"]})
    clients_out: dict[str, str] = {}
    servers_out: dict[str, str] = {}
    for kind, who, why in judge_all(keys, label, servers, t, reports, clients):
        if kind == "client" and who is not None:
            clients_out[who] = why
        elif kind == "server" and who is not None:
            servers_out[who] = why
    return clients_out, servers_out


# ---------------------------------------------------------------------------------------------
# ``sdp verify`` (V-31): the evidence in the servers' signed output (or abort) meta.


def round_label(session: str, rd: int) -> bytes:
    """The label a run's round signs under (``plan.config_from_cluster``: ``sdp-mpc|session``
    plus ``|round`` and the round number)."""
    return f"sdp-mpc|{session}|round{rd}".encode()


def check_round_evidence(
    keys: dict[str, bytes],
    label: bytes,
    servers: Sequence[str],
    t: int,
    metas: Sequence[dict[str, Any]],
) -> int:
    """A published round: the servers agree on ``input_faults`` (client -> why) and
    ``input_evidence``; the evidence convicts exactly those clients, every one of them was
    rejected, and convicts no server (else the run should have aborted). Returns how many
    clients were convicted; ValueError says what fails."""
    faults = [m.get("input_faults", {}) for m in metas]
    evidence = [m.get("input_evidence", {}) for m in metas]
    if any(f != faults[0] for f in faults) or any(e != evidence[0] for e in evidence):
        raise ValueError("the servers report different input faults or evidence")
    named = faults[0] if isinstance(faults[0], dict) else None
    if named is None:
        raise ValueError("input_faults is not a map")
    if not named and not evidence[0]:
        return 0
    if named and not evidence[0]:
        raise ValueError(f"clients {sorted(named)} were refused without signed evidence")
    clients, guilty = check_evidence(keys, label, servers, t, evidence[0])
    if guilty:
        raise ValueError(f"the evidence convicts server(s) {sorted(guilty)} but the run went on")
    if set(clients) != set(named):
        raise ValueError(
            f"the servers refused {sorted(named)} as deviating; the signed evidence convicts "
            f"{sorted(clients)}"
        )
    rejected = set(metas[0].get("rejected_clients", []))
    if not set(named) <= rejected:
        raise ValueError(f"convicted clients {sorted(set(named) - rejected)} were not rejected")
    return len(named)


def abort_verdicts(
    keys: dict[str, bytes], label: bytes, servers: Sequence[str], t: int, meta: dict[str, Any]
) -> tuple[bool, str]:
    """An aborted round's meta (``abort``, ``culprit``, ``input_evidence``) from one server:
    (whether the evidence convicts the culprit it names, a sentence)."""
    culprit = meta.get("culprit")
    try:
        _, guilty = check_evidence(keys, label, servers, t, meta.get("input_evidence"))
    except ValueError as exc:
        return False, f"evidence that proves nothing ({exc})"
    if culprit in guilty:
        return True, f"server {culprit} deviated: {guilty[culprit]}"
    return False, f"evidence that does not convict {culprit!r} (it convicts {sorted(guilty)})"
