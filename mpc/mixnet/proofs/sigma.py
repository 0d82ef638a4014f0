"""The ``{e, s}`` form shared by the mix-net's Fiat-Shamir sigma proofs (challenge, response).

The DKG dealer proof ``pok[i] = {e, s}`` (V-13) and the decryption-share DLEQ ``{e, s}`` (V-18)
are both this frozen record; ``wire()`` / ``from_wire()`` are their byte encoding (32-byte
little-endian canonical scalars).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpc.ristretto import scalar_bytes, scalar_from_bytes


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
