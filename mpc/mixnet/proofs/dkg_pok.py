"""DKG dealer proof (docs/spec/05-mixnet.md V-13 rule 2): Schnorr proof of knowledge of ``a0``
with ``C0 = a0 G``. Proof ``pok = {e, s}``: ``T = w G``, ``e = fs_scalar("dkg-pok", session_id,
dealer, C0, T)``, ``s = w + e a0``; valid iff ``e`` is the challenge of ``T = s G - e C0``."""

from __future__ import annotations

from typing import Any

from mpc.mixnet.proofs.sigma import SigmaProof, commit, recommit, respond
from mpc.mixnet.schema import dkg_pok_challenge
from mpc.ristretto import GroupError, random_scalar, smul_base


def dkg_pok_prove(sess_id: str, server: int, a0: int) -> dict[str, bytes]:
    """Schnorr proof of knowledge of ``a0`` with ``C0 = a0 G`` (wire form)."""
    w = random_scalar()
    e = dkg_pok_challenge(sess_id, server, smul_base(a0), commit(w))
    return SigmaProof(e, respond(e, a0, w)).wire()


def verify_dkg_pok(sess_id: str, dealer: int, c0: bytes, pok: Any) -> bool:
    """Schnorr proof of knowledge of the dealer's constant term ``c0 = a0 G``."""
    try:
        p = SigmaProof.from_wire(pok, "pok")
        tt = recommit(p.s, p.e, c0)
    except (GroupError, ValueError, KeyError, TypeError):
        return False
    return dkg_pok_challenge(sess_id, dealer, c0, tt) == p.e
