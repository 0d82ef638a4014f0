"""Public artifacts of the mix-net and their Fiat-Shamir hashing, shared by prover and verifier.

Everything here is deterministic and documented so that an independent verifier can be written
from this file alone (protocol and record: ``docs/mixnet.md``).

Hashing. ``fs_hash(label, *parts)`` is SHA-512 over ``b"sdp-mixnet-v1|" + label`` followed by
every part as an 8-byte little-endian length and the bytes; strings are UTF-8, ints are encoded
as 8-byte little-endian (``u64``) unless they are scalars (``scalar_bytes``). A scalar challenge is
the 64-byte digest reduced mod ``L`` (``fs_scalar``). All challenges of a run start from the
*session digest* (``session_digest``) binding the session id, the parameters (canonical CBOR),
the qualified dealers' DKG commitments and the joint public key.

Ciphertexts. A width-``w`` ciphertext is ``w`` ElGamal pairs ``(a_j, b_j) = (M_j + r_j PK, r_j G)``
with independent ``r_j``. A list of ``n`` ciphertexts is stored component-major:
``a[j][i]`` is component ``j`` of ciphertext ``i``; on the wire ``{"w", "n", "a": [w blobs],
"b": [w blobs]}`` where each blob is the concatenation of ``n`` 32-byte encodings.

Shuffle proof (Terelius-Wikstrom, in commitment form; ``H``, ``H_1..H_n`` from
``shuffle_generators``): keys ``c`` (n permutation commitments), ``chat`` (n chain commitments),
``that`` (n chain proof commitments), ``t1``, ``t2``, ``t3`` (elements), ``t4a``, ``t4b`` (w
elements each), ``s1``, ``s2``, ``s3`` (scalars), ``s4`` (w scalars), ``shat``, ``sprime`` (n
scalars each, as blobs of 32-byte little-endian). Challenges: ``u_i = perm_challenges(...)``,
``c = shuffle_challenge(...)``; equations are listed in
``mpc.mixnet.proofs.shuffle.verifier.verify_shuffle``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cbor2

from mpc.mixnet.points import Points, joined
from mpc.ristretto import GroupError, L, generators, hash_to_point, high_bit_free, scalar_bytes

DOMAIN = b"sdp-mixnet-v1|"
EMBED_BYTES = 30  # payload bytes per group element (see mpc.elgamal.embed)


class VerifyError(ValueError):
    """A check failed; the message names the artifact and the failing equation/index."""


class MixnetShapeError(ValueError):
    """A mix-net with fewer than 2 servers or a threshold outside 2..k (refused)."""


def check_shape(k: int, t: int) -> None:
    """Refuse a mix-net that cannot hide who sent what from one server.

    With one server, that server alone mixes and decrypts; with ``t = 1`` any single server
    decrypts the input list. ``2 <= t <= k`` makes every decryption need a server that mixed
    (``record_verifier`` checks that the decryption set mixed), so privacy needs one honest
    server among any ``t``.
    """
    if k < 2:
        raise MixnetShapeError(f"a mix-net needs at least 2 mix servers, got {k}")
    if not 2 <= t <= k:
        raise MixnetShapeError(f"the mix-net threshold must lie in 2..{k} (mix servers), got {t}")


def _part(p: Any) -> bytes:
    if isinstance(p, bytes):
        return p
    if isinstance(p, str):
        return p.encode()
    if isinstance(p, bool):
        return bytes([int(p)])
    if isinstance(p, int):
        return p.to_bytes(8, "little", signed=True)
    raise TypeError(f"cannot hash part of type {type(p).__name__}")


def fs_hash(label: str, *parts: Any) -> bytes:
    """Domain-separated, length-prefixed SHA-512 of ``parts``."""
    h = hashlib.sha512(DOMAIN + label.encode() + b"|")
    for p in parts:
        b = _part(p)
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.digest()


def fs_scalar(label: str, *parts: Any) -> int:
    """A Fiat-Shamir challenge scalar mod L."""
    return int.from_bytes(fs_hash(label, *parts), "little") % L


def scalar_vector(seed: bytes, n: int, at: Sequence[int] | None = None) -> list[int]:
    """``n`` scalars ``H(seed, i) mod L`` (per-element challenges); only ``i in at`` if given."""
    base = hashlib.sha512(DOMAIN + b"vec|" + seed)
    out = []
    for i in range(n) if at is None else at:
        h = base.copy()
        h.update(i.to_bytes(8, "little"))
        out.append(int.from_bytes(h.digest(), "little") % L)
    return out


def scalars_blob(xs: list[int]) -> bytes:
    """Concatenated 32-byte encodings of scalars."""
    return b"".join(scalar_bytes(x) for x in xs)


def blob_scalars(blob: Any, n: int, where: str) -> list[int]:
    """Inverse of ``scalars_blob`` with canonicity checks."""
    if not isinstance(blob, bytes) or len(blob) != 32 * n:
        raise ValueError(f"{where}: expected {n} scalars ({32 * n} bytes)")
    out = [int.from_bytes(blob[32 * i : 32 * i + 32], "little") for i in range(n)]
    for i, v in enumerate(out):
        if v >= L:
            raise ValueError(f"{where}[{i}]: non-canonical scalar")
    return out


def blob_points(blob: Any, n: int, where: str) -> Points:
    """A blob of ``n`` 32-byte encodings, as a list of them (``Points``: held as the blob).

    The top bit is checked here (libsodium 1.0.18 ignores it); decoding validity is checked
    by the multiplication every element goes through in verification.
    """
    if not isinstance(blob, bytes) or len(blob) != 32 * n:
        raise ValueError(f"{where}: expected {n} elements ({32 * n} bytes)")
    if not high_bit_free(blob):
        raise GroupError(f"{where}: non-canonical encoding (top bit set)")
    return Points(blob)


@dataclass
class Ciphertexts:
    """``n`` ciphertexts of width ``w``, component-major (``a[j][i]``, ``b[j][i]``)."""

    a: list[Sequence[bytes]]  # lists of elements, or ``Points`` (parsed from a blob)
    b: list[Sequence[bytes]]

    @property
    def w(self) -> int:
        return len(self.a)

    @property
    def n(self) -> int:
        return len(self.a[0]) if self.a else 0

    def row(self, i: int) -> tuple[list[bytes], list[bytes]]:
        """Components of ciphertext ``i``."""
        return [col[i] for col in self.a], [col[i] for col in self.b]

    def take(self, idx: list[int]) -> Ciphertexts:
        """Ciphertexts ``idx[0], idx[1], ...`` (a permutation or selection)."""
        return Ciphertexts(
            [[c[i] for i in idx] for c in self.a], [[c[i] for i in idx] for c in self.b]
        )

    def digest(self) -> bytes:
        """Hash binding width, count and every component."""
        h = hashlib.sha512(DOMAIN + b"ciphertexts|")
        h.update(self.w.to_bytes(8, "little") + self.n.to_bytes(8, "little"))
        for col in self.a:
            h.update(joined(col))
        for col in self.b:
            h.update(joined(col))
        return h.digest()

    def to_obj(self) -> dict[str, Any]:
        """CBOR-able form."""
        return {
            "w": self.w,
            "n": self.n,
            "a": [joined(c) for c in self.a],
            "b": [joined(c) for c in self.b],
        }

    @staticmethod
    def from_obj(obj: Any, where: str = "ciphertexts") -> Ciphertexts:
        """Parse (lengths checked; element validity is checked where elements are used)."""
        if not isinstance(obj, dict) or not {"w", "n", "a", "b"} <= set(obj):
            raise ValueError(f"{where}: expected map with keys w, n, a, b")
        w, n = obj["w"], obj["n"]
        if not isinstance(w, int) or not isinstance(n, int) or w < 1 or n < 0:
            raise ValueError(f"{where}: bad width/count {w!r}/{n!r}")
        if not isinstance(obj["a"], list) or not isinstance(obj["b"], list):
            raise ValueError(f"{where}: a and b must be lists")
        if len(obj["a"]) != w or len(obj["b"]) != w:
            raise ValueError(f"{where}: expected {w} components")
        a = [blob_points(obj["a"][j], n, f"{where}.a[{j}]") for j in range(w)]
        b = [blob_points(obj["b"][j], n, f"{where}.b[{j}]") for j in range(w)]
        return Ciphertexts(a, b)


def session_digest(session_id: str, params: dict[str, Any], pk: bytes, dkg_digest: bytes) -> bytes:
    """Root of all challenges of a run."""
    return fs_hash("session", session_id, pk, dkg_digest, cbor2.dumps(params, canonical=True))


def shuffle_generators(sess: bytes, batch: str, n: int) -> tuple[bytes, list[bytes]]:
    """Commitment generators ``H`` and ``H_1..H_n`` of a batch (no known discrete logs)."""
    h = hash_to_point(DOMAIN, b"shuffle-H", sess, batch.encode())
    hs = generators(DOMAIN + b"shuffle-Hi|" + sess + b"|" + batch.encode(), n)
    return h, hs


def perm_challenge_seed(
    sess: bytes, step: int, batch: str, inp: Ciphertexts, out: Ciphertexts, c: list[bytes]
) -> bytes:
    """Seed of the per-element challenges ``u_i`` (after the permutation commitment)."""
    return fs_hash("shuffle-u", sess, step, batch, inp.digest(), out.digest(), b"".join(c))


def shuffle_challenge(
    useed: bytes,
    chat: list[bytes],
    that: list[bytes],
    t1: bytes,
    t2: bytes,
    t3: bytes,
    t4a: list[bytes],
    t4b: list[bytes],
) -> int:
    """The main challenge ``c`` of the shuffle proof (binds everything before it)."""
    return fs_scalar(
        "shuffle-c", useed, b"".join(chat), b"".join(that), t1, t2, t3, b"".join(t4a), b"".join(t4b)
    )


def client_challenge(
    sess: bytes, client: str, batch: str, index: int, a: list[bytes], b: list[bytes], t: list[bytes]
) -> int:
    """Challenge of a client's proof of knowledge of its encryption randomness."""
    return fs_scalar(
        "client-pok", sess, client, batch, index, b"".join(a), b"".join(b), b"".join(t)
    )


