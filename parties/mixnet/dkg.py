"""The DKG's message exchange between the mix servers (the arithmetic is ``mpc.dkg``).

Four rounds, every message but ``dkg.share`` public and sent to every other server:

1. ``dkg.commit`` (Feldman commitments and the proof of knowledge of the constant term) and
   ``dkg.share`` (private: ``f_i(j)``).
2. ``dkg.complain``: the dealers whose dealing to this server is missing or invalid (no or
   malformed commitments, no share, or a share that fails the Feldman check). A missing share
   is a public complaint like a wrong one, so honest servers never blame each other.
3. ``dkg.reveal``: each dealer answers every complaint against it by revealing the share, and
   repeats its commitments (for a server that lacked them); a dealer that does not answer, or
   whose revealed share fails, is disqualified by everyone.
4. ``dkg.confirm``: every server sends the public DKG record it computed (commitments,
   complaints, reveals, QUAL, key). The records of all qualified servers must be equal;
   otherwise the server aborts, naming the complaint or dealer on which they disagree (e.g. a
   complaint withheld from the accused dealer), so two honest servers never end with different
   keys. (The record of a dealer this server disqualified does not count: it may dispute its
   own exclusion, and it ends without a key or with a different one, never sharing a key with
   an honest server that disagrees.)

Dead peers (``PeerError``) are dealers that never dealt and servers that did not complain.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mpc.dkg import DkgFailure, DkgResult, deal, disagreement, resolve, share_ok
from mpc.mixnet.proofs.dkg_pok import verify_dkg_pok
from mpc.ristretto import L, check_point, scalar_bytes, scalar_from_bytes, smul_base
from parties.runtime import codec
from parties.runtime.link import PartyContext, PeerError
from parties.runtime.receive import recv_all, try_send


def _commitments(msg: Any, t: int, where: str) -> tuple[list[bytes], dict[str, bytes]]:
    """Parse ``{"c": [t elements], "pok": {e, s}}``; raises ``ValueError``."""
    if not isinstance(msg, dict) or not isinstance(msg.get("c"), list) or len(msg["c"]) != t:
        raise ValueError(f"{where}: expected {t} commitments")
    if not isinstance(msg.get("pok"), dict):
        raise ValueError(f"{where}: no proof of knowledge")
    return [check_point(x, where) for x in msg["c"]], msg["pok"]


async def _broadcast(ctx: PartyContext, others: list[str], ty: str, obj: Any) -> None:
    payload = codec.dumps(obj)
    for s in others:
        await try_send(ctx, s, ty, payload, public=True)


def _decode(raw: Any) -> Any:
    if isinstance(raw, PeerError):
        return None
    try:
        return codec.loads(raw)
    except ValueError:
        return None


async def run_dkg(
    ctx: PartyContext, servers: list[str], me: int, t: int, sess_id: str
) -> DkgResult:
    """DKG at server ``servers[me - 1]`` against the other servers (module docstring).

    Raises ``PeerError`` naming the dealers at fault if fewer than ``t`` qualify, or the
    complaint or dealer on which the servers' records disagree.
    """
    k = len(servers)
    if not 1 <= t <= k:
        raise ValueError(f"dkg: need 1 <= t <= k, got t={t}, k={k}")
    others = [(j, s) for j, s in enumerate(servers, 1) if j != me]
    names = [s for _, s in others]
    mine = deal(sess_id, me, t)

    ctx.phase("dkg", 1)
    for j, s in others:
        await try_send(
            ctx, s, "dkg.commit", codec.dumps({"c": mine.commitments, "pok": mine.pok}), public=True
        )
        await try_send(ctx, s, "dkg.share", codec.dumps({"s": scalar_bytes(mine.share_for(j))}))
    comms: dict[int, list[bytes]] = {me: mine.commitments}
    poks: dict[int, dict[str, bytes]] = {me: mine.pok}
    shares: dict[int, int] = {me: mine.share_for(me)}
    got_c, got_s = await asyncio.gather(
        recv_all(ctx, names, "dkg.commit"), recv_all(ctx, names, "dkg.share")
    )
    against: list[int] = []
    for j, s in others:
        try:
            c = _decode(got_c[s])
            if c is not None:
                comms[j], poks[j] = _commitments(c, t, f"dkg commitments of {s}")
        except ValueError:
            pass
        try:
            sh = _decode(got_s[s])
            if isinstance(sh, dict):
                shares[j] = scalar_from_bytes(sh.get("s"), f"dkg share from {s}")
        except ValueError:
            pass
        if j not in comms or j not in shares or not share_ok(comms[j], me, shares[j]):
            against.append(j)  # missing or invalid dealing: a public complaint
    # a server that sent nothing at all is dead: later rounds do not wait for it
    silent = {
        s for s in names if isinstance(got_c[s], PeerError) and isinstance(got_s[s], PeerError)
    }
    live = [s for s in names if s not in silent]

    ctx.phase("dkg", 2)
    await _broadcast(ctx, names, "dkg.complain", {"against": against})
    complaints: dict[int, list[int]] = {me: against} if against else {}
    # a round can start one receive timeout late at a server that waited for a withheld
    # message, so round r tolerates r timeouts
    got = {s: PeerError("dead") for s in silent}
    got.update(await recv_all(ctx, live, "dkg.complain", 2))
    for j, s in others:
        msg = _decode(got[s])
        lst = msg.get("against") if isinstance(msg, dict) else None
        if isinstance(lst, list) and lst:
            complaints[j] = sorted({int(x) for x in lst if isinstance(x, int) and 1 <= x <= k})

    ctx.phase("dkg", 3)
    to_answer = sorted(j for j, lst in complaints.items() if me in lst)
    reveal = {j: scalar_bytes(mine.share_for(j)) for j in to_answer}
    await _broadcast(
        ctx, names, "dkg.reveal", {"c": mine.commitments, "pok": mine.pok, "shares": reveal}
    )
    reveals: dict[int, dict[int, bytes]] = {me: reveal}
    bad: dict[int, str] = {}
    got = {s: PeerError("dead") for s in silent}
    got.update(await recv_all(ctx, live, "dkg.reveal", 3))
    for j, s in others:
        msg = _decode(got[s])
        if not isinstance(msg, dict):
            continue
        try:
            c, pok = _commitments(msg, t, f"dkg commitments of {s}")
        except ValueError:
            c, pok = None, None
        if c is not None:
            if j in comms and (comms[j], poks[j]) != (c, pok):
                bad[j] = "sent different commitments to different servers"
            comms.setdefault(j, c)
            poks.setdefault(j, pok)  # type: ignore[arg-type]
        rv = msg.get("shares")
        if isinstance(rv, dict):
            reveals[j] = {int(a): v for a, v in rv.items() if isinstance(a, int)}
    pok_ok = {i: verify_dkg_pok(sess_id, i, comms[i][0], poks[i]) for i in comms}
    try:
        qual, pk, vks, record = resolve(k, t, comms, poks, pok_ok, complaints, reveals, bad)
    except (DkgFailure, ValueError) as exc:
        raise PeerError(str(exc)) from None

    ctx.phase("dkg", 4)
    await _broadcast(ctx, names, "dkg.confirm", {"record": record})
    got = {s: PeerError("dead") for s in silent}
    got.update(await recv_all(ctx, live, "dkg.confirm", 4))
    theirs = {}
    for j, s in others:
        msg = _decode(got[s])
        # a dealer disqualified here on public evidence (its own dealing) may see it otherwise;
        # its record does not count, so it cannot abort the DKG by disputing its own exclusion
        if isinstance(msg, dict) and "record" in msg and j in qual:
            theirs[j] = msg["record"]
    if problem := disagreement(record, theirs):
        raise PeerError(f"dkg: {problem}; abort")
    x = 0
    for i in qual:
        rv = reveals.get(i, {}).get(me)
        x += (
            scalar_from_bytes(rv, "revealed share")
            if i in against and rv is not None
            else shares[i]
        )
    x %= L
    if smul_base(x) != vks[me]:
        raise PeerError(f"dkg: server {me}'s share does not match its verification key")
    return DkgResult(me, x, pk, vks, qual, record)
