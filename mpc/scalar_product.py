"""Two-party sum-of-scalar-products with Paillier (seed 001, spec §3.2.4), faithful and optimized.

Parties: A (key owner, "master") and B. Both run as coroutines over a ``PartyContext``.

**Faithful per-entry protocol** (``ssp_alice`` / ``ssp_bob``), one *call* computes
R = a.c + b.d where A holds (a, b) and B holds (c, d) (integer vectors, already fixed-point
encoded); a batch of calls travels in one message per step:
1. A -> B: Enc(a_1..), Enc(b_1..) (fresh encryptions, every call its own);
2. B draws v1, v2 uniform in Z_N, returns E1 = prod Enc(a_i)^{c_i} Enc(v1),
   E2 = prod Enc(b_i)^{d_i} Enc(v2) (fresh Enc(v) re-randomizes them) and r2 = v1 + v2;
3. A decrypts r1 = a.c + v1 + b.d + v2, computes R = r1 - r2 (mod N, centred);
4. A -> B: R.
What each party learns: A learns R for every call (the paper's output) and nothing about a.c vs
b.d separately (perfect masking in Z_N); B learns R (step 4) and nothing from ciphertexts (IND-CPA).

**Optimized cross-Gram protocol** (``gram_cross_alice`` / ``gram_cross_bob``): computes, for
public non-negative weight vectors c^(1..r) (n) the A x B blocks
Gamma_jk(c) = sum_i c_i G_ij G_ik (j in A, k in B) of the weighted Gram matrices used by the LM
step, where G_ij = D_ij |beta_j|: B's columns are 0/1 columns scaled by one private number |beta_k|.
1. A quantizes the n x (r m1) matrix c_i |beta_j| D_ij column-wise (public power-of-two column
   scales, 2^-40 relative precision), packs K values per plaintext (96-bit slots) and sends one
   *fresh* encryption per packed row chunk: n ceil(r m1 / K) encryptions per LM iteration,
   instead of the per-entry protocol's two fresh vectors per entry;
2. B, for each of its items k, multiplies the ciphertexts of the transactions containing k
   (homomorphic sums over a 0/1 column: additions only), raises the result to its quantized
   |beta_k| (public power-of-two scale), re-randomizes it and returns m2 ceil(r m1 / K) ciphertexts;
3. A decrypts and unpacks Gamma_AB(c) for all r weights.
Outputs are the same numbers as the per-entry protocol's (up to fixed-point rounding, 2^-40
relative). The paper's additive masks v1, v2 are omitted here: every output entry is one scalar
product whose value A learns anyway, so they would hide nothing; B's returned ciphertexts are
re-randomized instead. B does not receive R (it does not need it), so B learns less than in the
paper. What A learns: exactly Gamma_AB(c) (and the public scales, i.e. the power of two of
max_k |beta_k|). See ``protocols/txpub/sites.py`` for what the whole GS reveals.
"""

from __future__ import annotations

import math
import secrets
import time
from dataclasses import dataclass, field

import gmpy2
import numpy as np

from mpc.fixed_point import from_mod, quantize_columns
from mpc.paillier import (
    FastPaillier,
    PublicFixedBase,
    ciphertexts_from_bytes,
    ciphertexts_to_bytes,
)
from parties.runtime import codec

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


async def _send(ctx, peer: str, tag: str, payload: bytes, stats: ProtocolStats) -> None:
    stats.bytes_sent += len(payload)
    stats.messages += 1
    await ctx.send(peer, tag, payload, public=True)


def _powsigned(c: gmpy2.mpz, e: int, nsq: gmpy2.mpz) -> gmpy2.mpz:
    """c^e mod N^2 for a signed integer e (negative -> inverse)."""
    if e >= 0:
        return gmpy2.powmod(c, e, nsq)
    return gmpy2.powmod(gmpy2.invert(c, nsq), -e, nsq)


