"""The DKG's message exchange between the mix servers (the arithmetic is ``mpc.dkg``).

Three rounds: ``dkg.commit`` (public: Feldman commitments and the proof of knowledge of the
constant term) with ``dkg.share`` (private: ``f_i(j)``), ``dkg.complain`` (public: dealers whose
share fails the Feldman check, and the digest of the commitments seen, so an equivocating
dealer aborts the DKG) and ``dkg.reveal`` (public: shares of complainers). Dead peers
(``PeerError``) are treated as dealers that never dealt.
"""

from __future__ import annotations

import asyncio

from mpc.dkg import DkgFailure, DkgResult, deal, finalize, share_ok
from mpc.mixnet.proof_checks import verify_dkg_pok
from mpc.mixnet.schema import dkg_digest
from mpc.ristretto import L, check_point, scalar_bytes, scalar_from_bytes, smul_base
from parties.runtime import codec
from parties.runtime.link import PartyContext, PeerError
from parties.runtime.receive import recv_all, try_send


async def run_dkg(
    ctx: PartyContext, servers: list[str], me: int, t: int, sess_id: str
) -> DkgResult:
    """DKG at server ``servers[me - 1]`` against the other servers (3 rounds).

    Messages: ``dkg.commit`` (public: commitments, proof), ``dkg.share`` (private),
    ``dkg.complain`` (public: complaints and view digest), ``dkg.reveal`` (public).
    Dead peers (``PeerError``) are treated as dealers that never dealt.
    """
    k = len(servers)
    if not 1 <= t <= k:
        raise ValueError(f"dkg: need 1 <= t <= k, got t={t}, k={k}")
    others = [(j, s) for j, s in enumerate(servers, 1) if j != me]
    mine = deal(sess_id, me, t)

    ctx.phase("dkg", 1)
    for j, s in others:
        await try_send(
            ctx, s, "dkg.commit", codec.dumps({"c": mine.commitments, "pok": mine.pok}), public=True
        )
        await try_send(ctx, s, "dkg.share", codec.dumps({"s": scalar_bytes(mine.share_for(j))}))
    comms = {me: mine.commitments}
    poks = {me: mine.pok}
    shares = {me: mine.share_for(me)}
    alive = {me}
    got_c, got_s = await asyncio.gather(
        recv_all(ctx, [s for _, s in others], "dkg.commit"),
        recv_all(ctx, [s for _, s in others], "dkg.share"),
    )
    for j, s in others:
        try:
            if isinstance(got_c[s], PeerError) or isinstance(got_s[s], PeerError):
                continue
            msg = codec.loads(got_c[s])
            sh = codec.loads(got_s[s])
            cl = msg["c"]
            if not isinstance(cl, list) or len(cl) != t:
                raise ValueError("wrong number of commitments")
            comms[j] = [check_point(x, f"dkg commitment of {s}") for x in cl]
            poks[j] = msg["pok"]
            shares[j] = scalar_from_bytes(sh["s"], f"dkg share from {s}")
            alive.add(j)
        except (ValueError, KeyError, TypeError):
            comms.pop(j, None)  # malformed dealing: the dealer is disqualified
            continue
    pok_ok = {i: verify_dkg_pok(sess_id, i, comms[i][0], poks[i]) for i in comms}
    bad = sorted(i for i in comms if i != me and not share_ok(comms[i], me, shares[i]))

    ctx.phase("dkg", 2)
    view = dkg_digest(comms)
    for j, s in others:
        if j in alive:
            await try_send(
                ctx, s, "dkg.complain", codec.dumps({"against": bad, "view": view}), public=True
            )
    complaints_by: dict[int, list[int]] = {me: bad}
    got = await recv_all(ctx, [s for j, s in others if j in alive], "dkg.complain")
    for j, s in others:
        if j not in alive:
            continue
        if isinstance(got[s], PeerError):
            alive.discard(j)
            continue
        try:
            msg = codec.loads(got[s])
        except ValueError:
            msg = {}
        if msg.get("view") != view:
            raise PeerError(
                f"dkg: server {s} saw different commitments (equivocating dealer); abort"
            )
        complaints_by[j] = [int(x) for x in msg.get("against", [])]

    ctx.phase("dkg", 3)
    against_me = sorted(j for j, lst in complaints_by.items() if me in lst)
    reveal = {j: scalar_bytes(mine.share_for(j)) for j in against_me}
    for j, s in others:
        if j in alive:
            await try_send(ctx, s, "dkg.reveal", codec.dumps(reveal), public=True)
    reveals: dict[int, dict[int, bytes]] = {me: reveal}
    got = await recv_all(ctx, [s for j, s in others if j in alive], "dkg.reveal")
    for j, s in others:
        if j in alive:
            try:
                rv = codec.loads(got[s]) if not isinstance(got[s], PeerError) else {}
            except ValueError:
                rv = {}
            reveals[j] = rv if isinstance(rv, dict) else {}
    complaints = [
        {"by": by, "against": d, "share": reveals.get(d, {}).get(by)}
        for by, lst in sorted(complaints_by.items())
        for d in lst
    ]
    try:
        qual, pk, vks = finalize(k, t, comms, poks, pok_ok, complaints)
    except DkgFailure as exc:
        raise PeerError(str(exc)) from None
    x = 0
    for i in qual:
        rv = reveals.get(i, {}).get(me)
        x += scalar_from_bytes(rv, "revealed share") if (i in bad and rv is not None) else shares[i]
    x %= L
    if smul_base(x) != vks[me]:
        raise PeerError(f"dkg: server {me}'s share does not match its verification key")
    record = {
        "commitments": {i: comms[i] for i in sorted(comms)},
        "pok": {i: poks[i] for i in sorted(comms)},
        "complaints": complaints,
        "qual": qual,
        "pk": pk,
        "vks": vks,
    }
    return DkgResult(me, x, pk, vks, qual, record)
