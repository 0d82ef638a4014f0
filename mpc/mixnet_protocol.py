"""Mix-net party logic over ``PartyContext``: clients' submission, mix servers, analyzer side.

Parties: ``k`` mix servers (``cfg.servers``, 1-based index = position + 1), a client party
(``cfg.clients``, submits every user's messages) and the analyzer (``cfg.analyzer``).

Flow (message types, all public except ``dkg.share``):
1. Servers run the DKG (``mpc.dkg``) and send ``mix.key`` (joint key + DKG record) to the
   client party, which checks that all live servers agree.
2. The client party sends ``mix.submissions`` (every user's encrypted messages with proofs) to
   every server; each server screens them with the verifier's rules
   (``mixnet_verifier.screen_submissions``: invalid element, proof for another client id,
   replayed/duplicate ciphertext, wrong batch) and logs every rejection with its reason.
3. Servers mix in index order: the server whose turn it is re-encrypts and permutes every
   batch, proves the shuffle and sends ``mix.output`` to the other servers, which verify it
   (``cfg.verify_mixes``) before building on it.
4. Threshold decryption (``mpc.mixnet_decrypt``): the ``t`` lowest-index live servers send
   ``mix.decshare`` (shares pre-weighted by their Lagrange coefficients, a batched
   Chaum-Pedersen proof and the digest of the lists they decrypt); the combiner (the lowest
   of them; every server with ``combine_all``) verifies them, adds them up and sends the
   plaintexts to the analyzer as ``mix.result`` (the others send ``{"delegated": index}``).
   A member that fails or cheats is replaced by the next live server.

Cost switches for a one-box run: ``verify_mixes=False`` (servers do not re-verify each
other's proofs; the public verifier still does) and ``combine_all=False``.

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

import numpy as np

from mpc.dkg import recv_all, recv_patient, run_dkg
from mpc.elgamal import encode_rows, encrypt_points
from mpc.mixnet_decrypt import send_public, threshold_decrypt
from mpc.mixnet_schema import Ciphertexts
from mpc.mixnet_state import MixnetAbort, MixnetConfig, ServerState, session_of
from mpc.mixnet_verifier import VerifyError, screen_submissions, verify_dkg, verify_shuffle
from mpc.nizk import client_prove
from mpc.pools import process_pool
from mpc.ristretto import chunk_ranges, map_chunks
from mpc.shuffle_proof import shuffle_and_prove
from parties.runtime import codec
from parties.runtime.link import PartyContext, PeerError

__all__ = [
    "MixnetAbort",
    "MixnetConfig",
    "ServerState",
    "public_record",
    "receive_result",
    "run_clients",
    "run_local",
    "run_mix_server",
    "session_of",
]

log = logging.getLogger("mpc.mixnet")


# ------------------------------------------------------------------ clients


def make_submissions(
    cfg: MixnetConfig,
    sess: bytes,
    pk: bytes,
    batches: dict[str, np.ndarray],
    owners: dict[str, list[str]] | None = None,
    workers: int = 1,
    pool: Executor | None = None,
) -> list[dict[str, Any]]:
    """Encrypt every message row and prove knowledge of its randomness.

    ``owners[batch][i]`` is the client id of row ``i`` (default ``"u{i}"``); the message index
    counts a client's messages within a batch. Work is split across ``pool`` if given.
    """
    specs = {s.name: s for s in cfg.specs}
    subs: list[dict[str, Any]] = []
    for name, rows in batches.items():
        if name not in specs:
            raise ValueError(f"make_submissions: unknown batch {name!r}")
        spec = specs[name]
        rows = np.asarray(rows)
        if rows.ndim != 2 or rows.shape[1] != spec.width:
            raise ValueError(
                f"make_submissions: batch {name!r} needs shape (n, {spec.width}), got {rows.shape}"
            )
        ids = owners[name] if owners and name in owners else [f"u{i}" for i in range(rows.shape[0])]
        if len(ids) != rows.shape[0]:
            raise ValueError(
                f"make_submissions: {len(ids)} owners for {rows.shape[0]} rows of {name!r}"
            )
        counter: dict[str, int] = {}
        index = []
        for cid in ids:
            index.append(counter.get(cid, 0))
            counter[cid] = index[-1] + 1
        parts = map_chunks(
            _encrypt_chunk,
            [
                (sess, pk, name, spec.bound, rows[s:e], list(ids[s:e]), index[s:e])
                for s, e in chunk_ranges(rows.shape[0], 4 * workers if pool else 1)
            ],
            pool,
        )
        for part in parts:
            subs += part
    return subs


def _encrypt_chunk(
    sess: bytes,
    pk: bytes,
    name: str,
    bound: int,
    rows: np.ndarray,
    ids: list[str],
    index: list[int],
) -> list[dict[str, Any]]:
    """Submissions for a chunk of rows (module level for process pools)."""
    ct, rs = encrypt_points(pk, encode_rows(rows, bound))
    out = []
    for i, (cid, idx) in enumerate(zip(ids, index)):
        a, b = ct.row(i)
        proof = client_prove(sess, cid, name, idx, a, b, [r[i] for r in rs])
        out.append(
            {"client": cid, "batch": name, "index": idx, "ct": {"a": a, "b": b}, "proof": proof}
        )
    return out


async def receive_key(ctx: PartyContext, cfg: MixnetConfig) -> tuple[bytes, bytes, dict[str, Any]]:
    """Client side: the joint key every live server announced; returns (pk, session, dkg)."""
    ctx.phase("mix.key")
    seen: dict[bytes, dict[str, Any]] = {}
    for raw in (await recv_all(ctx, cfg.servers, "mix.key", cfg.patience)).values():
        if isinstance(raw, PeerError):
            continue
        try:
            dkg = codec.loads(raw)["dkg"]
            seen[codec.dumps(dkg)] = dkg
        except (ValueError, KeyError, TypeError):
            continue  # a garbled announcement counts as a dead server
    if len(seen) != 1:
        raise MixnetAbort(f"{ctx.name}: servers announced {len(seen)} different keys")
    dkg = next(iter(seen.values()))
    try:  # the key must follow from the published commitments and complaints
        verify_dkg(cfg.session_id, len(cfg.servers), cfg.t, dkg)
    except VerifyError as exc:
        raise MixnetAbort(f"{ctx.name}: announced key does not verify: {exc}") from None
    return dkg["pk"], session_of(cfg, dkg), dkg


async def run_clients(
    ctx: PartyContext,
    cfg: MixnetConfig,
    batches: dict[str, np.ndarray],
    owners: dict[str, list[str]] | None = None,
    tamper: Any = None,
    pool: Executor | None = None,
) -> list[dict[str, Any]]:
    """The client party: get the key, encrypt and prove, send to every server.

    ``tamper`` (tests: malicious clients) maps the submission list before sending.
    """
    pk, sess, _ = await receive_key(ctx, cfg)
    ctx.phase("mix.submit")
    own = process_pool(cfg.workers) if pool is None and cfg.workers > 1 else None
    try:
        subs = make_submissions(cfg, sess, pk, batches, owners, cfg.workers, pool or own)
    finally:
        if own is not None:
            own.shutdown()
    if tamper is not None:
        subs = tamper(subs, sess, pk)
    payload = codec.dumps(subs)
    for s in cfg.servers:
        try:
            await ctx.send(s, "mix.submissions", payload, public=True)
        except PeerError:
            continue
    return subs


async def receive_result(ctx: PartyContext, cfg: MixnetConfig) -> dict[str, np.ndarray]:
    """Analyzer side: the shuffled plaintext batches (valid rows only).

    Every result received must be identical (aborts of a minority, e.g. a cheating server that
    was excluded, are logged); with none, raises ``MixnetAbort``. The public verifier checks
    the result against the record.
    """
    ctx.phase("mix.result")
    got: dict[bytes, Any] = {}
    for raw in await recv_first_then_rest(
        ctx, cfg.servers, "mix.result", cfg.mix_patience * (len(cfg.servers) + 1), cfg.patience
    ):
        msg = codec.loads(raw)
        if not (isinstance(msg, dict) and "delegated" in msg):
            got[raw] = msg
    aborts = {v["abort"] for v in got.values() if isinstance(v, dict) and "abort" in v}
    got = {k: v for k, v in got.items() if not (isinstance(v, dict) and "abort" in v)}
    if aborts:
        log.warning("%s: servers aborted: %s", ctx.name, sorted(aborts))
    if not got:
        raise MixnetAbort(f"{ctx.name}: no result; servers aborted: {sorted(aborts)}")
    if len(got) != 1:
        raise MixnetAbort(f"{ctx.name}: received {len(got)} different results from the servers")
    res = next(iter(got.values()))
    out = {}
    for name, obj in res.items():
        rows, valid = codec.obj_to_array(obj["rows"]), codec.obj_to_array(obj["valid"]).astype(bool)
        out[name] = rows[valid]
    return out


async def recv_first_then_rest(
    ctx: PartyContext, peers: list[str], msg_type: str, first: int, rest: int
) -> list[bytes]:
    """Messages from every live peer: wait up to ``first`` timeouts for the first one, then up
    to ``rest`` timeouts for each of the others (so a dead peer does not cost the long wait)."""
    tasks = {asyncio.ensure_future(recv_patient(ctx, p, msg_type, first)): p for p in peers}
    out: list[bytes] = []
    pending = set(tasks)
    while pending and not out:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        out += [d.result() for d in done if not isinstance(d.result(), PeerError)]
    for t_ in pending:
        t_.cancel()
    if pending:
        # a task may have received its message before the cancel took effect: keep it
        got = await asyncio.gather(*pending, return_exceptions=True)
        out += [g for g in got if isinstance(g, bytes)]
        missing = [tasks[t_] for t_, g in zip(pending, got) if not isinstance(g, bytes)]
        late = await recv_all(ctx, missing, msg_type, rest)
        out += [v for v in late.values() if not isinstance(v, PeerError)]
    return out


# ------------------------------------------------------------------ servers


def _inputs(state: ServerState) -> dict[str, Ciphertexts]:
    out = {}
    for name, spec in state.cfg.spec_map().items():
        cts = [state.submissions[i]["ct"] for i in state.accepted[name]]
        comps = spec["components"]
        out[name] = Ciphertexts(
            [[c["a"][j] for c in cts] for j in range(comps)],
            [[c["b"][j] for c in cts] for j in range(comps)],
        )
    return out


def mix_all(
    state: ServerState, current: dict[str, Ciphertexts], pool: Executor | None = None
) -> dict[str, Any]:
    """This server's mix step over every batch: ``{"server", "batches": {name: {output, proof}}}``."""
    pk = state.dkg.pk  # type: ignore[union-attr]
    step: dict[str, Any] = {"server": state.me, "batches": {}}
    for name, ct in current.items():
        if ct.n < 2:  # nothing to unlink; carried over unchanged
            step["batches"][name] = {"output": ct.to_obj(), "proof": None}
            continue
        gens = state.generators(name, ct.n)
        out, proof = shuffle_and_prove(
            state.sess, state.me, name, pk, ct, gens, state.cfg.workers, pool
        )
        step["batches"][name] = {"output": out.to_obj(), "proof": proof}
    return step


