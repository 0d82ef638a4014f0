"""A mix server's message flow: DKG, key announcement, screening the submissions, mixing.

Parties: ``k`` mix servers (``cfg.servers``, 1-based index = position + 1), one or more client
parties (``cfg.client_names``: data owners, each submitting its users' messages) and the
analyzer (``cfg.analyzer``).

Flow (message types, all public except ``dkg.share``):
1. Servers run the DKG (``parties.mixnet.dkg``) and send ``mix.key`` (joint key + DKG record)
   to the client party, which checks that all live servers agree.
2. Each client party sends ``mix.submissions`` (its users' encrypted messages with proofs) to
   every server, signed. The servers agree on the input (``parties.mixnet.inputs``: signed
   reports, evidence echoed, lists forwarded; a party is left out only on proof of its own
   equivocation or if nobody holds a list it signed, a server proven to have lied takes no
   further part), concatenate the included lists in cluster order, and screen
   them with the verifier's rules
   (``mpc.mixnet.proof_checks.screen_submissions``: invalid element, proof for another client
   id, replayed/duplicate ciphertext, wrong batch) and logs every rejection with its reason.
3. Servers mix in index order: the server whose turn it is re-encrypts and permutes every
   batch, proves the shuffle (``mpc.mixnet.mixing.mix_step``) and sends ``mix.output`` to the
   other servers; every server verifies the whole mix chain (one batched equation) before
   building on it and before any decryption share (always: ``--param verify_mixes`` is
   refused by the plan, docs/security.md finding 1).
4. Threshold decryption (``parties.mixnet.decrypt``).

Cost switch for a one-box run: ``combine_all=False`` (only the combiner verifies and combines
the decryption shares; ``parties.mixnet.decrypt``).

Dead-server policy: a server that times out or disconnects (``PeerError``) is skipped. A dealer
that never dealt is not in the qualified set; a mixer that does not answer, or whose proof
fails, is skipped (recorded in ``faults``) and the next server mixes the last valid list. The
run completes iff at least ``t`` dealers qualified, at least one server mixed and at least ``t``
servers give valid decryption shares; otherwise every live server raises ``MixnetAbort`` and
publishes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Executor
from typing import Any

from mpc.mixnet.mixing import (
    accepted_inputs,
    check_step,
    mix_step,
    settle_steps,
    step_outputs,
)
from mpc.mixnet.proof_checks import screen_submissions, submitters
from mpc.mixnet.schema import Ciphertexts, VerifyError, users_whole
from mpc.pools import process_pool
from parties.mixnet.decrypt import threshold_decrypt
from parties.mixnet.dkg import run_dkg
from parties.mixnet.evidence import sign_step
from parties.mixnet.inputs import collect_inputs
from parties.mixnet.record_stream import EncodedList
from parties.mixnet.state import MixnetAbort, MixnetConfig, ServerState, session_of
from parties.runtime import codec
from parties.runtime.busy import BusyBeat
from parties.runtime.link import PartyContext, PeerError
from parties.runtime.receive import recv_patient, send_public
from parties.verify.evidence import step_header, step_signed

log = logging.getLogger("parties.mixnet")


async def run_mix_server(
    ctx: PartyContext, cfg: MixnetConfig, me: int, pool: Executor | None = None
) -> ServerState:
    """Mix server ``cfg.servers[me - 1]``; returns its final state (``record.public_record``).

    Raises ``MixnetAbort`` when the dead-server policy says the run cannot complete (after
    telling the analyzer, which then aborts too).
    """
    own = process_pool(cfg.workers) if pool is None and cfg.workers > 1 else None
    try:
        return await _mix_server(ctx, cfg, me, pool or own)
    except MixnetAbort as exc:
        log.error("%s", exc)
        msg = {"abort": str(exc), **({"evidence": exc.evidence} if exc.evidence else {})}
        await send_public(ctx, cfg.analyzer, "mix.result", codec.dumps(msg))
        raise
    finally:
        if own is not None:
            own.shutdown()


async def _mix_server(
    ctx: PartyContext, cfg: MixnetConfig, me: int, pool: Executor | None
) -> ServerState:
    k = len(cfg.servers)
    if not 1 <= me <= k:
        raise ValueError(f"mix server index {me} outside 1..{k}")
    state = ServerState(cfg, me)
    others = [(j, s) for j, s in enumerate(cfg.servers, 1) if j != me]
    try:
        state.dkg = await run_dkg(ctx, cfg.servers, me, cfg.t, cfg.session_id)
    except PeerError as exc:
        raise MixnetAbort(f"{ctx.name}: DKG failed: {exc}") from None
    dead = {j for j in range(1, k + 1) if j not in state.dkg.record["commitments"]}
    state.set_session(session_of(cfg, state.dkg.record))

    ctx.phase("mix.key")
    for c in cfg.client_names:
        await send_public(ctx, c, "mix.key", codec.dumps({"dkg": state.dkg.record}))
    ctx.phase("mix.submit")
    # until its own mix step is out, this server tells the others it is at work (``_busy``):
    # a server that falls silent before its step arrives is given up on after ``hop_patience``
    # phase timeouts of silence (parties.runtime.busy), however long honest mixing takes
    beat = ctx.busy([s for j, s in others if j not in dead], "mixing")
    # and the analyzer, which waits for this server's ``mix.result``, until it is sent
    with ctx.busy([cfg.analyzer], "mix-net round"):
        try:
            return await _mix_and_decrypt(ctx, cfg, state, me, others, dead, pool, beat)
        finally:
            beat.stop()


async def _mix_and_decrypt(
    ctx: PartyContext,
    cfg: MixnetConfig,
    state: ServerState,
    me: int,
    others: list[tuple[int, str]],
    dead: set[int],
    pool: Executor | None,
    beat: BusyBeat,
) -> ServerState:
    k, pk = len(cfg.servers), state.dkg.pk  # type: ignore[union-attr]
    dead |= await collect_inputs(ctx, cfg, state, [s for j, s in others if j not in dead])
    t0 = time.perf_counter()
    spec_map = cfg.spec_map()
    # CPU-bound work runs off the event loop, which keeps reading frames meanwhile: a peer's
    # abort stops this server at once instead of after the work (parties.runtime.party)
    state.accepted, state.rejected = await asyncio.to_thread(
        lambda: screen_submissions(
            state.sess,
            spec_map,
            state.submissions,
            cfg.workers,
            pool,
            parties=submitters(state.inputs),
        )
    )
    state.tick("screen submissions", t0)
    for r in state.rejected:
        log.warning(
            "%s: rejected submission %s of client %r of %s (batch %r): %s",
            ctx.name,
            r["index"],
            r["client"],
            r["party"],
            r["batch"],
            r["reason"],
        )
    state.users = users_whole(state.inputs, state.rejected)
    current = accepted_inputs(
        state.submissions, state.accepted, {n: b["components"] for n, b in spec_map.items()}
    )
    # screened: from now on the record is all that needs the submissions, as their encoding
    state.submissions = await asyncio.to_thread(EncodedList.of, state.submissions)

    # steps are parsed on arrival and verified (batched) before this server builds on them and
    # before anything is computed from the final lists: no share of an unverified chain. Each
    # step is signed by its mixer and names (signed) the step it built on, so a mixer that sends
    # different steps to different servers is caught by its own signatures (``_chain_check``)
    verified, pending, tentative = current, [], current
    payload = raw = step = None  # the last frame sent / received and its step
    last: dict[str, Any] | None = None  # header of the last step of the tentative chain
    seen: dict[int, dict[str, Any]] = {}  # header of every signed step received, by server
    for j in range(1, k + 1):
        ctx.phase("mix.shuffle", j)
        ctx.progress("mix hops", j - 1, k)  # the bar moves as each server's step is done
        if j in dead:
            continue
        if j == me:
            verified = await asyncio.to_thread(_settle, ctx, state, verified, pending, pool)
            pending = []
            t0 = time.perf_counter()
            step = await asyncio.to_thread(
                mix_step, state.sess, me, pk, verified, state.gens, cfg.workers, pool
            )
            state.tick("mix (shuffle + prove)", t0)
            step["prev"] = step_header(state.mixes[-1]) if state.mixes else None
            step = sign_step(ctx, cfg.session_id, step)
            payload = codec.dumps(step)
            for jj, s in others:
                if jj not in dead:
                    await send_public(ctx, s, "mix.output", payload)
            beat.stop()
            verified = tentative = step_outputs(step)
            state.mixes.append(step)
            last = seen[me] = step_header(step)
            continue
        try:
            raw = await recv_patient(ctx, cfg.servers[j - 1], "mix.output", cfg.hop_patience)
            if isinstance(raw, PeerError):
                raise raw
            step = codec.loads(raw)
            _chain_check(ctx, cfg, j, step, last, seen)
            tentative = check_step(state.sess, pk, tentative, step, j, state.gens, verify=False)
            pending.append((j, step))
            last = step_header(step)
        except PeerError as exc:
            dead.add(j)
            state.faults.append(f"server {j} did not mix: {exc}")
        except (VerifyError, ValueError) as exc:
            state.faults.append(f"server {j} mix rejected: {exc}")
            log.warning("%s: %s", ctx.name, state.faults[-1])
    ctx.progress("mix hops", k, k)
    ctx.phase("mix.verify")
    current = await asyncio.to_thread(_settle, ctx, state, verified, pending, pool)
    if not state.mixes:
        raise MixnetAbort(f"{ctx.name}: no server mixed")
    if me not in (m["server"] for m in state.mixes):
        raise MixnetAbort(f"{ctx.name}: this server did not mix; it releases no decryption share")
    # what decryption no longer needs is not kept through it: the lists parsed on the way (the
    # chain is settled in ``current``) and the last frames (the steps are in ``state.mixes``)
    del verified, tentative, pending, payload, raw, step
    return await threshold_decrypt(ctx, state, current, dead, pool)


def _chain_check(
    ctx: PartyContext,
    cfg: MixnetConfig,
    j: int,
    step: Any,
    last: dict[str, Any] | None,
    seen: dict[int, dict[str, Any]],
) -> None:
    """Server ``j``'s step is signed by it, and the step it names as its predecessor is the
    one this server holds. ``VerifyError`` (step rejected, server ``j`` named) if ``j`` did not
    sign it or names a predecessor its server never signed; ``MixnetAbort`` naming the
    predecessor's server if that server signed a step different from the one it sent here, or
    sent its signed step to ``j`` but not here (nothing is then decrypted here)."""
    keys = getattr(ctx, "public_keys", {})
    if not isinstance(step, dict) or step.get("server") != j:
        raise VerifyError(f"mix[{j}]: malformed mix message")
    head = step_header(step)
    if not step_signed(keys, cfg.servers, cfg.session_id, head):
        raise VerifyError(f"mix[{j}]: the step is not signed by server {j}")
    seen[j] = head
    prev = step.get("prev")
    if prev == last or prev is None:
        return  # the same predecessor, or built on the inputs (verification decides)
    if not step_signed(keys, cfg.servers, cfg.session_id, prev):
        raise VerifyError(f"mix[{j}]: it names a predecessor step its server never signed")
    i = prev["server"]
    if i not in seen:
        raise MixnetAbort(
            f"{ctx.name}: server {i} sent its signed mix step to server {j} but not here "
            f"(signed evidence: the step server {j} built on); nothing is decrypted"
        )
    if seen[i]["digest"] != prev["digest"]:
        raise MixnetAbort(
            f"{ctx.name}: server {i} equivocated: it signed two different mix steps, one sent "
            f"here and another that server {j} built on; nothing is decrypted",
            {"equivocation": [seen[i], prev]},
        )


def _settle(
    ctx: PartyContext,
    state: ServerState,
    verified: dict[str, Ciphertexts],
    pending: list[tuple[int, dict[str, Any]]],
    pool: Executor | None,
) -> dict[str, Ciphertexts]:
    """Verify the pending steps (``mpc.mixnet.mixing.settle_steps``); accepted ones join
    ``state.mixes``, rejected ones ``state.faults``; returns the last valid lists."""
    t0 = time.perf_counter()
    pk = state.dkg.pk  # type: ignore[union-attr]
    # one step at a time, each on the last accepted list (what the batched check falls back
    # to): a step's check holds about 3.4 kB per user while it runs (the verifier's decoded
    # tables and per-element scalars), so checking two at once would double the server's peak
    # memory for no CPU saved (docs/scale.md, "Memory")
    out, accepted, rejected = verified, [], []
    for one in pending:
        out, acc, rej = settle_steps(
            state.sess, pk, out, [one], state.gens, state.cfg.workers, pool
        )
        accepted += acc
        rejected += rej
    state.tick("verify other mixes", t0)
    state.mixes += [step for _, step in accepted]
    for j, why in rejected:
        state.faults.append(f"server {j} mix rejected: {why}")
        log.warning("%s: %s", ctx.name, state.faults[-1])
    state.mixes.sort(key=lambda m: m["server"])
    return out
