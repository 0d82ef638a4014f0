"""Threshold decryption of the mixed lists by a decryption set of ``t`` servers (server side).

After mixing, the *decryption set* ``S`` is the ``t`` lowest-index live servers. Each member
``j`` sends ``mix.decshare`` ``{server, set, digest, batches: {name: {d, proof}}}`` to every
other live server, with shares ``d = (lambda_j x_j) b`` pre-weighted by its Lagrange
coefficient in ``S``: the plaintexts are ``a - sum_{j in S} d_j`` (additions only), and servers
outside ``S`` compute nothing. The batched Chaum-Pedersen proof is against ``lambda_j Y_j`` and
its challenge binds ``S`` (``mixnet_schema.dec_share_seed``).

The combiner is ``min(S)``; with ``combine_all`` every live server also verifies and combines.
A member that sends nothing is dropped; a member whose shares fail verification, or that
decrypts other lists (digest), is dropped by the verifying servers (``faults``). In the
delegated mode (``combine_all=False``) the combiner tells the others with ``mix.decctl``
(``{"set", "drop"}`` or ``{"set", "done"}``), and a combiner that goes silent is dropped by
them. Each change forms the next set from the remaining live servers, whose members make
fresh shares; with fewer than ``t`` left every server raises ``MixnetAbort``.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Executor
from typing import Any

import numpy as np

from mpc.dkg import recv_patient
from mpc.elgamal import combine_weighted_shares, decode_rows, lagrange_at_zero
from mpc.mixnet_schema import Ciphertexts, blob_points
from mpc.mixnet_state import MixnetAbort, ServerState
from mpc.mixnet_verifier import verify_dec_shares, weighted_key
from mpc.nizk import dec_share_prove
from mpc.ristretto import L, chunk_ranges, map_chunks, smul_many
from parties.runtime import codec
from parties.runtime.link import PartyContext, PeerError

log = logging.getLogger("mpc.mixnet")


def digest_all(current: dict[str, Ciphertexts]) -> bytes:
    """Digest of every batch's final list (servers check they decrypt the same lists)."""
    return b"".join(current[n].digest() for n in sorted(current))


async def send_public(ctx: PartyContext, peer: str, msg_type: str, payload: bytes) -> None:
    """Send a public message; a dead peer is logged, not fatal."""
    try:
        await ctx.send(peer, msg_type, payload, public=True)
    except PeerError as exc:
        log.warning("%s: could not send %s to %s: %s", ctx.name, msg_type, peer, exc)


def _shares_chunk(x: int, pts: list[bytes]) -> list[bytes]:
    """Decryption shares ``x * b`` of a chunk (module level for process pools)."""
    return smul_many([x] * len(pts), pts, "decryption share")


def make_shares(
    state: ServerState,
    current: dict[str, Ciphertexts],
    dset: list[int],
    digest: bytes,
    pool: Executor | None,
) -> dict[str, Any]:
    """This server's ``mix.decshare`` message for decryption set ``dset`` (weighted shares)."""
    cfg, me = state.cfg, state.me
    xw = lagrange_at_zero(dset)[dset.index(me)] * state.dkg.x % L  # type: ignore[union-attr]
    nch = 4 * cfg.workers if pool else 1
    msg: dict[str, Any] = {"server": me, "set": list(dset), "digest": digest, "batches": {}}
    for name, ct in current.items():
        ds = [
            sum(
                map_chunks(
                    _shares_chunk, [(xw, col[s:e]) for s, e in chunk_ranges(ct.n, nch)], pool
                ),
                [],
            )
            for col in ct.b
        ]
        msg["batches"][name] = {
            "d": [b"".join(c) for c in ds],
            "proof": dec_share_prove(
                state.sess, me, name, xw, ct.b, ds, cfg.workers, pool, dset=dset
            ),
        }
    return msg


async def _recv_share(
    ctx: PartyContext, state: ServerState, j: int, dset: list[int], digest: bytes
) -> dict[str, Any] | str:
    """Server ``j``'s share message for ``dset`` (stale ones of earlier sets are skipped; any
    message about other lists than ours disqualifies ``j`` at once)."""
    cfg = state.cfg
    while True:
        raw = await recv_patient(ctx, cfg.servers[j - 1], "mix.decshare", 2 * cfg.patience)
        if isinstance(raw, PeerError):
            return f"no decryption share: {raw}"
        try:
            msg = codec.loads(raw)
        except ValueError as exc:
            return f"malformed decryption share: {exc}"
        if not isinstance(msg, dict):
            return "malformed decryption share: not a map"
        if msg.get("digest") != digest:  # it built on a rejected mix or saw other outputs
            return "it decrypts different lists"
        if msg.get("set") == dset:
            return msg


def _check_share(
    state: ServerState,
    current: dict[str, Ciphertexts],
    j: int,
    msg: dict[str, Any],
    dset: list[int],
    pool: Executor | None,
) -> tuple[dict[str, list[list[bytes]]] | None, str]:
    """Parse and verify server ``j``'s shares; ``(shares per batch, "")`` or ``(None, why)``."""
    if msg.get("server") != j:
        return None, "share message names another server"
    vk = state.dkg.vks.get(j)  # type: ignore[union-attr]
    if vk is None:
        return None, "no verification key"
    y = weighted_key(vk, j, dset)
    out = {}
    try:
        for name, ct in current.items():
            b = msg["batches"][name]
            ds = [blob_points(x, ct.n, f"share of server {j}") for x in b["d"]]
            err = verify_dec_shares(
                state.sess, j, name, y, ct.b, ds, b["proof"], state.cfg.workers, pool, dset=dset
            )
            if err:
                return None, err
            out[name] = ds
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"malformed: {exc}"
    return out, ""