def check_mix(
    state: ServerState, current: dict[str, Ciphertexts], step: Any, server: int
) -> dict[str, Ciphertexts]:
    """Parse (and verify if configured) another server's mix step; raises VerifyError."""
    if (
        not isinstance(step, dict)
        or step.get("server") != server
        or not isinstance(step.get("batches"), dict)
    ):
        raise VerifyError(f"mix[{server}]: malformed mix message")
    out = {}
    for name, ct in current.items():
        b = step["batches"].get(name)
        if b is None:
            raise VerifyError(f"mix[{server}].{name}: batch missing")
        new = Ciphertexts.from_obj(b["output"], f"mix[{server}].{name}.output")
        if ct.n < 2:
            if new.to_obj() != ct.to_obj() or b["proof"] is not None:
                raise VerifyError(
                    f"mix[{server}].{name}: a batch of < 2 messages must be carried over"
                )
        elif state.cfg.verify_mixes:
            gens = state.generators(name, ct.n)
            verify_shuffle(
                state.sess,
                server,
                name,
                state.dkg.pk,
                ct,
                new,
                b["proof"],
                gens,  # type: ignore[union-attr]
                state.cfg.workers,
            )
        out[name] = new
    return out


async def run_mix_server(
    ctx: PartyContext, cfg: MixnetConfig, me: int, pool: Executor | None = None
) -> ServerState:
    """Mix server ``cfg.servers[me - 1]``; returns its final state (``public_record(state)``).

    Raises ``MixnetAbort`` when the dead-server policy says the run cannot complete (after
    telling the analyzer, which then aborts too).
    """
    own = process_pool(cfg.workers) if pool is None and cfg.workers > 1 else None
    try:
        return await _mix_server(ctx, cfg, me, pool or own)
    except MixnetAbort as exc:
        log.error("%s", exc)
        await send_public(ctx, cfg.analyzer, "mix.result", codec.dumps({"abort": str(exc)}))
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
    state.sess = session_of(cfg, state.dkg.record)

    ctx.phase("mix.key")
    await send_public(ctx, cfg.clients, "mix.key", codec.dumps({"dkg": state.dkg.record}))
    ctx.phase("mix.submit")
    raw = await recv_patient(ctx, cfg.clients, "mix.submissions", 2 * cfg.patience)
    if isinstance(raw, PeerError):
        raise MixnetAbort(f"{ctx.name}: no submissions: {raw}")
    state.submissions = codec.loads(raw)
    if not isinstance(state.submissions, list):
        raise MixnetAbort(f"{ctx.name}: submissions must be a list")
    t0 = time.perf_counter()
    state.accepted, state.rejected = screen_submissions(
        state.sess, cfg.spec_map(), state.submissions, cfg.workers, pool
    )
    state.tick("screen submissions", t0)
    for r in state.rejected:
        log.warning(
            "%s: rejected submission %s of client %r (batch %r): %s",
            ctx.name,
            r["index"],
            r["client"],
            r["batch"],
            r["reason"],
        )
    current = _inputs(state)

    for j in range(1, k + 1):
        ctx.phase("mix.shuffle", j)
        if j in dead:
            continue
        if j == me:
            t0 = time.perf_counter()
            step = mix_all(state, current, pool)
            state.tick("mix (shuffle + prove)", t0)
            payload = codec.dumps(step)
            for jj, s in others:
                if jj not in dead:
                    await send_public(ctx, s, "mix.output", payload)
            current = _outputs(step)
            state.mixes.append(step)
            continue
        try:
            raw = await recv_patient(ctx, cfg.servers[j - 1], "mix.output", cfg.mix_patience)
            if isinstance(raw, PeerError):
                raise raw
            t0 = time.perf_counter()
            step = codec.loads(raw)
            current = check_mix(state, current, step, j)
            state.tick("verify other mixes", t0)
            state.mixes.append(step)
        except PeerError as exc:
            dead.add(j)
            state.faults.append(f"server {j} did not mix: {exc}")
        except (VerifyError, ValueError) as exc:
            state.faults.append(f"server {j} mix rejected: {exc}")
            log.warning("%s: %s", ctx.name, state.faults[-1])
    if not state.mixes:
        raise MixnetAbort(f"{ctx.name}: no server mixed")

    return await threshold_decrypt(ctx, state, current, dead, pool)


