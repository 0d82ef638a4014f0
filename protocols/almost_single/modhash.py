"""FE1's hash family over primes up to 2^48 and its two decoders (Luo, Wang, Yi, CCS 2022;
``hkustDB/SDPFE`` ``FE/fe.cpp`` and ``HHD/hhd.cpp``).

h_{u,v}(x) = ((u x + v) mod q) mod b, u in [1, q), v in Z_q, q prime. For x != y,
((u x + v) mod q, (u y + v) mod q) is uniform over ordered pairs of distinct residues, so with
k = floor(q/b), r = q mod b the collision probability is p_col = k (q - b + r) / (q (q - 1))
(the authors' closed form; equal to sum_j n_j (n_j - 1) / (q (q - 1)) over the residue classes).

Arithmetic: every product is reduced by :func:`mulmod`, which splits the multiplier into 16-bit
limbs in uint64, exact for q < 2^48 (the authors use a double-and-add ``QuickMult``).

Decoders. :func:`decode_range` is the authors' ``AnalyzersSpeedUp``/``AllCounter``: message
(u, v, w) supports exactly the ids y = u^-1 (w - v + j b) mod q, j = 0..floor(q/b) (those with
w + j b < q), so one pass over the messages, each voting for its ~q/b ids, gives the count c_y of
every id in a range, in blocks of votes. :func:`count_candidates` evaluates h at a candidate
list (the authors' ``Counter``), for domains too large to count in full.
"""

from __future__ import annotations

import numpy as np

MAX_Q = 1 << 48


def collision_probability(q: int, b: int) -> float:
    """p_col = k (q - b + r) / (q (q - 1)), k = floor(q/b), r = q mod b (module docstring)."""
    if not (2 <= b <= q):
        raise ValueError(f"collision_probability: need 2 <= b <= q, got b={b}, q={q}")
    k, r = divmod(int(q), int(b))
    return k * (q - b + r) / (q * (q - 1))


def _check_q(q: int) -> np.uint64:
    if not 2 < q < MAX_Q:
        raise ValueError(f"FE1 hash: the prime q={q} must lie in (2, 2^48)")
    return np.uint64(q)


def mulmod(a: np.ndarray, x: np.ndarray | int, q: int) -> np.ndarray:
    """(a x) mod q elementwise for 0 <= a, x < q < 2^48 (int64 in, int64 out)."""
    qq = _check_q(q)
    a = np.asarray(a, dtype=np.int64).astype(np.uint64)
    x = np.broadcast_to(np.asarray(x, dtype=np.int64), np.broadcast(a, np.asarray(x)).shape)
    x = x.astype(np.uint64)
    if q < (1 << 31):
        return (a * x % qq).astype(np.int64)
    r = np.zeros(np.broadcast(a, x).shape, dtype=np.uint64)
    for shift in (32, 16, 0):  # Horner over 16-bit limbs of x: r < q, a limb < 2^16
        limb = (x >> np.uint64(shift)) & np.uint64(0xFFFF)
        r = ((r << np.uint64(16)) % qq + a * limb % qq) % qq
    return r.astype(np.int64)


def invmod(u: np.ndarray, q: int) -> np.ndarray:
    """u^(q-2) mod q elementwise (the inverse of u in Z_q*), by square-and-multiply."""
    base = np.asarray(u, dtype=np.int64) % q
    if (base == 0).any():
        raise ValueError("invmod: 0 has no inverse")
    out = np.ones_like(base)
    e = int(q) - 2
    while e:
        if e & 1:
            out = mulmod(out, base, q)
        base = mulmod(base, base, q)
        e >>= 1
    return out


def fe1_hash(u: np.ndarray, v: np.ndarray, x: np.ndarray, q: int, b: int) -> np.ndarray:
    """h_{u,v}(x) = ((u x + v) mod q) mod b elementwise."""
    return (mulmod(u, np.asarray(x, dtype=np.int64) % q, q) + v) % q % b


def decode_range(
    u: np.ndarray,
    v: np.ndarray,
    w: np.ndarray,
    q: int,
    b: int,
    lo: int,
    hi: int,
    block: int = 1 << 24,
) -> np.ndarray:
    """c_y = #{messages with h_{u,v}(y) = w} for every y in [lo, hi), by the authors' inverted
    voting (module docstring); needs (q/b + 1) q < 2^63 (true for q < 2^31)."""
    if not 0 <= lo < hi <= q or q >= (1 << 31):
        raise ValueError(f"decode_range: need 0 <= lo < hi <= q < 2^31, got {lo}, {hi}, {q}")
    u, v, w = (np.asarray(a, dtype=np.int64) for a in (u, v, w))
    k = q // b  # votes j = 0..k-1 are always in the class (w + j b < k b <= q); j = k maybe
    js = np.arange(k, dtype=np.int64)
    counts = np.zeros(q, dtype=np.int64)
    per = max(1, block // k)
    for s in range(0, u.size, per):
        ai = invmod(u[s : s + per], q)
        base = (w[s : s + per] - v[s : s + per]) % q * ai % q
        step = ai * b % q
        counts += np.bincount(
            ((base[:, None] + js[None, :] * step[:, None]) % q).ravel(), minlength=q
        )
        last = w[s : s + per] + k * b < q
        counts += np.bincount((base[last] + k * step[last]) % q, minlength=q)
    return counts[lo:hi]


def count_candidates(
    u: np.ndarray,
    v: np.ndarray,
    w: np.ndarray,
    q: int,
    b: int,
    ids: np.ndarray,
    block: int = 1 << 22,
) -> np.ndarray:
    """c_y for every y in ``ids`` (any ids in [0, q)), evaluating h per (message, id) pair."""
    ids = np.asarray(ids, dtype=np.int64)
    u, v, w = (np.asarray(a, dtype=np.int64) for a in (u, v, w))
    out = np.zeros(ids.size, dtype=np.int64)
    if ids.size == 0:
        return out
    per = max(1, block // ids.size)
    for s in range(0, u.size, per):
        h = fe1_hash(u[s : s + per, None], v[s : s + per, None], ids[None, :], q, b)
        out += (h == w[s : s + per, None]).sum(axis=0)
    return out
