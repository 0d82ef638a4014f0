"""Arithmetic of the two-party sum-of-scalar-products with Paillier (seed 001, spec §3.2.4).

Parties: A (key owner, "master") and B. This module holds each party's computation per step as
a plain function (integers and ciphertexts in and out): ``ssp_encrypt`` / ``ssp_mask`` /
``ssp_open`` for the faithful protocol, ``gram_encrypt`` / ``gram_aggregate`` /
``gram_decode`` for the optimized one, the slot packing and the cost estimators. The message
exchange between the two sites is ``parties.txpub.paillier_exchange``.

**Faithful per-entry protocol** (exchanged by ``ssp_alice`` / ``ssp_bob``), one *call* computes
R = a.c + b.d where A holds (a, b) and B holds (c, d) (integer vectors, already fixed-point
encoded); a batch of calls travels in one message per step:
1. A -> B: Enc(a_1..), Enc(b_1..) (fresh encryptions, every call its own);
2. B draws v1, v2 uniform in Z_N, returns E1 = prod Enc(a_i)^{c_i} Enc(v1),
   E2 = prod Enc(b_i)^{d_i} Enc(v2) (B's Enc(v) has a fresh full-size r^N, which
   re-randomizes them uniformly) and r2 = v1 + v2;
3. A decrypts r1 = a.c + v1 + b.d + v2, computes R = r1 - r2 (mod N, centred);
4. A -> B: R.
What each party learns: A learns R for every call (the paper's output) and nothing about a.c vs
b.d separately (perfect masking in Z_N), and nothing from the ciphertexts' randomness; B learns
R (step 4) and nothing from A's ciphertexts (IND-CPA, ``mpc.paillier``).

**Optimized cross-Gram protocol** (exchanged by ``gram_cross_alice`` / ``gram_cross_bob``):
computes, for
public non-negative weight vectors c^(1..r) (n) the A x B blocks
Gamma_jk(c) = sum_i c_i G_ij G_ik (j in A, k in B) of the weighted Gram matrices used by the LM
step, where G_ij = D_ij |beta_j|: B's columns are 0/1 columns scaled by one private number |beta_k|.
1. A quantizes the n x (r m1) matrix c_i |beta_j| D_ij column-wise (public power-of-two column
   scales, 2^-40 relative precision), packs K values per plaintext (96-bit slots) and sends one
   *fresh* encryption per packed row chunk: n ceil(r m1 / K) encryptions per LM iteration,
   instead of the per-entry protocol's two fresh vectors per entry;
2. B, for each of its items k, multiplies the ciphertexts of the transactions containing k
   (homomorphic sums over a 0/1 column: additions only), raises the result to its quantized
   |beta_k| (public power-of-two scale), re-randomizes it with a fresh full-size r^N and
   returns m2 ceil(r m1 / K) ciphertexts;
3. A decrypts and unpacks Gamma_AB(c) for all r weights.
Outputs are the same numbers as the per-entry protocol's (up to fixed-point rounding, 2^-40
relative). The paper's additive masks v1, v2 are omitted here: every output entry is one scalar
product whose value A learns anyway, so they would hide nothing; B's returned ciphertexts are
re-randomized instead. B does not receive R (it does not need it), so B learns less than in the
paper. What A learns: exactly Gamma_AB(c) (and the public scales, i.e. the power of two of
max_k |beta_k|), for the inputs it encrypted.

B's randomness (issue 16, item 3): B re-randomizes with ``PaillierPublic.rerandomize`` /
``encrypt_int``, a fresh full-size r^N with r uniform in Z*_N, never with A's fixed base h and
short exponents: A knows the factorization and chose h, so those hide nothing from A (with
h = 1, h of order 2 or short exponents A simply read B's columns off the randomness of the
answers; with an honest-looking h and p = 1 mod 2^k, through 2^k-th power residue symbols).
With a fresh r and a modulus whose N-th-root proof B checked, each answer is a uniform
encryption of its plaintext. Cost: one full exponentiation mod N^2 per returned ciphertext. See ``parties/txpub/gs_sites.py`` for what the whole GS reveals.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field

import gmpy2
import numpy as np

from mpc.fixed_point import from_mod, quantize_columns
from mpc.paillier import FastPaillier, PaillierPublic, first_non_unit

SLOT_BYTES = 12  # 96-bit slots


@dataclass
class ProtocolStats:
    """Counters for one party (encryptions, exponentiations, decryptions, bytes, seconds)."""

    encryptions: int = 0
    exponentiations: int = 0
    multiplications: int = 0
    decryptions: int = 0
    bytes_sent: int = 0
    messages: int = 0
    calls: int = 0
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _powsigned(c: gmpy2.mpz, e: int, nsq: gmpy2.mpz) -> gmpy2.mpz:
    """c^e mod N^2 for a signed integer e (negative -> inverse)."""
    if e >= 0:
        return gmpy2.powmod(c, e, nsq)
    return gmpy2.powmod(gmpy2.invert(c, nsq), -e, nsq)


# ----------------------------------------------------------------------------- faithful protocol
Calls = list[tuple[list[int], list[int]]]


def ssp_encrypt(
    fp: FastPaillier, calls: Calls, stats: ProtocolStats | None = None
) -> tuple[list[list[int]], list[gmpy2.mpz]]:
    """Step 1 at A: the vector lengths of every call and fresh encryptions of all a's and b's."""
    n_int = int(fp.n)
    shapes = [[len(a), len(b)] for a, b in calls]
    flat = [x for a, b in calls for x in (*a, *b)]
    cts = fp.encrypt_ints([x % n_int for x in flat])
    if stats is not None:
        stats.encryptions += len(cts)
        stats.calls += len(calls)
    return shapes, cts


def ssp_mask(
    pub: PaillierPublic,
    shapes: list[list[int]],
    cts: list[gmpy2.mpz],
    calls: Calls,
    stats: ProtocolStats | None = None,
) -> tuple[list[gmpy2.mpz], list[int]]:
    """Step 2 at B: per call E1 = prod Enc(a_i)^{c_i} Enc(v1), E2 likewise with (b, d, v2);
    returns the 2 ciphertexts per call and r2 = v1 + v2 mod N per call. ValueError if A's
    shapes do not match B's inputs."""
    stats = stats if stats is not None else ProtocolStats()
    nsq, n_int = pub.nsq, int(pub.n)
    if len(shapes) != len(calls):
        raise ValueError(f"ssp_mask: {len(shapes)} calls from the key owner, expected {len(calls)}")
    if sum(int(la) + int(lb) for la, lb in shapes) != len(cts):
        raise ValueError(f"ssp_mask: {len(cts)} ciphertexts do not match the shapes {shapes}")
    bad = first_non_unit(cts, pub.n)
    if bad is not None:
        call = next(j for j, end in enumerate(np.cumsum([a + b for a, b in shapes])) if bad < end)
        raise ValueError(
            f"ssp_mask: refusing the key owner's ciphertext {bad} (call {call}): "
            "not a unit mod N^2 (gcd(c, N) != 1)"
        )
    out, r2 = [], []
    pos = 0
    for (la, lb), (c, d) in zip(shapes, calls):
        if la != len(c) or lb != len(d):
            raise ValueError(f"ssp_mask: vector lengths ({la}, {lb}) != ({len(c)}, {len(d)})")
        ea, eb = cts[pos : pos + la], cts[pos + la : pos + la + lb]
        pos += la + lb
        vs = []
        for enc, w in ((ea, c), (eb, d)):
            acc = gmpy2.mpz(1)
            for ct, e in zip(enc, w):
                if e:
                    acc = gmpy2.f_mod(acc * _powsigned(ct, int(e), nsq), nsq)
                    stats.exponentiations += 1
            v = secrets.randbelow(n_int)
            acc = gmpy2.f_mod(acc * pub.encrypt_int(v), nsq)  # fresh Enc(v): masks + re-randomizes
            stats.encryptions += 1
            vs.append(v)
            out.append(acc)
        r2.append((vs[0] + vs[1]) % n_int)
    stats.calls += len(calls)
    return out, r2