def _outputs(step: dict[str, Any]) -> dict[str, Ciphertexts]:
    return {name: Ciphertexts.from_obj(b["output"]) for name, b in step["batches"].items()}


def public_record(state: ServerState) -> dict[str, Any]:
    """The run's public record (input of ``mixnet_record_verifier.verify_record``; canonical-CBOR-able).

    Schema (elements are 32-byte ristretto255 encodings, scalars 32-byte little-endian):

    - ``session_id`` (str), ``params``: ``{k, t, servers, batches: [{name, width, bound,
      components}]}``;
    - ``dkg``: ``{commitments: {i: [t elements]}, pok: {i: {e, s}}, complaints: [{by,
      against, share | None}], qual: [i], pk, vks: {j: element}}``;
    - ``submissions``: ``[{client, batch, index, ct: {a: [c elements], b: [c elements]},
      proof: {e, s: [c scalars]}}]`` in arrival order; ``accepted``: ``{batch: [submission
      index]}``; ``rejected``: ``[{index, client, batch, reason}]``;
    - ``mixes``: ``[{server, batches: {name: {output: Ciphertexts.to_obj(), proof:
      shuffle proof (see mixnet_schema) | None for < 2 messages}}}]`` in mixing order;
      ``faults``: skipped servers with reasons;
    - ``decryption_set``: the ``t`` servers whose shares decrypted (ascending);
      ``decryption``: ``{batch: {server in the set: {d: [w blobs of n elements], proof: {e,
      s}}}}`` with ``d = (lambda_j x_j) b`` (``lambda_j`` its Lagrange coefficient in the set);
    - ``plaintexts``: ``{batch: [row (list of int) | None if not a valid message]}`` in the
      order of the last mix output.

    The caller adds ``estimate`` (the analyzer's published output) before publishing.
    """
    if state.delegated is not None:
        raise MixnetAbort(f"no public record here: server {state.delegated} combined the shares")
    if state.dkg is None or not state.plaintexts:
        raise MixnetAbort("no public record: the run did not complete")
    return {
        "session_id": state.cfg.session_id,
        "params": state.cfg.params(),
        "dkg": state.dkg.record,
        "submissions": state.submissions,
        "accepted": state.accepted,
        "rejected": state.rejected,
        "mixes": state.mixes,
        "faults": state.faults,
        "decryption_set": state.dec_set,
        "decryption": state.decryption,
        "plaintexts": state.plaintexts,
    }