async def _recv_ctl(
    ctx: PartyContext, state: ServerState, combiner: int, dset: list[int]
) -> dict[str, Any] | None:
    """The combiner's verdict on ``dset`` (``None`` if it went silent)."""
    cfg = state.cfg
    while True:
        raw = await recv_patient(ctx, cfg.servers[combiner - 1], "mix.decctl", 2 * cfg.patience)
        if isinstance(raw, PeerError):
            return None
        try:
            msg = codec.loads(raw)
        except ValueError:
            return None
        if isinstance(msg, dict) and msg.get("set") == dset:
            return msg


async def threshold_decrypt(
    ctx: PartyContext,
    state: ServerState,
    current: dict[str, Ciphertexts],
    dead: set[int],
    pool: Executor | None,
) -> ServerState:
    """Run the decryption phase (see the module docstring); sends ``mix.result``."""
    cfg, me = state.cfg, state.me
    ctx.phase("mix.decrypt")
    live = [j for j in range(1, len(cfg.servers) + 1) if j not in dead]
    # every message goes to every server alive after mixing, dropped ones included, so that a
    # server that disagrees (or is being dropped) learns it and stops instead of waiting
    others = [s for j, s in enumerate(cfg.servers, 1) if j in live and j != me]
    digest = digest_all(current)
    sent: dict[tuple[int, ...], dict[str, Any]] = {}
    while True:
        dset = live[: cfg.t]
        if len(dset) < cfg.t:
            raise MixnetAbort(
                f"{ctx.name}: only {len(live)} servers left to decrypt, threshold {cfg.t}"
            )
        key = tuple(dset)
        if me in dset and key not in sent:
            t0 = time.perf_counter()
            sent[key] = make_shares(state, current, dset, digest, pool)
            state.tick("decryption shares + proof", t0)
            payload = codec.dumps(sent[key])
            for s in others:
                await send_public(ctx, s, "mix.decshare", payload)
        combiner = dset[0]
        if me != combiner and not cfg.combine_all:
            ctl = await _recv_ctl(ctx, state, combiner, dset)
            if ctl is None:
                state.faults.append(f"server {combiner} (combiner) gave no decryption verdict")
                live.remove(combiner)
                continue
            if ctl.get("done"):
                state.delegated, state.dec_set = combiner, dset
                msg = codec.dumps({"delegated": combiner})
                await send_public(ctx, cfg.analyzer, "mix.result", msg)
                return state
            drop = ctl.get("drop")
            if not isinstance(drop, list) or not set(drop) <= set(dset) - {combiner} or not drop:
                raise MixnetAbort(f"{ctx.name}: malformed decryption verdict from {combiner}")
            if me in drop:
                raise MixnetAbort(
                    f"{ctx.name}: the combiner (server {combiner}) rejected our shares"
                )
            state.faults += [f"server {j} decryption share rejected by the combiner" for j in drop]
            live = [j for j in live if j not in drop]
            continue
        t0 = time.perf_counter()
        valid: dict[int, dict[str, list[list[bytes]]]] = {}
        msgs: dict[int, dict[str, Any]] = {}
        bad: dict[int, str] = {}
        for j in dset:
            if j == me:
                msgs[j] = sent[key]
                valid[j] = {
                    name: [blob_points(x, current[name].n, "own share") for x in b["d"]]
                    for name, b in msgs[j]["batches"].items()
                }
                continue
            got = await _recv_share(ctx, state, j, dset, digest)
            if isinstance(got, str):
                bad[j] = got
                continue
            shares, why = _check_share(state, current, j, got, dset, pool)
            if shares is None:
                bad[j] = why
            else:
                valid[j], msgs[j] = shares, got
        if bad:
            for j, why in sorted(bad.items()):
                state.faults.append(f"server {j} decryption share rejected: {why}")
                log.warning("%s: %s", ctx.name, state.faults[-1])
            if me == combiner and not cfg.combine_all:
                verdict = codec.dumps({"set": dset, "drop": sorted(bad)})
                for s in others:
                    await send_public(ctx, s, "mix.decctl", verdict)
            live = [j for j in live if j not in bad]
            continue
        _combine(state, current, dset, valid, msgs, pool)
        state.tick("verify shares + combine + decode", t0)
        if not cfg.combine_all:
            done = codec.dumps({"set": dset, "done": True})
            for s in others:
                await send_public(ctx, s, "mix.decctl", done)
        ctx.phase("mix.result")
        result = {
            name: {
                "rows": codec.array_to_obj(rows),
                "valid": codec.array_to_obj(ok.astype(np.uint8)),
            }
            for name, (rows, ok) in state.result.items()
        }
        await send_public(ctx, cfg.analyzer, "mix.result", codec.dumps(result))
        return state


def _combine(
    state: ServerState,
    current: dict[str, Ciphertexts],
    dset: list[int],
    valid: dict[int, dict[str, list[list[bytes]]]],
    msgs: dict[int, Any],
    pool: Executor | None,
) -> None:
    """Plaintexts ``a - sum_j d_j`` of every batch into ``state`` (result, record fields)."""
    specs = {s.name: s for s in state.cfg.specs}
    state.dec_set = list(dset)
    for name, ct in current.items():
        state.decryption[name] = {j: msgs[j]["batches"][name] for j in dset}
        pts = combine_weighted_shares(ct, [valid[j][name] for j in dset], state.cfg.workers, pool)
        rows, ok = decode_rows(pts, specs[name].width, specs[name].bound)
        state.result[name] = (rows, ok)
        state.plaintexts[name] = [r.tolist() if v else None for r, v in zip(rows, ok)]
