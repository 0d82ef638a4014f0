"""Vectorized Shamir secret sharing over the prime field GF(2^31 - 1).

Field choice: ``PRIME = 2^31 - 1`` (a Mersenne prime). Every element is stored in an int64
numpy array with values in ``[0, PRIME)``; the product of two elements is below 2^62 and fits
in int64, so every multiplication is followed by ``% PRIME`` and never overflows. On the wire
elements travel as little-endian uint32.

Hot paths (the shuffle's resharing, the MPC multiplications): ``share_wire`` shares straight to
wire bytes and ``sum_wire`` adds received sharings, both in uint32 (``add_mod32``: a sum of
two elements is below 2^32); ``mul_mod`` reduces products in uint64. Same values as ``share``,
``from_wire`` and ``a * b % PRIME``, several times less CPU.

Share representation is MPyC's: party ``i`` (0-based MPyC pid) holds the evaluation of a random
degree-``t`` polynomial ``f`` with ``f(0) = secret`` at the point ``x = i + 1``. So a party's share
array can be wrapped as ``mpc.SecFld(PRIME).array(...)`` and used by MPyC's secure arithmetic
directly (see ``mpc.permute_reshare.to_secfld``).

Randomness: share polynomials use a keyed ChaCha20 stream (``keyed_field_elements``), keyed by
a fresh 256-bit key from the OS CSPRNG (``random_field_elements``) or by a given key, with
exact rejection sampling (no modular bias).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from mpc.lagrange import lagrange_weights

PRIME = (1 << 31) - 1


_P32 = np.uint32(PRIME)
_P64 = np.uint64(PRIME)


def random_field_elements(shape: int | tuple[int, ...]) -> np.ndarray:
    """Uniform elements of GF(PRIME): a fresh 256-bit key from the OS CSPRNG expanded by
    ChaCha20 (``keyed_field_elements``, exact rejection sampling)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    count = math.prod(shape)
    return keyed_field_elements(os.urandom(32), bytes(16), count).reshape(shape)


def chacha20_stream(key: bytes, nonce: bytes, nbytes: int) -> bytes:
    """``nbytes`` of ChaCha20 keystream for a 32-byte key and 16-byte nonce (counter||nonce)."""
    if len(key) != 32 or len(nonce) != 16:
        raise ValueError(
            f"chacha20_stream: need a 32-byte key and 16-byte nonce, got "
            f"{len(key)} and {len(nonce)}"
        )
    enc = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()
    return enc.update(bytes(nbytes))


def keyed_field_words(key: bytes, nonce: bytes, count: int) -> np.ndarray:
    """``count`` uniform field elements (uint32) expanded from a key (same key -> same
    elements): ChaCha20 words masked to 31 bits, the value 2^31 - 1 rejected (exact)."""
    extra = 64 + count // 1_000_000  # spare words for the rare rejections
    words = np.frombuffer(chacha20_stream(key, nonce, 4 * (count + extra)), dtype="<u4")
    v = words & np.uint32(0x7FFFFFFF)  # candidates; 2^31 - 1 = PRIME is rejected
    if v.size and v.max() == _P32:  # probability 2^-31 per word: filter only then
        v = v[v != _P32]
    if v.size < count:
        raise RuntimeError("keyed_field_elements: keystream exhausted (probability < 2^-1000)")
    return v[:count]


def keyed_field_elements(key: bytes, nonce: bytes, count: int) -> np.ndarray:
    """``keyed_field_words`` as int64 (the representation of the rest of this module)."""
    return keyed_field_words(key, nonce, count).astype(np.int64)


def check_field(values: np.ndarray, where: str) -> np.ndarray:
    """Return ``values`` as int64 after checking they are field elements; ValueError names ``where``."""
    a = np.asarray(values)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{where}: field elements must be integers, got dtype {a.dtype}")
    a = a.astype(np.int64, copy=False)
    if a.size and (a.min() < 0 or a.max() >= PRIME):
        raise ValueError(f"{where}: values must lie in [0, {PRIME})")
    return a