def dec_share_seed(
    sess: bytes,
    server: int,
    batch: str,
    dset: Sequence[int],
    bs: list[list[bytes]],
    ds: list[list[bytes]],
) -> bytes:
    """Seed of the random linear combination in a batched decryption-share proof.

    ``fs_hash("dec-rlc", sess, server, batch, dset, w, b_0, .., b_{w-1}, d_0, .., d_{w-1})``
    with ``dset`` as the concatenated 8-byte little-endian server indices, ``w`` the number of
    components and each ``b_j``/``d_j`` the concatenation of a column's encodings. ``dset`` is
    the decryption set (the ``t`` servers whose Lagrange-weighted shares combine), so a share
    made for one set cannot be replayed in another.
    """
    if len(bs) != len(ds):
        raise ValueError(f"dec_share_seed: {len(bs)} ciphertext columns, {len(ds)} share columns")
    dset_bytes = b"".join(int(j).to_bytes(8, "little") for j in dset)
    cols = [b"".join(col) for col in bs] + [b"".join(col) for col in ds]
    return fs_hash("dec-rlc", sess, server, batch, dset_bytes, len(bs), *cols)


def dleq_challenge(
    label: str, ctx: bytes, g1: bytes, y1: bytes, g2: bytes, y2: bytes, t1: bytes, t2: bytes
) -> int:
    """Chaum-Pedersen challenge for ``log_g1 y1 = log_g2 y2``."""
    return fs_scalar("dleq|" + label, ctx, g1, y1, g2, y2, t1, t2)