def run_local(
    cfg: MixnetConfig,
    batches: dict[str, np.ndarray],
    owners: dict[str, list[str]] | None = None,
    timeout: float = 600.0,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Run every party of the mix-net in this process over ``parties.runtime.memlink``.

    Returns the analyzer's shuffled batches (valid rows) and the public record. A shuffler
    backend for simulations; networked runs call the same coroutines through the runtime.
    """
    from parties.runtime.memlink import MemoryNetwork

    names = list(cfg.servers) + [cfg.clients, cfg.analyzer]
    net = MemoryNetwork(names, timeout=timeout)
    pool = process_pool(cfg.workers) if cfg.workers > 1 else None

    async def main() -> list[Any]:
        return await asyncio.gather(
            *(run_mix_server(net.context(s), cfg, i, pool) for i, s in enumerate(cfg.servers, 1)),
            run_clients(net.context(cfg.clients), cfg, batches, owners, pool=pool),
            receive_result(net.context(cfg.analyzer), cfg),
            return_exceptions=True,
        )

    try:
        res = asyncio.run(main())
    finally:
        if pool is not None:
            pool.shutdown()
    states = [r for r in res[: len(cfg.servers)] if isinstance(r, ServerState)]
    done = [st for st in states if st.delegated is None and st.plaintexts]
    if isinstance(res[-1], BaseException) or not done:
        raise MixnetAbort(f"mix-net run failed: {res[-1]!r}")
    return res[-1], public_record(done[0])
