"""Integer fixed-point encoding for Paillier plaintexts, with explicit overflow checks.

A real v is encoded as round(v * 2^F) (scale 2^F, *fixed and public*; unlike phe's floating
encoding no per-value exponent travels with the ciphertext, so nothing leaks about magnitudes).
Negative integers map to N - |v|. A product of two encodings has scale 2^(2F). Every operation
states a bound and ``check_bound`` raises ``OverflowError`` before a result could wrap mod N.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def encode(values: Iterable[float] | np.ndarray, frac_bits: int, bound_bits: int) -> list[int]:
    """Integers round(v 2^F); raises OverflowError if some |v| 2^F >= 2^bound_bits."""
    if frac_bits < 0 or bound_bits <= 0:
        raise ValueError(f"encode: frac_bits={frac_bits}, bound_bits={bound_bits} invalid")
    arr = np.asarray(values, dtype=float).ravel()
    if not np.isfinite(arr).all():
        raise ValueError("encode: non-finite value")
    limit = float(2**bound_bits)
    scaled = arr * float(2**frac_bits)
    if arr.size and np.abs(scaled).max() >= limit:
        raise OverflowError(f"encode: |value| * 2^{frac_bits} exceeds 2^{bound_bits}")
    return [int(x) for x in np.rint(scaled).astype(object)] if arr.size else []


def to_mod(ints: Iterable[int], n: int) -> list[int]:
    """Signed integers to residues mod n (negative -> n - |v|)."""
    return [int(v) % n for v in ints]


def from_mod(residues: Iterable[int], n: int) -> list[int]:
    """Residues mod n to centred signed integers in (-n/2, n/2]."""
    half = n // 2
    return [int(r) - n if int(r) > half else int(r) for r in residues]


def decode(ints: Iterable[int], frac_bits: int) -> np.ndarray:
    """Floats v / 2^F (exact integer division first, then float)."""
    return np.array([float(v) / float(2**frac_bits) for v in ints])


def check_bound(bits: int, n: int, what: str = "value") -> None:
    """Raise OverflowError unless 2^(bits+1) < n (room for sign and centred decoding)."""
    if bits + 1 >= int(n).bit_length() - 1:
        raise OverflowError(
            f"{what}: {bits}-bit results do not fit the {int(n).bit_length()}-bit "
            "plaintext space with a sign bit"
        )


def quantize_columns(M: np.ndarray, value_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-column power-of-two scaling of a non-negative matrix into integers < 2^value_bits.

    Returns (Q as int64 array, exponents e_j) with M[:, j] ~ Q[:, j] / 2^e_j. Relative
    precision is 2^-value_bits of each column's maximum. Raises ValueError on negative input.
    """
    M = np.asarray(M, dtype=float)
    if (M < 0).any() or not np.isfinite(M).all():
        raise ValueError("quantize_columns: entries must be finite and non-negative")
    colmax = M.max(axis=0) if M.size else np.zeros(M.shape[1])
    e = np.zeros(M.shape[1], dtype=np.int64)
    pos = colmax > 0
    # largest e with colmax * 2^e < 2^value_bits
    e[pos] = value_bits - 1 - np.ceil(np.log2(colmax[pos])).astype(np.int64)
    if value_bits > 62:
        raise ValueError("quantize_columns: value_bits must be <= 62 (int64 output)")
    Q = np.rint(np.ldexp(M, e[None, :])).astype(np.int64)
    if Q.size and int(Q.max()) >= 2**value_bits:
        raise OverflowError("quantize_columns: rounding overflow")
    return Q, e