def dkg_pok_challenge(sess_id: str, server: int, c0: bytes, t: bytes) -> int:
    """Challenge of a DKG dealer's proof of knowledge of its constant term."""
    return fs_scalar("dkg-pok", sess_id, server, c0, t)


def dkg_digest(commitments: dict[int, list[bytes]]) -> bytes:
    """Digest of all qualified dealers' Feldman commitments."""
    parts: list[Any] = []
    for i in sorted(commitments):
        parts += [i, b"".join(commitments[i])]
    return fs_hash("dkg", *parts)


def users_whole(inputs: Sequence[dict[str, Any]], rejected: Sequence[dict[str, Any]]) -> int:
    """Users whose submissions arrived whole: the users the included client parties declared,
    less every client id with a rejected submission (a user's several messages share its client
    id; ids are per submitting party). What the privacy gate counts as the users of a round,
    recomputable from the record."""
    declared = sum(int(p["users"]) for p in inputs)
    return max(0, declared - len({(r.get("party"), r["client"]) for r in rejected}))


def bound_client_id(party: str, client: str) -> str:
    """The id a client proof is bound to: the submitting party's name (no ``/`` in it, see
    ``parties.runtime.cluster.NAME_RE``), ``/``, the party's own id for the user."""
    return f"{party}/{client}"


def signed_statement(kind: str, session: str, party: str, digest: str) -> bytes:
    """The bytes a party signs to vouch for a mix-net message (``kind``: ``inputs`` for a
    client party's submission list, ``report`` for a server's input report, ``mix`` for a mix
    step) of ``session`` with SHA-256 hex ``digest``; each field length-prefixed."""
    out = b"sdp-mixnet-evidence-v1"
    for f in (kind, session, party, digest):
        raw = f.encode()
        out += len(raw).to_bytes(4, "big") + raw
    return out
