"""The servers' agreement on the client parties' input lists (issue 25 item 5, review N5).

Each client party signs its list (``{users, submissions}``; ``parties.mixnet.evidence``) and
sends it to every server. The servers then:

1. exchange signed input reports (``mix.inputs``): per client party, the digest and the
   party's signature of the list it received, or nothing;
2. judge them: a report carrying, for some party, a digest that party never signed proves that
   its server lied (the signed report is the evidence); two different digests both signed by a
   party prove that the party equivocated (its two signatures are the evidence);
3. echo the evidence to every other server and forward a party's signed list to each server
   that reported not receiving it (``mix.evidence``), so that every honest server ends with the
   same verdicts and lists.

A client party is left out only on proof of its own equivocation, or if no server holds a list
it signed (it sent nothing). A server proven to have lied takes no further part (mixing,
decryption); the record's ``faults`` and ``evidence`` name it, and ``sdp verify`` re-checks
the evidence (``parties.verify.mixnet``). A lying server can still make the run abort (any
server can), never exclude an honest party.
"""

from __future__ import annotations

import logging
from typing import Any

from parties.mixnet.evidence import sign
from parties.mixnet.state import MixnetAbort, MixnetConfig, ServerState
from parties.runtime import codec
from parties.runtime.link import PartyContext, PeerError
from parties.runtime.receive import recv_all, send_public
from parties.verify.evidence import (
    digest,
    entry_signed,
    list_digest,
    proves_equivocation,
    proves_lie,
    signed_by,
)

log = logging.getLogger("parties.mixnet")


def load_submission(raw: bytes) -> tuple[list[Any], int, bytes] | None:
    """``(submissions, users, sig)`` of one client party's message, or None if malformed."""
    try:
        obj = codec.loads(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("submissions"), list):
        return None
    users, sig = obj.get("users"), obj.get("sig")
    if not isinstance(users, int) or users < 0 or not isinstance(sig, bytes):
        return None
    return obj["submissions"], users, sig


async def collect_inputs(
    ctx: PartyContext, cfg: MixnetConfig, state: ServerState, live: list[str]
) -> set[int]:
    """Every client party's list, agreed with the other live servers (module docstring):
    fills ``state.submissions``, ``inputs``, ``faults`` and ``evidence``; returns the servers
    (1-based) proven to have lied, which take no further part."""
    clients, sid = cfg.client_names, cfg.session_id
    keys: dict[str, bytes] = getattr(ctx, "public_keys", {})
    got = await recv_all(ctx, clients, "mix.submissions", 2 * cfg.patience)
    lists: dict[str, tuple[list[Any], int, bytes]] = {}
    raws: dict[str, bytes] = {}
    mine: dict[str, Any] = {}
    for c in clients:
        raw = got[c]
        obj = None if isinstance(raw, PeerError) else load_submission(raw)
        entry = None
        if obj is not None:
            entry = {"digest": list_digest(obj[0], obj[1]), "sig": obj[2]}
            if entry_signed(keys, sid, c, entry):
                lists[c], raws[c] = obj, raw  # type: ignore[assignment]
            else:
                entry = None  # not signed by the party: as if it sent nothing
        mine[c] = entry
    signed_mine = {"report": mine, "sig": sign(ctx, "report", sid, digest(mine))}
    for s in live:
        await send_public(ctx, s, "mix.inputs", codec.dumps(signed_mine))
    views: dict[str, dict[str, Any]] = {ctx.name: mine}
    signed: dict[str, Any] = {}
    for s, raw in (await recv_all(ctx, live, "mix.inputs", cfg.patience)).items():
        if isinstance(raw, PeerError):
            continue  # a server that died since the DKG: its view does not count
        try:
            rep = codec.loads(raw)
        except ValueError:
            rep = None
        if not (
            isinstance(rep, dict)
            and isinstance(rep.get("report"), dict)
            and signed_by(keys, s, "report", sid, digest(rep["report"]), rep.get("sig"))
        ):
            raise MixnetAbort(f"{ctx.name}: malformed or unsigned input report from {s}")
        views[s], signed[s] = rep["report"], rep
    liars = {s: signed[s] for s in signed if proves_lie(keys, sid, clients, s, signed[s])}
    equivocations: dict[str, list[Any]] = {}
    for c in clients:
        valid = {
            v[c]["digest"]: v[c]
            for s, v in views.items()
            if s not in liars and v.get(c) is not None and entry_signed(keys, sid, c, v[c])
        }
        if len(valid) >= 2:
            equivocations[c] = [valid[d] for d in sorted(valid)[:2]]
    for s in live:  # echo the evidence; forward the lists s reported not to have
        view = views.get(s, {})
        forward = {c: raws[c] for c in raws if s not in liars and view.get(c) is None}
        msg = {"liars": liars, "equivocations": equivocations, "forward": forward}
        await send_public(ctx, s, "mix.evidence", codec.dumps(msg))
    for raw in (await recv_all(ctx, live, "mix.evidence", cfg.patience)).values():
        if isinstance(raw, PeerError):
            continue
        try:
            msg = codec.loads(raw)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        for name, rep in dict(msg.get("liars") or {}).items():
            if name in cfg.servers and proves_lie(keys, sid, clients, name, rep):
                liars[name] = rep
        for c, pair in dict(msg.get("equivocations") or {}).items():
            if c in clients and proves_equivocation(keys, sid, c, pair):
                equivocations[c] = pair
        for c, fwd in dict(msg.get("forward") or {}).items():
            obj = load_submission(fwd) if c in clients and isinstance(fwd, bytes) else None
            if obj is not None and c not in lists:
                entry = {"digest": list_digest(obj[0], obj[1]), "sig": obj[2]}
                if entry_signed(keys, sid, c, entry):
                    lists[c] = obj
    victims = {s: proves_lie(keys, sid, clients, s, rep) for s, rep in liars.items()}
    _decide(ctx, cfg, state, lists, victims, liars, equivocations)
    return {cfg.servers.index(s) + 1 for s in liars}


def _decide(
    ctx: PartyContext,
    cfg: MixnetConfig,
    state: ServerState,
    lists: dict[str, tuple[list[Any], int, bytes]],
    victims: dict[str, str | None],
    liars: dict[str, Any],
    equivocations: dict[str, list[Any]],
) -> None:
    for c in cfg.client_names:
        if c in equivocations:
            state.evidence.append({"party": c, "equivocation": equivocations[c]})
            state.faults.append(
                f"client party {c} left out: it signed two different lists (evidence in the record)"
            )
        elif c in lists:
            subs, users, sig = lists[c]
            state.inputs.append({"party": c, "count": len(subs), "users": users, "sig": sig})
            state.submissions += subs
        else:
            state.faults.append(f"client party {c} left out: no server holds a list it signed")
        if c not in lists or c in equivocations:
            log.warning("%s: %s", ctx.name, state.faults[-1])
    for s in sorted(liars):
        j = cfg.servers.index(s) + 1
        state.evidence.append({"server": j, "report": liars[s]})
        state.faults.append(
            f"server {j} ({s}) lied in the input agreement: its signed report gives client "
            f"party {victims[s]} a list {victims[s]} never signed (evidence in the record); it "
            "takes no further part"
        )
        log.warning("%s: %s", ctx.name, state.faults[-1])
    if not state.inputs:
        raise MixnetAbort(f"{ctx.name}: no client party's submissions were received")
