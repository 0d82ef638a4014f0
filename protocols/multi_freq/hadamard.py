"""Sylvester-Hadamard codewords by bit operations (the d x d matrix is never built).

H is the 2^L x 2^L Sylvester matrix, H[r, c] = (-1)^popcount(r & c). Value v in [d] uses row
r = v + 1 (row 0 is all ones), so 2^L >= d + 1; its codeword is C_v = {c : popcount(r & c) even},
half of [2^L]. Two distinct non-zero rows agree on exactly half the columns, so for v != v' the
intersection C_v n C_v' is a quarter of [2^L] (needs 2^L >= 4).

- :func:`sample_codeword`: a uniform element of C_v per entry: draw c uniform in [2^L] and, when
  the parity is odd, flip the lowest set bit of r in c (a bijection between the odd and the even
  columns, so the result is uniform on C_v);
- :func:`membership_masks`: per column c, the bit set {v : c in C_v} packed in uint64 words, the
  analyzer's table (2^L x ceil(d/64) words).
"""

from __future__ import annotations

import numpy as np


def hadamard_order(d: int) -> int:
    """log2 of the Sylvester order used for domain [d]: the least L >= 2 with 2^L >= d + 1."""
    if int(d) != d or d < 2:
        raise ValueError(f"Hadamard codewords: need an integer domain size d >= 2, got {d}")
    return max(2, int(d).bit_length())


def coord_dtype(order: int) -> type:
    """The smallest unsigned dtype holding a column index of [2^order]."""
    return np.uint8 if order <= 8 else np.uint16 if order <= 16 else np.uint32


def uniform_columns(shape: tuple[int, ...], order: int, rng: np.random.Generator) -> np.ndarray:
    """Uniform column indices of [2^order] (compact dtype): raw 64-bit generator words cut into
    bytes (or 16/32-bit lanes) and masked to ``order`` bits, uniform since 2^order divides the
    lane's range."""
    dt = np.dtype(coord_dtype(order))
    total = int(np.prod(shape, dtype=np.int64))
    words = rng.bit_generator.random_raw(-(-total * dt.itemsize // 8))
    lanes = words.view(dt)[:total]
    lanes &= dt.type((1 << order) - 1)  # in place: no second array
    return lanes.reshape(shape)


def to_codeword(columns: np.ndarray, values: np.ndarray) -> np.ndarray:
    """In place: turn rows of uniform columns into uniform elements of C_v, row by value (flip
    the lowest set bit of r = v + 1 wherever the parity is odd). Returns ``columns``."""
    c = columns
    r = (np.asarray(values, dtype=np.int64).reshape(-1) + 1).astype(c.dtype)[:, None]
    odd = (np.bitwise_count(c & r) & 1).astype(c.dtype)
    low = r & (~r + np.array(1, dtype=c.dtype))  # lowest set bit of r (r != 0)
    c ^= odd * low
    return c


def sample_codeword(
    values: np.ndarray, tau: int, order: int, rng: np.random.Generator
) -> np.ndarray:
    """(n, tau) independent uniform elements of C_v for every value v of ``values``."""
    v = np.asarray(values, dtype=np.int64).reshape(-1)
    return to_codeword(uniform_columns((v.size, tau), order, rng), v)


def membership_masks(d: int, order: int, block: int = 1 << 22) -> np.ndarray:
    """(2^order, ceil(d/64)) uint64: bit v of row c is set iff c is in C_v."""
    cols = np.arange(1 << order, dtype=np.int64)
    rows = np.arange(1, d + 1, dtype=np.int64)
    words = (d + 63) // 64
    out = np.zeros((cols.size, words * 8), dtype=np.uint8)
    per = max(1, block // max(1, d))
    for s in range(0, cols.size, per):
        c = cols[s : s + per, None]
        even = (np.bitwise_count(c & rows[None, :]) & 1) == 0
        packed = np.packbits(even, axis=1, bitorder="little")
        out[s : s + per, : packed.shape[1]] = packed
    return out.view(np.uint64)


def count_members(tuples: np.ndarray, masks: np.ndarray, d: int) -> np.ndarray:
    """Per value v in [d], how many rows of ``tuples`` (M, tau) lie in C_v^tau.

    The AND of the rows' column masks is taken column by column, in chunks of rows of about
    64 MB of masks; once most rows' masks are empty (a uniform tuple leaves every codeword after
    a few columns) the survivors are compacted, so later columns cost only the tuples still
    inside some codeword."""
    t = np.asarray(tuples)
    counts = np.zeros(d, dtype=np.int64)
    chunk = max(1024, (1 << 23) // masks.shape[1])
    for s in range(0, t.shape[0], chunk):
        counts += _count_chunk(t[s : s + chunk], masks, d)
    return counts


def _count_chunk(t: np.ndarray, masks: np.ndarray, d: int) -> np.ndarray:
    acc = masks[t[:, 0]]
    keep = None
    for j in range(1, t.shape[1]):
        acc &= masks[t[:, j] if keep is None else t[keep, j]]
        if j % 2 == 1:
            alive = acc.any(axis=1)
            if alive.mean() < 0.3:
                idx = np.flatnonzero(alive)
                acc = acc[idx]
                keep = idx if keep is None else keep[idx]
    if not acc.shape[0]:
        return np.zeros(d, dtype=np.int64)
    bits = np.unpackbits(acc.view(np.uint8), axis=1, bitorder="little")[:, :d]
    return bits.sum(axis=0, dtype=np.int64)