# ----------------------------------------------------------------------------- faithful protocol
async def ssp_alice(
    ctx,
    peer: str,
    fp: FastPaillier,
    calls: list[tuple[list[int], list[int]]],
    tag: str = "ssp",
    stats: ProtocolStats | None = None,
) -> list[int]:
    """A's side of a batch of sum-of-scalar-products calls; returns R (signed ints) per call."""
    stats = stats if stats is not None else ProtocolStats()
    t0 = time.perf_counter()
    n_int = int(fp.n)
    shapes = [[len(a), len(b)] for a, b in calls]
    flat = [x for a, b in calls for x in (*a, *b)]
    cts = fp.encrypt_ints([x % n_int for x in flat])
    stats.encryptions += len(cts)
    stats.calls += len(calls)
    await _send(
        ctx,
        peer,
        f"{tag}.enc",
        codec.dumps({"shapes": shapes, "ct": ciphertexts_to_bytes(cts, fp.nsq)}),
        stats,
    )
    msg = codec.loads(await ctx.recv(peer, f"{tag}.masked"))
    E = ciphertexts_from_bytes(msg["ct"], fp.nsq)
    r2 = [int(v) for v in msg["r2"]]
    if len(E) != 2 * len(calls) or len(r2) != len(calls):
        raise ValueError(
            f"ssp_alice: peer {peer} returned {len(E)} ciphertexts for {len(calls)} calls"
        )
    r1 = [
        (fp.decrypt_int(E[2 * k]) + fp.decrypt_int(E[2 * k + 1])) % n_int for k in range(len(calls))
    ]
    stats.decryptions += len(E)
    R = from_mod([(x - y) % n_int for x, y in zip(r1, r2)], n_int)
    await _send(ctx, peer, f"{tag}.R", codec.dumps({"R": [int(v) % n_int for v in R]}), stats)
    stats.seconds += time.perf_counter() - t0
    return R