def ssp_open(
    fp: FastPaillier,
    E: list[gmpy2.mpz],
    r2: list[int],
    n_calls: int,
    stats: ProtocolStats | None = None,
) -> list[int]:
    """Step 3 at A: R = D(E1) + D(E2) - r2 (mod N, centred) per call."""
    n_int = int(fp.n)
    if len(E) != 2 * n_calls or len(r2) != n_calls:
        raise ValueError(f"ssp_open: {len(E)} ciphertexts and {len(r2)} masks for {n_calls} calls")
    r1 = [(fp.decrypt_int(E[2 * k]) + fp.decrypt_int(E[2 * k + 1])) % n_int for k in range(n_calls)]
    if stats is not None:
        stats.decryptions += len(E)
    return from_mod([(x - int(y)) % n_int for x, y in zip(r1, r2)], n_int)


# ----------------------------------------------------------------------------- packing
def _layout(n_rows: int, n_bits: int) -> tuple[int, int]:
    """(value_bits V, slots per plaintext K) so that sums of n_rows products of two V-bit
    values fit a 96-bit slot, and K slots fit below N."""
    log_n = max(1, math.ceil(math.log2(n_rows + 1)))
    V = min(40, (8 * SLOT_BYTES - 1 - log_n) // 2)
    if V < 20:
        raise ValueError(f"too many rows ({n_rows}) for {8 * SLOT_BYTES}-bit slots")
    K = (n_bits - 2) // (8 * SLOT_BYTES)
    if K < 1:
        raise ValueError(f"a {n_bits}-bit key cannot hold one {8 * SLOT_BYTES}-bit slot")
    return V, K


def pack_rows(Q: np.ndarray, K: int) -> list[int]:
    """Pack each row of a non-negative int64 matrix (n, S) into ceil(S/K) integers (slots)."""
    n, S = Q.shape
    T = -(-S // K)
    buf = np.zeros((n, T * K, SLOT_BYTES), dtype=np.uint8)
    buf[:, :S, :8] = Q.astype("<u8").view(np.uint8).reshape(n, S, 8)
    buf = buf.reshape(n, T, K * SLOT_BYTES)
    return [int.from_bytes(buf[i, t].tobytes(), "little") for i in range(n) for t in range(T)]


def unpack(value: int, K: int) -> list[int]:
    """The K slot integers of a packed plaintext."""
    raw = int(value).to_bytes(K * SLOT_BYTES, "little")
    return [int.from_bytes(raw[s * SLOT_BYTES : (s + 1) * SLOT_BYTES], "little") for s in range(K)]


# ----------------------------------------------------------------------------- optimized protocol
@dataclass
class GramQuery:
    """A's packed, encrypted Gram query and what A keeps to decode the answer."""

    n: int  # rows (transactions)
    T: int  # packed plaintexts per row
    K: int  # slots per plaintext
    V: int  # value bits per slot
    r: int  # weight vectors
    m1: int  # A's items
    exponents: np.ndarray  # per-column power-of-two scales (A keeps them)
    ciphertexts: list[gmpy2.mpz] = field(repr=False, default_factory=list)


def gram_encrypt(
    fp: FastPaillier,
    weights: np.ndarray,
    GA_abs: np.ndarray,
    stats: ProtocolStats | None = None,
    workers: int = 1,
) -> GramQuery:
    """Step 1 at A: quantize c_i |beta_j| D_ij column-wise, pack K values per plaintext and
    encrypt each packed row chunk (``workers > 1`` encrypts in a forked process pool)."""
    weights = np.atleast_2d(np.asarray(weights, float))
    GA_abs = np.asarray(GA_abs, float)
    r, n = weights.shape
    if GA_abs.shape[0] != n:
        raise ValueError(f"gram_encrypt: G_A has {GA_abs.shape[0]} rows, weights {n}")
    if (weights < 0).any():
        raise ValueError("gram_encrypt: weights must be non-negative")
    m1 = GA_abs.shape[1]
    V, K = _layout(n, int(fp.n).bit_length())
    vals = (weights[:, :, None] * GA_abs[None, :, :]).transpose(1, 0, 2).reshape(n, r * m1)
    Q, e = quantize_columns(vals, V)
    cts = fp.encrypt_ints(pack_rows(Q, K), workers=workers)
    if stats is not None:
        stats.encryptions += len(cts)
    return GramQuery(n, -(-(r * m1) // K), K, V, r, m1, e, cts)


def gram_aggregate(
    pub: PaillierPublic,
    cts: list[gmpy2.mpz],
    n: int,
    T: int,
    V: int,
    DB: np.ndarray,
    absbeta_B: np.ndarray,
    stats: ProtocolStats | None = None,
) -> tuple[list[gmpy2.mpz], int]:
    """Step 2 at B: for each item k and chunk t, the product of the ciphertexts of the rows
    containing k raised to the quantized |beta_k|, re-randomized; returns (ciphertexts, f_b)
    with the public power-of-two scale f_b of |beta|."""
    stats = stats if stats is not None else ProtocolStats()
    DB = np.asarray(DB, bool)
    absbeta_B = np.asarray(absbeta_B, float)
    if (absbeta_B <= 0).any() or not np.isfinite(absbeta_B).all():
        raise ValueError("gram_aggregate: |beta| must be positive and finite")
    if n != DB.shape[0]:
        raise ValueError(f"gram_aggregate: the key owner sent {n} rows, B holds {DB.shape[0]}")
    if len(cts) != n * T:
        raise ValueError(f"gram_aggregate: expected {n * T} ciphertexts, got {len(cts)}")
    bad = first_non_unit(cts, pub.n)
    if bad is not None:
        raise ValueError(
            f"gram_aggregate: refusing the key owner's ciphertext for row {bad // T} "
            f"(chunk {bad % T}): not a unit mod N^2 (gcd(c, N) != 1)"
        )
    nsq = pub.nsq
    # public power-of-two scale: max_k |beta_k| 2^f < 2^V
    f_b = int(V - 1 - math.ceil(math.log2(float(absbeta_B.max()))))
    bq = [int(v) for v in np.rint(np.ldexp(absbeta_B, f_b)).astype(np.int64)]
    out = []
    for k in range(DB.shape[1]):
        rows = np.flatnonzero(DB[:, k])
        for t in range(T):
            acc = gmpy2.mpz(1)
            for i in rows:
                acc = gmpy2.f_mod(acc * cts[i * T + t], nsq)
            stats.multiplications += len(rows)
            acc = gmpy2.powmod(acc, bq[k], nsq)
            stats.exponentiations += 1
            out.append(pub.rerandomize(acc))
    stats.calls += 1
    return out, f_b


def gram_decode(
    fp: FastPaillier,
    query: GramQuery,
    agg: list[gmpy2.mpz],
    m2: int,
    f_b: int,
    stats: ProtocolStats | None = None,
) -> np.ndarray:
    """Step 3 at A: decrypt and unpack Gamma_AB, shape (r, m1, m2)."""
    T, K, r, m1 = query.T, query.K, query.r, query.m1
    if len(agg) != m2 * T:
        raise ValueError(f"gram_decode: {len(agg)} ciphertexts, expected {m2 * T}")
    e = query.exponents
    out = np.zeros((r * m1, m2))
    for k in range(m2):
        slots: list[int] = []
        for t in range(T):
            slots += unpack(fp.decrypt_int(agg[k * T + t]), K)
        if stats is not None:
            stats.decryptions += T
        ints = slots[: r * m1]
        out[:, k] = [math.ldexp(float(v), -int(e[s]) - f_b) for s, v in enumerate(ints)]
    if stats is not None:
        stats.calls += 1
    return out.reshape(r, m1, m2)


# ----------------------------------------------------------------------------- per-entry Gram
def encode_signed(values: np.ndarray, frac_bits: int) -> list[int]:
    """Signed fixed-point integers round(v 2^F) (no reduction mod N)."""
    arr = np.asarray(values, float).ravel()
    return [int(v) for v in np.rint(np.ldexp(arr, frac_bits)).astype(object)]


def per_entry_cost(n: int, m: int, unit: dict[str, float], ct_bytes: int) -> dict[str, float]:
    """Cost of one GS iteration with the faithful per-entry protocol (spec §4.3 correction).

    Calls: (m+n)(m+n+1)/2 for the symmetric cross term of J^T J plus (m+n) for J^T f, each on
    two vectors of length L = n + m (the rows that overlap): A encrypts 2L values, B does 2L
    exponentiations and 2 mask encryptions, A decrypts 2 ciphertexts; 2L + 2 ciphertexts and
    3 numbers travel. ``unit`` has seconds per ``enc``, ``exp``, ``dec``, ``enc_nonowner``.
    """
    L = n + m
    calls = (m + n) * (m + n + 1) / 2 + (m + n)
    sec = calls * (
        2 * L * unit["enc"] + 2 * L * unit["exp"] + 2 * unit["enc_nonowner"] + 2 * unit["dec"]
    )
    byts = calls * ((2 * L + 2) * ct_bytes + 3 * ct_bytes // 2)
    return {"calls": calls, "seconds": sec, "bytes": byts, "hours": sec / 3600.0}


def per_entry_gram_cost(
    n: int,
    m1: int,
    m2: int,
    r: int,
    unit: dict[str, float],
    ct_bytes: int,
    nnz_b: int | None = None,
) -> dict[str, float]:
    """Cost of the cross-Gram blocks Gamma_AB(c) for r weight vectors with the per-entry protocol.

    One faithful call per entry (w, j, k), ``gram_cross_per_entry_*``: A encrypts the n values
    c_w o G_A[:, j], B raises them to G_B[:, k] (zero exponents skipped: nnz_b / m2 per call on
    average, n if ``nnz_b`` is None) and adds one fresh masking encryption, A decrypts one.
    These are the same outputs as the optimized packed protocol's; the undamped GS step needs
    r = 1, the damped step r = 4.
    """
    calls = r * m1 * m2
    exps = n if nnz_b is None else nnz_b / m2
    sec = calls * (n * unit["enc"] + exps * unit["exp"] + unit["enc_nonowner"] + unit["dec"])
    byts = calls * ((n + 1) * ct_bytes + 3 * ct_bytes // 2)
    return {"calls": calls, "seconds": sec, "bytes": byts, "hours": sec / 3600.0}
