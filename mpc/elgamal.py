"""ElGamal over ristretto255 with an injective embedding of message vectors.

Messages are ``protocols.base`` rows: ``w`` integers each in ``[0, bound)``. A row is packed
into one integer ``V = sum(v_k * bound**k)``, written as ``nbytes`` little-endian bytes, split
into 30-byte chunks, and each chunk is embedded into one group element by try-and-increment
(``embed``): the encoding is ``[2*ctr_lo] + chunk + [ctr_hi]`` and the counter is increased
until the 32 bytes are a valid canonical ristretto255 encoding (about 1 in 4 are). Since the
encoding of an element is unique, ``extract`` inverts it exactly; rows of ``c`` chunks become
width-``c`` ciphertexts with independent randomness per component.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor

import numpy as np

from mpc.mixnet.schema import EMBED_BYTES, Ciphertexts
from mpc.ristretto import (
    IDENTITY,
    G,
    chunk_ranges,
    is_valid,
    map_chunks,
    random_scalars,
    smul,
    smul_fixed_many,
    smul_many,
    sub_many,
)


def embed(payload: bytes) -> bytes:
    """Injective map of up to 30 bytes to a (non-identity) group element."""
    if len(payload) > EMBED_BYTES:
        raise ValueError(f"embed: payload of {len(payload)} bytes exceeds {EMBED_BYTES}")
    body = payload.ljust(EMBED_BYTES, b"\0")
    for ctr in range(128 * 64):
        enc = bytes([2 * (ctr & 0x7F)]) + body + bytes([ctr >> 7])
        if enc != IDENTITY and is_valid(enc):
            return enc
    raise ValueError("embed: no valid encoding found")  # probability ~ (3/4)^8192


def extract(point: bytes) -> bytes | None:
    """The 30-byte payload of an embedded element, or None if ``point`` is not in the image."""
    if len(point) != 32 or point[0] & 1 or point[31] > 0x3F:
        return None
    return point[1:31]


def message_layout(width: int, bound: int) -> tuple[int, int]:
    """``(nbytes, components)``: packed row size and ciphertext width for a batch."""
    if width < 1 or bound < 2:
        raise ValueError(f"message layout: need width >= 1 and bound >= 2, got {width}, {bound}")
    nbytes = max(1, ((bound**width - 1).bit_length() + 7) // 8)
    return nbytes, -(-nbytes // EMBED_BYTES)


def encode_rows(rows: np.ndarray, bound: int) -> list[list[bytes]]:
    """Embed message rows (shape (n, w), entries in [0, bound)) as ``c`` columns of elements."""
    rows = np.asarray(rows)
    if rows.ndim != 2:
        raise ValueError(f"encode_rows: messages must be 2-D (n, w), got shape {rows.shape}")
    if rows.size and (rows.min() < 0 or rows.max() >= bound):
        bad = int(np.argmax(((rows < 0) | (rows >= bound)).any(axis=1)))
        raise ValueError(f"encode_rows: row {bad} has a component outside [0, {bound})")
    nbytes, comps = message_layout(rows.shape[1], bound)
    cols: list[list[bytes]] = [[] for _ in range(comps)]
    weights = [bound**k for k in range(rows.shape[1])]
    for row in rows.tolist():
        v = sum(x * wk for x, wk in zip(row, weights))
        raw = v.to_bytes(comps * EMBED_BYTES, "little")
        for j in range(comps):
            cols[j].append(embed(raw[EMBED_BYTES * j : EMBED_BYTES * (j + 1)]))
    return cols


def decode_rows(
    cols: Sequence[Sequence[bytes]], width: int, bound: int
) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of ``encode_rows``: ``(rows int64 (n, w), valid bool (n,))``.

    Elements outside the embedding's image or packed values >= bound**w give invalid rows
    (all-zero in ``rows``); a malicious client can encrypt any element it knows.
    """
    nbytes, comps = message_layout(width, bound)
    if len(cols) != comps:
        raise ValueError(f"decode_rows: expected {comps} components, got {len(cols)}")
    n = len(cols[0]) if cols else 0
    rows = np.zeros((n, width), dtype=np.int64)
    valid = np.zeros(n, dtype=bool)
    limit = bound**width
    for i in range(n):
        parts = [extract(cols[j][i]) for j in range(comps)]
        if any(p is None for p in parts):
            continue
        v = int.from_bytes(b"".join(parts), "little")  # type: ignore[arg-type]
        if v >= limit:
            continue
        for k in range(width):
            v, rows[i, k] = divmod(v, bound)
        valid[i] = True
    return rows, valid


def keygen() -> tuple[int, bytes]:
    """A single-party key pair ``(x, x*G)`` (tests; runs use ``mpc.dkg``)."""
    x = random_scalars(1)[0]
    return x, smul(x, G)


def encrypt_points(pk: bytes, ms: Sequence[Sequence[bytes]]) -> tuple[Ciphertexts, list[list[int]]]:
    """Encrypt columns of elements; returns the ciphertexts and their randomness ``r[j][i]``."""
    a, b, rs = [], [], []
    for col in ms:
        r = random_scalars(len(col))
        b.append(smul_fixed_many([(r, G)], None, "encrypt"))
        a.append(smul_fixed_many([(r, pk)], list(col), "encrypt pk"))
        rs.append(r)
    return Ciphertexts(a, b), rs


def reencrypt(pk: bytes, ct: Ciphertexts, r: Sequence[Sequence[int]]) -> Ciphertexts:
    """``(a + r*PK, b + r*G)`` componentwise."""
    a = [smul_fixed_many([(r[j], pk)], ct.a[j], "reencrypt pk") for j in range(ct.w)]
    b = [smul_fixed_many([(r[j], G)], ct.b[j], "reencrypt") for j in range(ct.w)]
    return Ciphertexts(a, b)


def decrypt(x: int, ct: Ciphertexts) -> list[list[bytes]]:
    """Plaintext elements ``a - x*b`` with a full secret key."""
    return [sub_many(ct.a[j], smul_many([x] * ct.n, ct.b[j], "decrypt")) for j in range(ct.w)]


def decryption_shares(x_share: int, ct: Ciphertexts) -> list[list[bytes]]:
    """One server's shares ``d[j][i] = x_share * b[j][i]``."""
    return [smul_many([x_share] * ct.n, ct.b[j], "decryption share") for j in range(ct.w)]


def combine_weighted_shares(
    ct: Ciphertexts,
    shares: Sequence[list[list[bytes]]],
    workers: int = 1,
    pool: Executor | None = None,
) -> list[list[bytes]]:
    """Plaintext elements ``a - sum_k d_k`` from shares pre-weighted by Lagrange coefficients."""
    ranges = chunk_ranges(ct.n, 4 * workers if pool else 1)
    out = []
    for j in range(ct.w):
        args = [(ct.a[j][s:e], [d[j][s:e] for d in shares]) for s, e in ranges]
        out.append(sum(map_chunks(_sub_chunk, args, pool), []))
    return out


def _sub_chunk(a: list[bytes], ds: list[list[bytes]]) -> list[bytes]:
    """``a - sum_k d_k`` for a chunk (module level for process pools)."""
    acc = a
    for d in ds:
        acc = sub_many(acc, d, "combine")
    return acc
