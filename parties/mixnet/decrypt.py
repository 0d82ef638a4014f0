"""Threshold decryption of the mixed lists by a decryption set of ``t`` servers (server side).

After mixing, the *decryption set* ``S`` is the ``t`` lowest-index live servers among those
whose step is in the verified mix chain (a server that did not mix never decrypts, so every
decryption needs a server that mixed; ``record_verifier.check_mixers``). Each member
``j`` sends ``mix.decshare`` ``{server, set, digest, batches: {name: {d, proof}}}`` to every
other live server, with shares ``d = (lambda_j x_j) b`` pre-weighted by its Lagrange
coefficient in ``S``: the plaintexts are ``a - sum_{j in S} d_j`` (additions only), and servers
outside ``S`` compute nothing. The batched Chaum-Pedersen proof is against ``lambda_j Y_j`` and
its challenge binds ``S`` (``mpc.mixnet.schema.dec_share_seed``). The arithmetic is
``mpc.mixnet.decryption``; this module is the exchange.

The combiner is ``min(S)``; with ``combine_all`` every live server also verifies and combines.
A member that sends nothing is dropped; a member whose shares fail verification, or that
decrypts other lists (digest), is dropped by the verifying servers (``faults``). In the
delegated mode (``combine_all=False``) the combiner tells the others with ``mix.decctl``
(``{"set", "drop"}`` or ``{"set", "done"}``), and a combiner that goes silent is dropped by
them. Each change forms the next set from the remaining live servers, whose members make
fresh shares; with fewer than ``t`` left every server raises ``MixnetAbort``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Executor
from typing import Any

import numpy as np

from mpc.mixnet.decryption import (
    check_share_message,
    combine,
    digest_all,
    own_shares,
    share_message,
)
from mpc.mixnet.schema import Ciphertexts
from parties.mixnet.state import MixnetAbort, ServerState
from parties.runtime import codec
from parties.runtime.link import PartyContext, PeerError
from parties.runtime.receive import recv_patient, send_public

log = logging.getLogger("parties.mixnet")


def make_shares(
    state: ServerState,
    current: dict[str, Ciphertexts],
    dset: list[int],
    digest: bytes,
    pool: Executor | None,
) -> dict[str, Any]:
    """This server's ``mix.decshare`` message for decryption set ``dset`` (weighted shares)."""
    x = state.dkg.x  # type: ignore[union-attr]
    return share_message(state.sess, state.me, x, current, dset, digest, state.cfg.workers, pool)


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
    alive = [j for j in range(1, len(cfg.servers) + 1) if j not in dead]
    mixers = {m["server"] for m in state.mixes}
    live = [j for j in alive if j in mixers]
    # every message goes to every server alive after mixing, dropped ones (and servers whose
    # mix step was rejected) included, so that a
    # server that disagrees (or is being dropped) learns it and stops instead of waiting
    others = [s for j, s in enumerate(cfg.servers, 1) if j in alive and j != me]
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
            # CPU steps run off the event loop, so that a peer's abort is taken at once
            sent[key] = await asyncio.to_thread(make_shares, state, current, dset, digest, pool)
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
        for i, j in enumerate(dset):
            ctx.progress("decryption shares checked", i, len(dset))
            if j == me:
                msgs[j] = sent[key]
                valid[j] = own_shares(msgs[j], current)
                continue
            got = await _recv_share(ctx, state, j, dset, digest)
            if isinstance(got, str):
                bad[j] = got
                continue
            shares, why = await asyncio.to_thread(
                check_share_message,
                state.sess,
                state.dkg.vks,
                current,
                j,
                got,
                dset,
                cfg.workers,
                pool,  # type: ignore[union-attr]
            )
            if shares is None:
                bad[j] = why
            else:
                valid[j], msgs[j] = shares, got
        ctx.progress("decryption shares checked", len(dset), len(dset))
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
        await asyncio.to_thread(_combine, state, current, dset, valid, msgs, pool)
        state.tick("verify shares + combine + decode", t0)
        if not cfg.combine_all:
            done = codec.dumps({"set": dset, "done": True})
            for s in others:
                await send_public(ctx, s, "mix.decctl", done)
        ctx.phase("mix.result")
        result = {
            "batches": {
                name: {
                    "rows": codec.array_to_obj(rows),
                    "valid": codec.array_to_obj(ok.astype(np.uint8)),
                }
                for name, (rows, ok) in state.result.items()
            },
            "users": state.users,
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
    state.dec_set = list(dset)
    for name, ct in current.items():  # an empty batch has no shares
        state.decryption[name] = {j: msgs[j]["batches"][name] for j in dset} if ct.n else {}
    state.result = combine(current, dset, valid, state.cfg.layouts(), state.cfg.workers, pool)
    for name, (rows, ok) in state.result.items():
        state.plaintexts[name] = [r.tolist() if v else None for r, v in zip(rows, ok)]
