"""The sigma-protocol pieces shared by the mix-net's Fiat-Shamir proofs (challenge, response).

``SigmaProof``: the ``{e, s}`` record of the DKG dealer proof ``pok[i]`` (V-13) and the
decryption-share DLEQ (V-18); ``wire()`` / ``from_wire()`` are their byte encoding (32-byte
little-endian canonical scalars). The arithmetic every Schnorr-type proof here repeats is
written once: the commitment ``T = w g`` (``commit``), the response ``s = w + e x`` in constant
time (``respond``) and the verifier's recomputed commitment ``T = s g - e y`` (``recommit``),
used by ``dkg_pok``, ``dleq`` and ``client_pok``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpc.ristretto import G, ct_muladd, scalar_bytes, scalar_from_bytes, smul, smul_base, sub


@dataclass(frozen=True)
class SigmaProof:
    """Challenge ``e`` and response ``s`` (the spec's field names)."""

    e: int
    s: int

    def wire(self) -> dict[str, bytes]:
        return {"e": scalar_bytes(self.e), "s": scalar_bytes(self.s)}

    @classmethod
    def from_wire(cls, proof: Any, what: str) -> SigmaProof:
        """Parse ``{e, s}`` (``what`` names it in errors); raises ``ValueError``, ``KeyError``
        or ``TypeError`` on a malformed proof."""
        return cls(
            scalar_from_bytes(proof["e"], f"{what}.e"), scalar_from_bytes(proof["s"], f"{what}.s")
        )


def commit(w: int, g: bytes = G) -> bytes:
    """The prover's commitment ``w g`` (the fixed-base path when ``g`` is ``G``)."""
    return smul_base(w) if g == G else smul(w, g)


def respond(e: int, x: int, w: int) -> int:
    """The response ``s = w + e x mod L`` for a secret witness ``x`` (constant time)."""
    return ct_muladd(e, x, w)


def recommit(s: int, e: int, y: bytes, g: bytes = G) -> bytes:
    """The commitment a valid response implies, ``s g - e y`` (public values; raises
    ``GroupError`` on an invalid element)."""
    return sub(commit(s, g), smul(e, y))