async def ssp_bob(
    ctx,
    peer: str,
    pub: PublicFixedBase,
    calls: list[tuple[list[int], list[int]]],
    tag: str = "ssp",
    stats: ProtocolStats | None = None,
) -> list[int]:
    """B's side: inputs (c, d) per call; returns R (signed ints) per call."""
    stats = stats if stats is not None else ProtocolStats()
    t0 = time.perf_counter()
    nsq, n_int = pub.nsq, int(pub.n)
    msg = codec.loads(await ctx.recv(peer, f"{tag}.enc"))
    shapes = msg["shapes"]
    cts = ciphertexts_from_bytes(msg["ct"], nsq)
    if len(shapes) != len(calls):
        raise ValueError(f"ssp_bob: {len(shapes)} calls from {peer}, expected {len(calls)}")
    out, r2 = [], []
    pos = 0
    for (la, lb), (c, d) in zip(shapes, calls):
        if la != len(c) or lb != len(d):
            raise ValueError(f"ssp_bob: vector lengths ({la}, {lb}) != ({len(c)}, {len(d)})")
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
    await _send(
        ctx,
        peer,
        f"{tag}.masked",
        codec.dumps({"ct": ciphertexts_to_bytes(out, nsq), "r2": r2}),
        stats,
    )
    R = codec.loads(await ctx.recv(peer, f"{tag}.R"))["R"]
    stats.seconds += time.perf_counter() - t0
    return from_mod([int(v) for v in R], n_int)


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
async def gram_cross_alice(
    ctx,
    peer: str,
    fp: FastPaillier,
    weights: np.ndarray,
    GA_abs: np.ndarray,
    tag: str = "gram",
    stats: ProtocolStats | None = None,
    workers: int = 1,
) -> np.ndarray:
    """A's side: returns Gamma_AB (r, m1, m2) for the r public weight rows (r, n) >= 0.

    ``workers > 1`` encrypts in a forked process pool."""
    stats = stats if stats is not None else ProtocolStats()
    t0 = time.perf_counter()
    weights = np.atleast_2d(np.asarray(weights, float))
    GA_abs = np.asarray(GA_abs, float)
    r, n = weights.shape
    if GA_abs.shape[0] != n:
        raise ValueError(f"gram_cross_alice: G_A has {GA_abs.shape[0]} rows, weights {n}")
    if (weights < 0).any():
        raise ValueError("gram_cross_alice: weights must be non-negative")
    m1 = GA_abs.shape[1]
    V, K = _layout(n, int(fp.n).bit_length())
    vals = (weights[:, :, None] * GA_abs[None, :, :]).transpose(1, 0, 2).reshape(n, r * m1)
    Q, e = quantize_columns(vals, V)
    plains = pack_rows(Q, K)
    cts = fp.encrypt_ints(plains, workers=workers)
    stats.encryptions += len(cts)
    T = -(-(r * m1) // K)
    await _send(
        ctx,
        peer,
        f"{tag}.enc",
        codec.dumps({"n": n, "T": T, "K": K, "V": V, "ct": ciphertexts_to_bytes(cts, fp.nsq)}),
        stats,
    )
    msg = codec.loads(await ctx.recv(peer, f"{tag}.agg"))
    m2, f_b = int(msg["m2"]), int(msg["f"])
    agg = ciphertexts_from_bytes(msg["ct"], fp.nsq)
    if len(agg) != m2 * T:
        raise ValueError(f"gram_cross_alice: {len(agg)} ciphertexts from {peer}, expected {m2 * T}")
    out = np.zeros((r * m1, m2))
    for k in range(m2):
        slots: list[int] = []
        for t in range(T):
            slots += unpack(fp.decrypt_int(agg[k * T + t]), K)
        stats.decryptions += T
        ints = slots[: r * m1]
        out[:, k] = [math.ldexp(float(v), -int(e[s]) - f_b) for s, v in enumerate(ints)]
    stats.calls += 1
    stats.seconds += time.perf_counter() - t0
    return out.reshape(r, m1, m2)


async def gram_cross_bob(
    ctx,
    peer: str,
    pub: PublicFixedBase,
    DB: np.ndarray,
    absbeta_B: np.ndarray,
    tag: str = "gram",
    stats: ProtocolStats | None = None,
) -> None:
    """B's side: aggregates A's packed ciphertexts over its 0/1 columns, scales by |beta_k|."""
    stats = stats if stats is not None else ProtocolStats()
    t0 = time.perf_counter()
    DB = np.asarray(DB, bool)
    absbeta_B = np.asarray(absbeta_B, float)
    if (absbeta_B <= 0).any() or not np.isfinite(absbeta_B).all():
        raise ValueError("gram_cross_bob: |beta| must be positive and finite")
    msg = codec.loads(await ctx.recv(peer, f"{tag}.enc"))
    n, T, V = int(msg["n"]), int(msg["T"]), int(msg["V"])
    if n != DB.shape[0]:
        raise ValueError(f"gram_cross_bob: {peer} sent {n} rows, B holds {DB.shape[0]}")
    nsq = pub.nsq
    cts = ciphertexts_from_bytes(msg["ct"], nsq)
    if len(cts) != n * T:
        raise ValueError(f"gram_cross_bob: expected {n * T} ciphertexts, got {len(cts)}")
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
    await _send(
        ctx,
        peer,
        f"{tag}.agg",
        codec.dumps({"m2": DB.shape[1], "f": f_b, "ct": ciphertexts_to_bytes(out, nsq)}),
        stats,
    )
    stats.seconds += time.perf_counter() - t0


# ----------------------------------------------------------------------------- per-entry Gram
def encode_signed(values: np.ndarray, frac_bits: int) -> list[int]:
    """Signed fixed-point integers round(v 2^F) (no reduction mod N)."""
    arr = np.asarray(values, float).ravel()
    return [int(v) for v in np.rint(np.ldexp(arr, frac_bits)).astype(object)]


async def gram_cross_per_entry_alice(
    ctx,
    peer: str,
    fp: FastPaillier,
    weights: np.ndarray,
    GA_abs: np.ndarray,
    m2: int,
    frac_bits: int = 30,
    stats: ProtocolStats | None = None,
) -> np.ndarray:
    """Gamma_AB via one faithful call per entry (w, j, k): a = c_w o G_A[:, j], b = (empty)."""
    weights = np.atleast_2d(weights)
    r, m1 = weights.shape[0], GA_abs.shape[1]
    calls = [
        (encode_signed(weights[w] * GA_abs[:, j], frac_bits), [])
        for w in range(r)
        for j in range(m1)
        for _ in range(m2)
    ]
    R = await ssp_alice(ctx, peer, fp, calls, tag="ssp", stats=stats)
    return np.array([math.ldexp(float(v), -2 * frac_bits) for v in R]).reshape(r, m1, m2)


async def gram_cross_per_entry_bob(
    ctx,
    peer: str,
    pub: PublicFixedBase,
    DB: np.ndarray,
    absbeta_B: np.ndarray,
    r: int,
    m1: int,
    frac_bits: int = 30,
    stats: ProtocolStats | None = None,
) -> None:
    """B's side of ``gram_cross_per_entry_alice``: c = G_B[:, k], d = (empty)."""
    GB = np.asarray(DB, float) * np.asarray(absbeta_B, float)[None, :]
    cols = [encode_signed(GB[:, k], frac_bits) for k in range(GB.shape[1])]
    calls = [(cols[k], []) for _ in range(r) for _ in range(m1) for k in range(GB.shape[1])]
    await ssp_bob(ctx, peer, pub, calls, tag="ssp", stats=stats)


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
