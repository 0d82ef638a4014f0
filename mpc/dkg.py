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

from dataclasses import dataclass, field
from typing import Any

from mpc.mixnet.proofs.dkg_pok import dkg_pok_prove
from mpc.ristretto import (
    L,
    random_scalars,
    scalar_from_bytes,
    smul_base,
    sum_points,
)
from mpc.threshold import commitment_at


class DkgFailure(RuntimeError):
    """The DKG cannot produce a key (fewer than ``t`` qualified dealers, or the servers'
    public views disagree); the message names the dealers or the complaint at fault."""


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
        raise DkgFailure(f"dkg: only {len(qual_l)} qualified dealers, need {t}")
    pk = sum_points(comms[i][0] for i in qual_l)
    vks = {j: sum_points(commitment_at(comms[i], j) for i in qual_l) for j in range(1, k + 1)}
    return qual_l, pk, vks


def resolve(
    k: int,
    t: int,
    comms: dict[int, list[bytes]],
    poks: dict[int, dict[str, bytes]],
    pok_ok: dict[int, bool],
    complaints: dict[int, list[int]],
    reveals: dict[int, dict[int, bytes]],
    bad: dict[int, str] | None = None,
) -> tuple[list[int], bytes, dict[int, bytes], dict[str, Any]]:
    """QUAL, the joint key, the verification keys and the public DKG record, from the public
    messages: commitments, the dealers' proofs, the complaints ``{by: [dealers]}`` (a missing
    or invalid dealing is a complaint) and the reveals ``{dealer: {complainer: share}}``.

    A dealer is qualified iff its commitments are known and its proof verifies, it is not in
    ``bad`` (e.g. it sent different commitments to different servers) and it answered every
    complaint against it with a share that passes the Feldman check. Raises ``DkgFailure``
    naming every disqualified dealer and why if fewer than ``t`` qualify.
    """
    why: dict[int, str] = dict(bad or {})
    for i in range(1, k + 1):
        if i not in comms and i not in why:
            why[i] = "no dealing"
        elif i in comms and not pok_ok.get(i, False):
            why.setdefault(i, "proof of knowledge fails")
    records = []
    for by in sorted(complaints):
        for d in sorted(set(complaints[by])):
            sh = reveals.get(d, {}).get(by)
            records.append({"by": by, "against": d, "share": sh})
            if d in why or d not in comms:
                continue
            if sh is None:
                why[d] = f"did not answer the complaint of server {by}"
            elif not share_ok(comms[d], by, scalar_from_bytes(sh, "revealed share")):
                why[d] = f"revealed a wrong share for server {by}"
    qual = sorted(i for i in comms if i not in why)
    if len(qual) < t:
        named = "; ".join(f"dealer {i}: {w}" for i, w in sorted(why.items()))
        raise DkgFailure(f"dkg: only {len(qual)} qualified dealers, need {t} ({named})")
    pk = sum_points(comms[i][0] for i in qual)
    vks = {j: sum_points(commitment_at(comms[i], j) for i in qual) for j in range(1, k + 1)}
    # the record shows the qualified dealers and those whose revealed share fails (so that a
    # verifier can recompute QUAL from it); other disqualified dealers are named in ``why``
    failed = {
        r["against"]
        for r in records
        if r["share"] is not None
        and r["against"] in comms
        and not share_ok(comms[r["against"]], r["by"], scalar_from_bytes(r["share"], "share"))
    }
    shown = sorted(set(qual) | failed)
    record = {
        "commitments": {i: comms[i] for i in shown},
        "pok": {i: poks[i] for i in shown},
        "complaints": records,
        "qual": qual,
        "pk": pk,
        "vks": vks,
    }
    return qual, pk, vks, record


def disagreement(mine: dict[str, Any], others: dict[int, dict[str, Any]]) -> str | None:
    """``None`` if every other server's DKG record equals ``mine``, else which part differs
    first (complaints before the key, so that the message names the complaint or dealer)."""
    for j, rec in sorted(others.items()):
        if rec == mine:
            continue
        if not isinstance(rec, dict):
            return f"server {j} sent no DKG record"
        a = {(c["by"], c["against"]) for c in mine["complaints"]}
        try:
            b = {(c["by"], c["against"]) for c in rec["complaints"]}
        except (KeyError, TypeError):
            return f"server {j} sent a malformed DKG record"
        if a != b:
            (by, d) = sorted(a ^ b)[0]
            return (
                f"the complaint of server {by} against dealer {d} reached some servers only "
                f"(here: {'yes' if (by, d) in a else 'no'}, server {j}: {'yes' if (by, d) in b else 'no'})"
            )
        if rec.get("qual") != mine["qual"]:
            diff = sorted(set(mine["qual"]) ^ set(rec.get("qual") or []))
            return f"servers disagree on dealers {diff} (server {j} qualifies {rec.get('qual')})"
        return f"server {j} computed a different DKG record (commitments, reveals or key)"
    return None
