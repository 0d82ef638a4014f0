"""What a proof of shuffle is about and what it carries (docs/spec/05-mixnet.md V-16, S-1 .. S-3).

``ShuffleStatement``: one mix step of one batch (session, step label, batch, key, input list,
output list, generators), with the seed of its per-element challenges. ``ShuffleCommitments``:
what the prover commits to before the main challenge, and the one derivation of that challenge
(S-3), used by the prover and the verifier. ``ShuffleProof``: the proof record with the keys of
S-1 (the commitments and the responses). Its vectors (``c``, ``chat``, ``that``, ``shat``, ``sprime``) stay in their wire form,
one byte string of ``n`` 32-byte items (01-encodings.md), so a proof of a 10^6-element batch is
not split into 10^6 objects; ``from_wire`` checks the shape and canonical encodings and the
verifier decodes the vectors where it uses them. Imported by both the prover and the verifier.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpc.mixnet.schema import (
    Ciphertexts,
    VerifyError,
    perm_challenge_seed,
    scalar_bytes,
    shuffle_challenge,
)
from mpc.ristretto import GroupError, check_point, scalar_from_bytes

_POINT_KEYS = ("c", "chat", "that")  # byte strings of n elements
_SCALAR_BLOBS = ("shat", "sprime")  # byte strings of n scalars
KEYS = frozenset(
    _POINT_KEYS + _SCALAR_BLOBS + ("t1", "t2", "t3", "t4a", "t4b", "s1", "s2", "s3", "s4")
)


@dataclass(frozen=True)
class ShuffleStatement:
    """Step ``step`` re-encrypts and permutes ``inp`` of batch ``batch`` into ``out`` under
    ``pk``; ``gens = (H, [H_1..])`` are the batch's commitment generators (S-2)."""

    sess: bytes
    step: int
    batch: str
    pk: bytes
    inp: Ciphertexts
    out: Ciphertexts
    gens: tuple[bytes, list[bytes]]

    @property
    def where(self) -> str:
        """How an error names this step (S-5): ``mix[s].batch``."""
        return f"mix[{self.step}].{self.batch}"

    def useed(self, c: bytes) -> bytes:
        """The permutation challenge seed of S-3 for the permutation commitments ``c`` (the
        byte string of S-1)."""
        return perm_challenge_seed(self.sess, self.step, self.batch, self.inp, self.out, [c])


@dataclass(frozen=True)
class ShuffleCommitments:
    """The prover's commitments of S-1, everything the main challenge binds."""

    c: bytes  # n permutation commitments c_i
    chat: bytes  # n chain commitments
    that: bytes  # n chain proof commitments
    t1: bytes
    t2: bytes
    t3: bytes
    t4a: tuple[bytes, ...]  # w elements
    t4b: tuple[bytes, ...]

    def challenge(self, useed: bytes) -> int:
        """The main challenge of S-3 (F-3 ``shuffle-c``), given ``useed``, the statement's
        ``useed(self.c)`` (passed in so its digest of the lists is hashed once)."""
        return shuffle_challenge(
            useed, [self.chat], [self.that], self.t1, self.t2, self.t3, list(self.t4a),
            list(self.t4b),
        )  # fmt: skip


@dataclass(frozen=True)
class ShuffleProof(ShuffleCommitments):
    """The proof of S-1 (Terelius-Wikstrom, commitment form): the commitments, then the
    responses; field names as in the spec."""

    s1: int
    s2: int
    s3: int
    s4: tuple[int, ...]  # w scalars
    shat: bytes  # n scalars
    sprime: bytes  # n scalars

    def wire(self) -> dict[str, Any]:
        """The CBOR map of S-1 (byte-identical to what runs have published)."""
        return {
            "c": self.c,
            "chat": self.chat,
            "that": self.that,
            "t1": self.t1,
            "t2": self.t2,
            "t3": self.t3,
            "t4a": list(self.t4a),
            "t4b": list(self.t4b),
            "s1": scalar_bytes(self.s1),
            "s2": scalar_bytes(self.s2),
            "s3": scalar_bytes(self.s3),
            "s4": [scalar_bytes(x) for x in self.s4],
            "shat": self.shat,
            "sprime": self.sprime,
        }

    @classmethod
    def from_wire(cls, proof: Any, n: int, w: int, where: str) -> ShuffleProof:
        """Parse S-1: every key present, vectors of ``n`` and ``w`` items, single elements
        valid, scalars canonical; raises ``VerifyError`` naming the part (the vectors' elements
        are validated where the verifier decodes them)."""
        if not isinstance(proof, dict):
            raise VerifyError(f"{where}: proof must be a map")
        if missing := KEYS - set(proof):
            raise VerifyError(f"{where}: proof lacks {sorted(missing)}")
        try:
            for k in _POINT_KEYS + _SCALAR_BLOBS:
                what = "elements" if k in _POINT_KEYS else "scalars"
                if not isinstance(proof[k], bytes) or len(proof[k]) != 32 * n:
                    raise VerifyError(f"{where}.{k}: expected {n} {what} ({32 * n} bytes)")
            t1, t2, t3 = (check_point(proof[k], f"{where}.{k}") for k in ("t1", "t2", "t3"))
            for k in ("t4a", "t4b", "s4"):
                if not isinstance(proof[k], list) or len(proof[k]) != w:
                    what = "scalars" if k == "s4" else "elements"
                    raise VerifyError(f"{where}.{k}: expected {w} {what}")
            t4a, t4b = (
                tuple(check_point(x, f"{where}.{k}[{j}]") for j, x in enumerate(proof[k]))
                for k in ("t4a", "t4b")
            )
            s1, s2, s3 = (scalar_from_bytes(proof[k], f"{where}.{k}") for k in ("s1", "s2", "s3"))
            s4 = tuple(scalar_from_bytes(x, f"{where}.s4[{j}]") for j, x in enumerate(proof["s4"]))
        except (GroupError, ValueError) as exc:
            raise VerifyError(str(exc)) from None
        c, chat, that, shat, sprime = (proof[k] for k in _POINT_KEYS + _SCALAR_BLOBS)
        return cls(c, chat, that, t1, t2, t3, t4a, t4b, s1, s2, s3, s4, shat, sprime)
