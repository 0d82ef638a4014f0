"""The two sites' Paillier exchange (seed 001): messages of the sum-of-scalar-products protocols.

Site A (key owner) and site B run these coroutines over a ``PartyContext``; every computation
is a call into ``mpc.scalar_product`` (see it for the protocols and what each site learns):

* faithful per-entry protocol: ``ssp_alice`` / ``ssp_bob`` (A -> B ``{tag}.enc``: the shapes
  and A's ciphertexts; B -> A ``{tag}.masked``: two ciphertexts and r2 per call; A -> B
  ``{tag}.R``: the results);
* optimized cross-Gram protocol: ``gram_cross_alice`` / ``gram_cross_bob`` (A -> B
  ``{tag}.enc``: the packed encrypted query; B -> A ``{tag}.agg``: one ciphertext per B item
  and chunk);
* the same cross-Gram by one faithful call per entry: ``gram_cross_per_entry_alice`` /
  ``gram_cross_per_entry_bob`` (small instances, reference).

All messages are public transcript entries (ciphertexts, masked values and the results).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from mpc.fixed_point import from_mod
from mpc.paillier import (
    FastPaillier,
    PaillierPublic,
    ciphertexts_from_bytes,
    ciphertexts_to_bytes,
)
from mpc.scalar_product import (
    Calls,
    ProtocolStats,
    encode_signed,
    gram_aggregate,
    gram_decode,
    gram_encrypt,
    ssp_encrypt,
    ssp_mask,
    ssp_open,
)
from parties.runtime import codec


async def _send(ctx: Any, peer: str, tag: str, payload: bytes, stats: ProtocolStats) -> None:
    stats.bytes_sent += len(payload)
    stats.messages += 1
    await ctx.send(peer, tag, payload, public=True)


def _field(msg: Any, key: str, peer: str, tag: str) -> Any:
    if not isinstance(msg, dict) or key not in msg:
        raise ValueError(f"{tag}: message from {peer} lacks field {key!r}")
    return msg[key]


# ----------------------------------------------------------------------------- faithful protocol
async def ssp_alice(
    ctx: Any,
    peer: str,
    fp: FastPaillier,
    calls: Calls,
    tag: str = "ssp",
    stats: ProtocolStats | None = None,
) -> list[int]:
    """A's side of a batch of sum-of-scalar-products calls; returns R (signed ints) per call."""
    stats = stats if stats is not None else ProtocolStats()
    t0 = time.perf_counter()
    shapes, cts = ssp_encrypt(fp, calls, stats)
    body = {"shapes": shapes, "ct": ciphertexts_to_bytes(cts, fp.nsq)}
    await _send(ctx, peer, f"{tag}.enc", codec.dumps(body), stats)
    msg = codec.loads(await ctx.recv(peer, f"{tag}.masked"))
    E = ciphertexts_from_bytes(_field(msg, "ct", peer, tag), fp.nsq)
    r2 = [int(v) for v in _field(msg, "r2", peer, tag)]
    try:
        R = ssp_open(fp, E, r2, len(calls), stats)
    except ValueError as exc:
        raise ValueError(f"ssp_alice: peer {peer}: {exc}") from None
    n_int = int(fp.n)
    await _send(ctx, peer, f"{tag}.R", codec.dumps({"R": [int(v) % n_int for v in R]}), stats)
    stats.seconds += time.perf_counter() - t0
    return R


async def ssp_bob(
    ctx: Any,
    peer: str,
    pub: PaillierPublic,
    calls: Calls,
    tag: str = "ssp",
    stats: ProtocolStats | None = None,
) -> list[int]:
    """B's side: inputs (c, d) per call; returns R (signed ints) per call."""
    stats = stats if stats is not None else ProtocolStats()
    t0 = time.perf_counter()
    msg = codec.loads(await ctx.recv(peer, f"{tag}.enc"))
    cts = ciphertexts_from_bytes(_field(msg, "ct", peer, tag), pub.nsq)
    out, r2 = ssp_mask(pub, _field(msg, "shapes", peer, tag), cts, calls, stats)
    body = {"ct": ciphertexts_to_bytes(out, pub.nsq), "r2": r2}
    await _send(ctx, peer, f"{tag}.masked", codec.dumps(body), stats)
    R = _field(codec.loads(await ctx.recv(peer, f"{tag}.R")), "R", peer, tag)
    stats.seconds += time.perf_counter() - t0
    return from_mod([int(v) for v in R], int(pub.n))


# ----------------------------------------------------------------------------- optimized protocol
async def gram_cross_alice(
    ctx: Any,
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
    q = gram_encrypt(fp, weights, GA_abs, stats, workers)
    body = {
        "n": q.n,
        "T": q.T,
        "K": q.K,
        "V": q.V,
        "ct": ciphertexts_to_bytes(q.ciphertexts, fp.nsq),
    }
    await _send(ctx, peer, f"{tag}.enc", codec.dumps(body), stats)
    msg = codec.loads(await ctx.recv(peer, f"{tag}.agg"))
    m2, f_b = int(_field(msg, "m2", peer, tag)), int(_field(msg, "f", peer, tag))
    agg = ciphertexts_from_bytes(_field(msg, "ct", peer, tag), fp.nsq)
    try:
        out = gram_decode(fp, q, agg, m2, f_b, stats)
    except ValueError as exc:
        raise ValueError(f"gram_cross_alice: peer {peer}: {exc}") from None
    stats.seconds += time.perf_counter() - t0
    return out


async def gram_cross_bob(
    ctx: Any,
    peer: str,
    pub: PaillierPublic,
    DB: np.ndarray,
    absbeta_B: np.ndarray,
    tag: str = "gram",
    stats: ProtocolStats | None = None,
) -> None:
    """B's side: aggregates A's packed ciphertexts over its 0/1 columns, scales by |beta_k|."""
    stats = stats if stats is not None else ProtocolStats()
    t0 = time.perf_counter()
    msg = codec.loads(await ctx.recv(peer, f"{tag}.enc"))
    n, T, V = (int(_field(msg, k, peer, tag)) for k in ("n", "T", "V"))
    cts = ciphertexts_from_bytes(_field(msg, "ct", peer, tag), pub.nsq)
    out, f_b = gram_aggregate(pub, cts, n, T, V, DB, absbeta_B, stats)
    body = {"m2": int(np.asarray(DB).shape[1]), "f": f_b, "ct": ciphertexts_to_bytes(out, pub.nsq)}
    await _send(ctx, peer, f"{tag}.agg", codec.dumps(body), stats)
    stats.seconds += time.perf_counter() - t0


# ----------------------------------------------------------------------------- per-entry Gram
async def gram_cross_per_entry_alice(
    ctx: Any,
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
    ctx: Any,
    peer: str,
    pub: PaillierPublic,
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