def add_mod32(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """(a + b) mod PRIME for uint32 field arrays: the sum is below 2^32, and ``min(s, s -
    PRIME)`` (wrapping) picks the reduced one (several times faster than in int64 or uint64)."""
    s = np.add(a, b, out=out)
    np.minimum(s, s - _P32, out=s)
    return s


def mul_mod(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """(a * b) mod PRIME for non-negative integer field arrays (int64, uint64 or uint32), as
    int64: the product is below 2^62 and the reduction runs in uint64 (faster than int64's)."""
    au = np.asarray(a)
    au = au.view(np.uint64) if au.dtype in (np.int64, np.uint64) else au.astype(np.uint64)
    if isinstance(b, (int, np.integer)):
        bu: np.ndarray | np.uint64 = np.uint64(int(b) % PRIME)
    else:
        bb = np.asarray(b)
        bu = bb.view(np.uint64) if bb.dtype == np.int64 else bb.astype(np.uint64)
    prod = np.multiply(au, bu)
    np.remainder(prod, _P64, out=prod)
    return prod.view(np.int64)


def eval_points(m: int) -> np.ndarray:
    """The evaluation points 1..m of parties 0..m-1 (MPyC convention)."""
    return np.arange(1, m + 1, dtype=np.int64)


def share(
    secrets: np.ndarray, m: int, t: int, coefficients: np.ndarray | None = None
) -> np.ndarray:
    """Shamir-share every element of ``secrets`` among ``m`` parties with threshold ``t``.

    Returns int64 shares of shape ``(m, *secrets.shape)``; row ``i`` is party ``i``'s share
    (evaluation at ``x = i + 1``). ``coefficients`` (shape ``(t, *secrets.shape)``) fixes the
    polynomial for tests; by default they are drawn from the OS CSPRNG.
    """
    if not (m >= 1 and 0 <= t < m):
        raise ValueError(f"shamir.share: need 0 <= t < m, got m={m}, t={t}")
    s = check_field(secrets, "shamir.share secrets")
    if coefficients is None:  # field elements by construction
        c = random_field_elements((t, *s.shape))
    else:
        c = check_field(coefficients, "shamir.share coefficients")
    if c.shape != (t, *s.shape):
        raise ValueError(f"shamir.share: coefficients shape {c.shape} != {(t, *s.shape)}")
    if t == 1:
        return _share_t1(s.astype("<u4"), c[0].astype("<u4"), m).astype(np.int64)
    out = np.empty((m, *s.shape), dtype=np.int64)
    for i, x in enumerate(eval_points(m)):  # m is small; Horner per party, vectorized over data
        y = np.zeros(s.shape, dtype=np.int64)
        for d in range(t - 1, -1, -1):  # f(x) = s + c0 x + ... + c_{t-1} x^t
            y = (y + c[d]) * x % PRIME
        out[i] = (y + s) % PRIME
    return out


def lagrange_coefficients(xs: Sequence[int], x0: int = 0) -> np.ndarray:
    """Lagrange coefficients ``lambda_j`` with ``f(x0) = sum_j lambda_j f(xs[j])`` mod PRIME
    (read-only; cached: the MPC steps ask for the same few point sets again and again)."""
    return _lagrange(tuple(int(x) % PRIME for x in xs), int(x0))


@functools.lru_cache(maxsize=256)
def _lagrange(xs: tuple[int, ...], x0: int) -> np.ndarray:
    if len(set(xs)) != len(xs):
        raise ValueError(f"lagrange_coefficients: points must be distinct, got {xs}")
    arr = np.array(lagrange_weights(xs, x0, PRIME), dtype=np.int64)
    arr.flags.writeable = False
    return arr


def combine(shares: np.ndarray, coeffs: np.ndarray) -> np.ndarray:
    """``sum_j coeffs[j] * shares[j] mod PRIME`` over the first axis (vectorized)."""
    acc = np.zeros(shares.shape[1:], dtype=np.int64)
    for j in range(shares.shape[0]):
        acc = (acc + shares[j] * int(coeffs[j])) % PRIME
    return acc


def reconstruct(shares: np.ndarray, parties: Sequence[int]) -> np.ndarray:
    """Secrets from the shares of the given 0-based ``parties`` (rows of ``shares``)."""
    s = check_field(shares, "shamir.reconstruct shares")
    if s.shape[0] != len(parties):
        raise ValueError(f"shamir.reconstruct: {s.shape[0]} share rows for {len(parties)} parties")
    return combine(s, lagrange_coefficients([p + 1 for p in parties]))


def consistent(shares: np.ndarray, t: int) -> np.ndarray:
    """Boolean mask: which secrets' ``m`` shares lie on one polynomial of degree <= t.

    Interpolates from parties 0..t and checks the remaining parties' shares.
    """
    s = check_field(shares, "shamir.consistent shares")
    m = s.shape[0]
    ok = np.ones(s.shape[1:], dtype=bool)
    base = list(range(t + 1))
    for j in range(t + 1, m):
        lam = lagrange_coefficients([p + 1 for p in base], x0=j + 1)
        ok &= combine(s[: t + 1], lam) == s[j]
    return ok


def to_wire(a: np.ndarray) -> bytes:
    """Field elements as little-endian uint32 bytes."""
    return np.ascontiguousarray(a, dtype="<u4").tobytes()


def from_wire(data: bytes, shape: tuple[int, ...], where: str) -> np.ndarray:
    """Inverse of ``to_wire`` with length and range checks (ValueError names ``where``)."""
    return _wire_words(data, shape, where).astype(np.int64).reshape(shape)


def _wire_words(data: bytes | memoryview, shape: tuple[int, ...], where: str) -> np.ndarray:
    """The uint32 words of ``data`` (no copy) after the length and range checks."""
    count = math.prod(shape)
    if not isinstance(data, (bytes, bytearray, memoryview)) or len(data) != 4 * count:
        raise ValueError(
            f"{where}: expected {4 * count} bytes for shape {shape}, "
            f"got {len(data) if isinstance(data, (bytes, bytearray)) else type(data)}"
        )
    words = np.frombuffer(data, dtype="<u4")
    if words.size and words.max() >= PRIME:
        raise ValueError(f"{where}: values must lie in [0, {PRIME})")
    return words


def share_wire(secrets: np.ndarray, m: int, t: int) -> list[bytes]:
    """``share(secrets, m, t)`` straight to the wire: party i's shares as little-endian
    uint32 bytes. ``secrets`` must already be field elements (internal use: no range pass).
    For t = 1 everything runs in uint32 (one coefficient, m modular additions)."""
    if t != 1:
        sh = share(np.asarray(secrets, dtype=np.int64), m, t)
        return [to_wire(sh[i]) for i in range(m)]
    s32 = np.asarray(secrets).astype("<u4", copy=False)
    c = keyed_field_words(os.urandom(32), bytes(16), s32.size).reshape(s32.shape)
    sh = _share_t1(s32, c, m)
    return [sh[i].tobytes() for i in range(m)]


def _share_t1(s: np.ndarray, c: np.ndarray, m: int) -> np.ndarray:
    """Degree-1 shares (m, ...) uint32 of ``s`` with coefficient ``c`` (uint32 field arrays):
    f(x + 1) = f(x) + c, one modular addition per party."""
    out = np.empty((m, *s.shape), dtype="<u4")
    add_mod32(s, c, out=out[0])
    for i in range(1, m):
        add_mod32(out[i - 1], c, out=out[i])
    return out


def sum_wire(
    parts: Sequence[tuple[str, bytes | memoryview]], shape: tuple[int, ...], dtype: str = "int64"
) -> np.ndarray:
    """The sum mod PRIME of several arrays on the wire (``to_wire``), as ``dtype`` (int64 or
    uint32), with the length and range checks of ``from_wire`` (ValueError names the part's
    ``where``); the additions run in uint32."""
    acc = np.zeros(math.prod(shape), dtype="<u4")
    for where, data in parts:
        add_mod32(acc, _wire_words(data, shape, where), out=acc)
    return acc.reshape(shape) if dtype == "uint32" else acc.astype(np.int64).reshape(shape)
