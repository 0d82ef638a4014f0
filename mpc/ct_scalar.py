"""Constant-time arithmetic on SECRET scalars mod L (issue 37): libsodium's ristretto255
scalar functions (``crypto_core_ristretto255_scalar_reduce`` on a 64-byte buffer, ``_mul``,
``_add``, ``_negate``; via ``rbcl``'s bundled library) instead of Python's big-integer ``% L``,
whose long division has value-dependent corrections (``scripts/bench_timing.py``: |t| = 12 on
``% L`` of a secret, below 4.5 on these). Python ints enter and leave as fixed-width byte
strings; CPython's int-to-bytes conversion is linear in the integer's digit count, which
leaks only whether a secret is unusually short (docs/security.md, "Timing of the group code").
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

from rbcl.rbcl import _sodium

_reduce = _sodium.crypto_core_ristretto255_scalar_reduce
_s_mul = _sodium.crypto_core_ristretto255_scalar_mul
_s_add = _sodium.crypto_core_ristretto255_scalar_add
_s_neg = _sodium.crypto_core_ristretto255_scalar_negate
_buf = ctypes.create_string_buffer
_LIMIT = 1 << 512
L = 2**252 + 27742317777372353535851937790883648493  # the group order (mpc.ristretto.L)


def ct_reduce(raw: bytes) -> bytes:
    """A 64-byte little-endian integer reduced mod L, as a canonical 32-byte scalar, by
    libsodium's constant-time ``crypto_core_ristretto255_scalar_reduce`` (issue 37: secret
    scalars are no longer reduced by Python's variable-time big-integer ``% L``)."""
    if not isinstance(raw, bytes) or len(raw) != 64:
        raise ValueError("ct_reduce: need 64 bytes")
    out = _buf(32)
    _reduce(out, raw)
    return out.raw


def ct_scalar_bytes(s: int) -> bytes:
    """``s mod L`` as 32 bytes, for a SECRET integer |s| < 2^512: the reduction is libsodium's
    constant-time one on the 64-byte encoding (a negative s is negated in constant time, so
    only its sign, public in every caller, decides a branch). The int-to-bytes conversion is
    CPython's, linear in the integer's digit count: see docs/security.md, "Timing"."""
    if 0 <= s < _LIMIT:
        return ct_reduce(s.to_bytes(64, "little"))
    if -(_LIMIT) < s < 0:
        out = _buf(32)
        _s_neg(out, ct_reduce((-s).to_bytes(64, "little")))
        return out.raw
    raise ValueError("ct_scalar_bytes: |s| must be below 2^512")


def _b(s: int) -> bytes:  # a scalar in [0, L) as it is; anything else reduced first
    return s.to_bytes(32, "little") if 0 <= s < L else ct_scalar_bytes(s)


def ct_muladd(a: int, b: int, c: int) -> int:
    """``(a * b + c) mod L`` for secret scalars (a Schnorr-type response) with libsodium's
    constant-time scalar multiplication and addition."""
    ab, out = _buf(32), _buf(32)
    _s_mul(ab, ct_scalar_bytes(a), ct_scalar_bytes(b))
    _s_add(out, ab.raw, ct_scalar_bytes(c))
    return int.from_bytes(out.raw, "little")


def ct_mod(x: int) -> int:
    """``x mod L`` for a secret integer |x| < 2^512, in constant time (``ct_scalar_bytes``)."""
    return int.from_bytes(ct_scalar_bytes(x), "little")


def ct_dot(public: Sequence[int], secret: Sequence[int]) -> int:
    """``sum(public[i] * secret[i]) mod L`` with every product and sum in constant time."""
    acc, tmp = _buf(32), _buf(32)
    for p, s in zip(public, secret, strict=True):
        _s_mul(tmp, _b(p), _b(s))
        _s_add(acc, acc.raw, tmp.raw)
    return int.from_bytes(acc.raw, "little")


def ct_scan(rhat: Sequence[int], up: Sequence[int]) -> tuple[int, int]:
    """The affine map of a chain prefix, ``a <- rhat_i + up_i a`` (secret) and ``b <- up_i b``
    (public) from (0, 1); the secret part in constant time."""
    a, tmp, b = _buf(32), _buf(32), 1
    for x, y in zip(rhat, up, strict=True):
        _s_mul(tmp, _b(y), a.raw)
        _s_add(a, _b(x), tmp.raw)
        b = y * b % L
    return int.from_bytes(a.raw, "little"), b


def ct_chain(
    rhat: Sequence[int], what: Sequence[int], wp: Sequence[int], up: Sequence[int], r0: int, u0: int
) -> tuple[list[int], list[int], list[int], list[int]]:
    """The proof of shuffle's commitment chain (``proofs.shuffle.prover._phase_b``) from (R, U) =
    (r0, u0): x2_i = what_i + wp_i R_{i-1}, y2_i = wp_i U_{i-1}, x1_i = R_i = rhat_i + up_i
    R_{i-1}, y1_i = U_i = up_i U_{i-1}. R, x2 and y2 are secret (constant time); U is public."""
    m = len(up)
    x1, y1, x2, y2 = [0] * m, [0] * m, [0] * m, [0] * m
    r, tmp, out = _buf(_b(r0), 32), _buf(32), _buf(32)
    u = u0
    fb = int.from_bytes
    for i in range(m):
        wpb = _b(wp[i])
        _s_mul(tmp, wpb, r.raw)
        _s_add(out, _b(what[i]), tmp.raw)
        x2[i] = fb(out.raw, "little")
        _s_mul(out, wpb, _b(u))
        y2[i] = fb(out.raw, "little")
        _s_mul(tmp, _b(up[i]), r.raw)
        _s_add(r, _b(rhat[i]), tmp.raw)
        x1[i] = fb(r.raw, "little")
        u = y1[i] = up[i] * u % L
    return x1, y1, x2, y2
