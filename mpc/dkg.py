"""Distributed key generation for t-of-k threshold ElGamal (Feldman VSS, Pedersen's DKG).

Each server ``i`` (1-based) deals a random polynomial ``f_i`` of degree ``t - 1``: it publishes
Feldman commitments ``C_{i,m} = a_{i,m} G`` with a Schnorr proof of knowledge of ``a_{i,0}``
and sends ``f_i(j)`` privately to server ``j``. Server ``j`` checks
``f_i(j) G = sum_m j^m C_{i,m}`` and publicly complains against bad dealers; a dealer answers a
complaint by revealing the share, and is disqualified if the revealed share is wrong, it does
not answer, its proof fails or it never dealt. Every server also publishes the digest of the
commitments it received, so equivocation (different commitments to different servers) aborts
the DKG. The joint key is ``PK = sum_{i in QUAL} C_{i,0}``, server ``j``'s secret share is
``x_j = sum_{i in QUAL} f_i(j)`` and its public verification key ``Y_j = x_j G`` is computable by
anyone from the commitments.

Known limitation (Gennaro et al. 1999): a rushing adversary can bias the distribution of ``PK``
in this Feldman-style DKG; the key is still unknown to any coalition of fewer than ``t``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from mpc.mixnet_schema import dkg_digest
from mpc.nizk import dkg_pok_prove
from mpc.ristretto import (
    L,
    check_point,
    msm,
    random_scalars,
    scalar_bytes,
    scalar_from_bytes,
    smul_base,
    sum_points,
)
from parties.runtime import codec
from parties.runtime.link import PartyContext, PeerError


@dataclass
class Dealing:
    """One dealer's secret polynomial, public commitments and shares."""

    dealer: int
    coeffs: list[int]
    commitments: list[bytes]
    pok: dict[str, bytes]

    def share_for(self, j: int) -> int:
        """``f(j)``."""
        return sum(c * pow(j, m, L) for m, c in enumerate(self.coeffs)) % L


@dataclass
class DkgResult:
    """A server's outcome: its secret share and the public DKG record."""

    index: int
    x: int
    pk: bytes
    vks: dict[int, bytes]
    qual: list[int]
    record: dict[str, Any] = field(default_factory=dict)


def deal(sess_id: str, dealer: int, t: int) -> Dealing:
    """Random polynomial of degree ``t - 1`` with Feldman commitments and a proof for ``a_0``."""
    if t < 1:
        raise ValueError(f"dkg: threshold must be >= 1, got {t}")
    coeffs = random_scalars(t)
    comms = [smul_base(c) for c in coeffs]
    return Dealing(dealer, coeffs, comms, dkg_pok_prove(sess_id, dealer, coeffs[0]))


def commitment_at(comms: list[bytes], j: int) -> bytes:
    """``sum_m j^m C_m``, the commitment to ``f(j)``."""
    return msm([pow(j, m, L) for m in range(len(comms))], comms, "dkg commitment")


def share_ok(comms: list[bytes], j: int, share: int) -> bool:
    """Feldman check of a received share."""
    return smul_base(share) == commitment_at(comms, j)


def finalize(
    k: int,
    t: int,
    comms: dict[int, list[bytes]],
    poks: dict[int, dict[str, bytes]],
    pok_ok: dict[int, bool],
    complaints: list[dict[str, Any]],
) -> tuple[list[int], bytes, dict[int, bytes]]:
    """Qualified set, joint key and verification keys from the public messages."""
    qual = {i for i in comms if pok_ok.get(i, False)}
    for c in complaints:
        d = c["against"]
        if d not in qual:
            continue
        sh = c.get("share")
        if sh is None or not share_ok(comms[d], c["by"], scalar_from_bytes(sh, "revealed share")):
            qual.discard(d)
    qual_l = sorted(qual)
    if len(qual_l) < t:
        raise PeerError(f"dkg: only {len(qual_l)} qualified dealers, need {t}")
    pk = sum_points(comms[i][0] for i in qual_l)
    vks = {j: sum_points(commitment_at(comms[i], j) for i in qual_l) for j in range(1, k + 1)}
    return qual_l, pk, vks


async def run_dkg(
    ctx: PartyContext, servers: list[str], me: int, t: int, sess_id: str
) -> DkgResult:
    """DKG at server ``servers[me - 1]`` against the other servers (3 rounds).

    Messages: ``dkg.commit`` (public: commitments, proof), ``dkg.share`` (private),
    ``dkg.complain`` (public: complaints and view digest), ``dkg.reveal`` (public).
    Dead peers (``PeerError``) are treated as dealers that never dealt.
    """
    from mpc.mixnet_verifier import verify_dkg_pok  # verifier-side check (shared, not duplicated)

    k = len(servers)
    if not 1 <= t <= k:
        raise ValueError(f"dkg: need 1 <= t <= k, got t={t}, k={k}")
    others = [(j, s) for j, s in enumerate(servers, 1) if j != me]
    mine = deal(sess_id, me, t)

    ctx.phase("dkg", 1)
    for j, s in others:
        await _try_send(
            ctx, s, "dkg.commit", codec.dumps({"c": mine.commitments, "pok": mine.pok}), public=True
        )
        await _try_send(ctx, s, "dkg.share", codec.dumps({"s": scalar_bytes(mine.share_for(j))}))
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
            await _try_send(
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
            await _try_send(ctx, s, "dkg.reveal", codec.dumps(reveal), public=True)
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
    qual, pk, vks = finalize(k, t, comms, poks, pok_ok, complaints)
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


async def recv_patient(
    ctx: PartyContext, peer: str, msg_type: str, patience: int = 1
) -> bytes | PeerError:
    """Receive one message, tolerating up to ``patience`` consecutive receive timeouts."""
    err: PeerError | None = None
    for _ in range(max(1, patience)):
        try:
            return await ctx.recv(peer, msg_type)
        except PeerError as exc:
            err = exc
    return err  # type: ignore[return-value]


async def recv_all(
    ctx: PartyContext, peers: list[str], msg_type: str, patience: int = 1
) -> dict[str, bytes | PeerError]:
    """Receive ``msg_type`` from every peer concurrently (dead peers cost one wait in total)."""
    res = await asyncio.gather(*(recv_patient(ctx, p, msg_type, patience) for p in peers))
    return dict(zip(peers, res))


async def _try_send(
    ctx: PartyContext, peer: str, msg_type: str, payload: bytes, public: bool = False
) -> bool:
    try:
        await ctx.send(peer, msg_type, payload, public=public)
        return True
    except PeerError:
        return False
