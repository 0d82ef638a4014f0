"""The MPC secret-shared shuffler: clients, servers (on MPyC's runtime) and the analyzer.

Trust model: m >= 3 servers, Shamir threshold t < m/2, honest majority. Any coalition of at
most t servers learns nothing about the messages or the permutation (the shares are uniformly
random and some all-honest coalition's permutation is unknown to them). Security mode
``malicious-abort`` (the default): up to t servers may deviate arbitrarily; client sharings are
checked for degree <= t, every value carries 3 MAC tags through the shuffle, and the MAC check
(with ``--param mpc_multiset=on`` also the multiset check) runs before anything is opened
(``parties.mpc_shuffle.malicious``,
``mpc.mac_check``): a deviation makes the run abort, naming the check, with nothing opened.
Mode ``semi-honest`` (``--param security=semi-honest``): no checks, faster; a server that
deviates can change the output without detection. Nothing here is a publicly verifiable proof
of correct shuffling (contrast the mix-net): the checks' soundness rests on the honest majority.

Flow:
1. ``client_submit``: each client population Shamir-shares its messages over GF(2^31-1)
   (``mpc.shamir``) and sends share i to server i over the authenticated transport
   (``PartyContext``); each server receives only its own shares.
2. ``server_run``: the servers agree on the set of well-formed submissions (every server must
   have received the same row counts from a client, else the client is rejected and counted),
   agree on per-coalition seeds by X25519 inside each coalition, and run permute-and-reshare
   (``mpc.permute_reshare``, exchanged by ``parties.mpc_shuffle.reshare_exchange``) over
   MPyC's peer connections.
3. Output modes:
   - ``open``: each server sends its shares of the shuffled messages to the analyzer, who
     reconstructs them (and checks the m shares lie on one degree-t polynomial). The analyzer
     sees exactly what a trusted shuffler would give it: the shuffled multiset, so the
     shuffle-model DP guarantee of the protocol applies. No server sees any message. In
     malicious-abort mode, every batch with a bound up to ``max_domain`` first goes through
     the masked domain check on shares and out-of-domain rows are left out (never opened); a
     batch with a larger bound (the check's cost grows with the bound) is opened as it is,
     after the shuffle's MAC check has passed: a server's offset or substitution aborts
     before any opening, so an out-of-domain value there is a client's own submission, which
     the analyzer counts as invalid (``wire.domain_refusal``).
   - ``histogram``: the servers compute per-component histograms of the shuffled messages in
     MPC (power sums + Lagrange basis, all values must have a domain of at most ``max_domain``)
     and open only the counts to the analyzer. The analyzer learns the statistic, not even the
     shuffled reports: a post-processing of the shuffled multiset, so at least as private.
   In both modes the servers' output shares reach the analyzer as public entries of the
   servers' signed transcripts: ``sdp verify`` reconstructs them and compares them with what
   the analyzer published, so the analyzer cannot publish another multiset. They reveal
   nothing beyond the output (any t shares and the secret fix the sharing polynomial).
   Values outside the message domain are detected and counted as invalid in both modes (mode
   ``histogram`` opens r_i * prod_j (v - j) for ``DOMAIN_CHECK_REPETITIONS`` = 3 independent
   secret random r_i per shuffled row, which reveals only whether that shuffled row is out of
   domain; a bad row passes with probability (2^31 - 1)^-3 < 2^-92, ``mpc.histogram_arith``).

Failure handling: every MPyC step runs under ``guarded`` (``mpyc_runtime``: a timeout
and a dead-peer watchdog that raise one ``MPCServerError`` naming the server lost). The mesh
is connected while the clients' shares arrive, so a transport abort (``PeerError``) ends a
waiting server at once. Transport errors towards clients and the analyzer surface as
``PeerError`` from the party runtime; malformed client submissions are rejected (counted),
never fatal.

Modules: this one holds the roles (``client_submit``, ``server_run`` with ``serve`` /
``serve_rounds``, ``analyzer_collect``); ``wire`` the configuration, client-side sharing and
share-array framing; ``secure_ops`` the MPC building blocks and the histogram mode;
``reshare_exchange`` the permute-and-reshare rounds; ``modes`` the steps that differ between
the security modes (``SemiHonest``, ``MaliciousAbort``); ``mpyc_runtime`` MPyC's runtime, the
dead-peer watchdog (failure handling) and TLS (all in ``parties.mpc_shuffle``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc import permute_reshare as pr
from mpc import shamir
from parties.mpc_shuffle import input_evidence as ie
from parties.mpc_shuffle.modes import SecurityMode, security_mode
from parties.mpc_shuffle.mpyc_rounds import mpyc_flights
from parties.mpc_shuffle.mpyc_runtime import (
    MPCServerError,
    _dead_peers,
    guarded,
    make_runtime,
    mpyc_bytes_sent,
    start_runtime,
)
from parties.mpc_shuffle.reshare_exchange import agree_coalition_seeds, mpyc_permute_reshare
from parties.mpc_shuffle.secure_ops import mpc_domain_check, mpc_histogram
from parties.mpc_shuffle.wire import (
    MSG_OUTPUT,
    MSG_SHARES,
    MPCShufflerConfig,
    _check_specs,
    _concat,
    recv_blocks,
    recv_chunked,
    send_chunked,
    share_batches,
)
from parties.runtime import fault_hooks
from parties.runtime.link import PartyContext, PeerError
from protocols.base import Batches, BatchSpec

# ---------------------------------------------------------------------------------------------
# Client side.


async def client_submit(
    ctx: PartyContext,
    cfg: MPCShufflerConfig,
    specs: Sequence[BatchSpec],
    batches: Batches,
    *,
    last: bool = True,
    users: int = 0,
    block: int = 0,
) -> int:
    """Share this client population's messages and send share i to server i; returns bytes.

    A population may submit in several blocks (numbered ``block`` = 0, 1, ..): call with
    ``last=False`` for all but the last; the last block carries ``users``, how many users the
    party submitted for (public: the count the privacy gate uses when the servers accept the
    party's submission). Each block carries this party's signed commitment to every server's
    shares (``input_evidence.send_shares``), so that a refusal of its sharing names whoever
    deviated.
    """
    ctx.phase("mpc-submit", cfg.round)
    shares = share_batches(batches, specs, cfg.m, cfg.threshold)
    meta = {"users": int(users)} if last else {}
    return await ie.send_shares(ctx, cfg, shares, meta, last=last, block=block)


# ---------------------------------------------------------------------------------------------
# Server side.


async def receive_client_shares(
    ctx: PartyContext, cfg: MPCShufflerConfig, specs: dict[str, BatchSpec], mode: SecurityMode
) -> tuple[dict[str, dict[str, np.ndarray]], list[list[int] | None], dict[str, list[ie.Block]]]:
    """Receive this server's shares from every client; a malformed or missing submission gets
    status None (its rows are then rejected by all servers); ``mode.accept_block`` checks each
    block (malicious-abort: against the commitment its client signed). Also
    returns each accepted submission's blocks (shares and evidence) for the input check."""
    got: dict[str, dict[str, np.ndarray]] = {}
    blocks: dict[str, list[ie.Block]] = {}
    status: list[list[int] | None] = []
    names = sorted(specs)
    for client in cfg.clients:
        try:
            parts = await recv_blocks(ctx, client, MSG_SHARES, f"shares from {client!r}")
            for b, part in enumerate(parts):
                mode.accept_block(ctx, cfg, client, b, b == len(parts) - 1, part)
            arrays = _concat([a for a, _ in parts], f"shares from {client!r}")
            meta = parts[-1][1]
            users = meta.get("users")
            if not isinstance(users, int) or users < 0:
                raise ValueError("submission without its number of users")
            if set(arrays) - set(names):
                raise ValueError(f"unknown batches {sorted(set(arrays) - set(names))}")
            for k, a in arrays.items():
                if a.ndim != 2 or a.shape[1] != specs[k].width:
                    raise ValueError(f"batch {k!r} has shape {a.shape}, width {specs[k].width}")
            got[client] = arrays
            blocks[client] = parts
            # rows per batch, then the declared users: what the servers agree on
            status.append([int(arrays[k].shape[0]) if k in arrays else 0 for k in names] + [users])
        except ValueError as exc:  # malformed: reject this client
            logging.warning("MPC server %s: rejecting submission of %s: %s", ctx.name, client, exc)
            status.append(None)
        except PeerError as exc:  # the client party dropped out (died, missed the deadline):
            # its rows are left out by every server (they agree on the statuses); the privacy
            # gate at the analyzer decides whether the rest may be published
            logging.warning("MPC server %s: client %s dropped out: %s", ctx.name, client, exc)
            status.append(None)
    return got, status, blocks


async def server_run(
    ctx: PartyContext,
    rt: Any,
    cfg: MPCShufflerConfig,
    specs: Sequence[BatchSpec],
    *,
    ready: Awaitable[None] | None = None,
) -> dict[str, Any]:
    """One server's whole part of a run (``rt`` started, or ``ready`` completes its start).

    Returns per-phase stats (seconds, MPyC bytes sent). Raises MPCServerError if another
    server dies or times out, PeerError for transport errors towards clients/analyzer.
    """
    sp = _check_specs(specs, cfg)
    names = sorted(sp)
    me = rt.pid
    if cfg.servers[me] != ctx.name:
        raise ValueError(f"server_run: MPyC party {me} is {cfg.servers[me]!r}, not {ctx.name!r}")
    stats: dict[str, Any] = {"server": ctx.name}
    mode = security_mode(cfg)  # the steps that differ between semi-honest and malicious-abort
    t0 = time.perf_counter()
    ctx.phase("mpc-receive", cfg.round)
    got, status, blocks = await receive_client_shares(ctx, cfg, sp, mode)

    if ready is not None:  # the MPyC mesh is connected (started while receiving)
        await ready
    ctx.phase("mpc-agree", cfg.round)
    all_status = await guarded(rt, cfg, "agree", rt.gather(rt.transfer(status)))
    accepted = [
        c
        for i, c in enumerate(cfg.clients)
        if all(s[i] is not None and s[i] == all_status[0][i] for s in all_status)
    ]
    inconsistent = await mode.check_inputs(rt, ctx, cfg, blocks, accepted)
    accepted = [c for c in accepted if c not in inconsistent]
    rejected_rows = {k: 0 for k in names}
    for i, c in enumerate(cfg.clients):
        if c not in accepted:
            known = [s[i] for s in all_status if s[i] is not None]
            for j, k in enumerate(names):
                rejected_rows[k] += max((row[j] for row in known), default=0)
    arrays = {
        k: np.concatenate(
            [got[c][k] for c in accepted if k in got[c]]
            or [np.zeros((0, sp[k].width), dtype=np.int64)]
        ).reshape(-1, sp[k].width)
        for k in names
    }
    users = sum(int(all_status[0][i][-1]) for i, c in enumerate(cfg.clients) if c in accepted)
    stats["accepted_clients"] = len(accepted)
    stats["rejected_clients"] = [c for c in cfg.clients if c not in accepted]
    stats["inconsistent_clients"] = inconsistent
    stats["t_receive_s"] = time.perf_counter() - t0

    ctx.phase("mpc-shuffle", cfg.round)
    t1 = time.perf_counter()
    mpyc_before = mpyc_bytes_sent(rt)
    flights_before = mpyc_flights(rt)
    coals = pr.coalitions(cfg.m, cfg.threshold)
    seeds = await guarded(rt, cfg, "seed agreement", agree_coalition_seeds(rt, coals, cfg.label))
    deviate = fault_hooks.mpc_offset(ctx.name)  # tests only: a deviating server

    async def reshare(values: dict[str, np.ndarray], addend: Any = None) -> dict[str, np.ndarray]:
        work = mpyc_permute_reshare(rt, values, seeds, cfg.label, addend=addend, deviate=deviate)
        return await guarded(rt, cfg, "permute-and-reshare", work)

    shuffled = await mode.shuffle(rt, cfg, arrays, reshare)
    stats["t_shuffle_s"] = time.perf_counter() - t1
    ledger = getattr(ctx, "ledger", None)
    if ledger is not None:  # MPyC's mesh traffic is not on our transport: count it here
        ledger.sent("mpc-shuffle", cfg.round, mpyc_bytes_sent(rt) - mpyc_before, frames=0)
        ledger.row("mpc-shuffle", cfg.round).mpyc_flights += mpyc_flights(rt) - flights_before

    ctx.phase("mpc-output", cfg.round)
    t2 = time.perf_counter()
    stats["mpyc_bytes_through_shuffle"] = mpyc_bytes_sent(rt)
    flights_before = mpyc_flights(rt)
    extra: dict[str, Any] = {
        "mode": cfg.mode,
        "security": cfg.security,
        "rejected_rows": rejected_rows,
        "rejected_clients": stats["rejected_clients"],
        "users": users,
        "server_stats": dict(stats),
    }
    bounds = {k: s.bound for k, s in sp.items()}
    if cfg.mode == "open":
        out_arrays = shuffled
        small = {k: b for k, b in bounds.items() if b <= cfg.max_domain}
        # malicious-abort: out-of-domain rows are found on shares and never opened; a batch
        # with a larger bound is opened as it is, after the shuffle's MAC check
        # (``wire.domain_refusal``): an out-of-domain value there is a client's own
        if mode.checks_domain_on_shares and small:
            found = await guarded(
                rt,
                cfg,
                "domain check",
                mpc_domain_check(
                    rt,
                    {k: shuffled[k] for k in small},
                    small,
                    **mode.output_kwargs(rt, cfg, sorted(small)),
                ),
            )
            out_arrays = {k: v[~found[k][0]] if k in found else v for k, v in shuffled.items()}
            extra["invalid_rows"] = {k: int(found[k][0].sum()) for k in found}
    else:
        kwargs = mode.output_kwargs(rt, cfg, names)
        counts, invalid = await guarded(
            rt, cfg, "histogram", mpc_histogram(rt, shuffled, bounds, **kwargs)
        )
        extra["invalid_rows"] = invalid
        out_arrays = counts
    mode.publish(extra)  # malicious-abort: the check log, refused clients, evidence
    # public: the output shares enter this server's signed transcript, so that ``sdp verify``
    # can reconstruct them and compare with what the analyzer publishes (issue 16, item 9).
    # They reveal nothing beyond the output: any t shares plus the secret fix the polynomial.
    if ledger is not None:  # the output phase's checks and openings on MPyC's mesh
        mesh = mpyc_bytes_sent(rt) - stats["mpyc_bytes_through_shuffle"]
        ledger.sent("mpc-output", cfg.round, mesh, frames=0)
        ledger.row("mpc-output", cfg.round).mpyc_flights += mpyc_flights(rt) - flights_before
    sent = await send_chunked(ctx, cfg.analyzer, MSG_OUTPUT, out_arrays, extra, public=True)
    stats["t_output_s"] = time.perf_counter() - t2
    stats["output_bytes"] = sent
    return stats


async def serve(
    ctx: PartyContext,
    cfg: MPCShufflerConfig,
    specs: Sequence[BatchSpec],
    pid: int,
    addresses: Sequence[tuple[str, int]],
    *,
    ssl_dir: str | None = None,
) -> dict[str, Any]:
    """Entry point of an MPC server process for a one-round protocol: start MPyC, run, shut
    down. Raises MPCServerError naming the server that could not be reached or died."""

    async def round_specs(rnd: int) -> Sequence[BatchSpec]:
        return specs

    return (await serve_rounds(ctx, cfg, round_specs, 1, pid, addresses, ssl_dir=ssl_dir))[0]


async def serve_rounds(
    ctx: PartyContext,
    cfg: MPCShufflerConfig,
    round_specs: Callable[[int], Awaitable[Sequence[BatchSpec]]],
    n_rounds: int,
    pid: int,
    addresses: Sequence[tuple[str, int]],
    *,
    ssl_dir: str | None = None,
) -> list[dict[str, Any]]:
    """Start MPyC once and run ``n_rounds`` shuffles (``round_specs(r)`` gives round r's batch
    specs, e.g. after receiving the analyzer's public state); returns per-round stats."""
    rt = make_runtime(pid, addresses, cfg.threshold, ssl_dir=ssl_dir)

    async def connect() -> None:
        try:
            await start_runtime(rt, cfg.timeout, cfg.servers)
        except asyncio.TimeoutError:
            missing = ", ".join(cfg.servers[d] for d in _dead_peers(rt)) or "some server"
            raise MPCServerError(
                f"MPC server {cfg.servers[pid]}: could not connect to {missing} "
                f"within {cfg.timeout:.0f} s"
            ) from None

    # connect the MPyC mesh while the first round's shares arrive (a transport abort while
    # waiting for clients then ends the server at once instead of after the connect timeout)
    started = asyncio.ensure_future(connect())
    all_stats = []
    try:
        for rnd in range(n_rounds):
            specs = await round_specs(rnd)
            # the analyzer waits for this server's output: slow MPC work is not silence (a
            # withholding server is named by the servers' timed-out steps, not the analyzer)
            with ctx.busy([cfg.analyzer], "mpc shuffle"):
                stats = await server_run(ctx, rt, cfg.for_round(rnd), specs, ready=started)
            all_stats.append(stats)
    except BaseException:
        if not started.done():
            started.cancel()
        for p in rt.parties:  # limited shutdown, as MPyC's __aexit__ does
            proto = getattr(p, "protocol", None)
            if p.pid != pid and proto is not None and getattr(proto, "transport", None):
                proto.close_connection()
        raise
    all_stats[-1]["mpyc_bytes_sent"] = mpyc_bytes_sent(rt)
    await guarded(rt, cfg, "shutdown", rt.shutdown())
    return all_stats


# ---------------------------------------------------------------------------------------------
# Analyzer side.


@dataclass
class MPCOutput:
    """What the analyzer obtains from the MPC shuffler."""

    mode: str
    batches: Batches  # mode open: shuffled in-domain messages; mode histogram: counts (w, bound)
    invalid: dict[str, int]  # out-of-domain messages per batch (incl. rejected submissions)
    rejected_clients: list[str]
    server_stats: list[dict[str, Any]] = field(default_factory=list)
    users: int = 0  # users of the accepted client parties (the count the privacy gate uses)


async def analyzer_collect(
    ctx: PartyContext, cfg: MPCShufflerConfig, specs: Sequence[BatchSpec]
) -> MPCOutput:
    """Receive every server's output shares and reconstruct (all m servers are required, so a
    failed server means no output: PeerError names it)."""
    sp = _check_specs(specs, cfg)
    ctx.phase("mpc-analyze", cfg.round)
    parts, metas = [], []
    for s in cfg.servers:
        arrays, meta = await recv_chunked(ctx, s, MSG_OUTPUT, f"output of server {s!r}")
        parts.append(arrays)
        metas.append(meta)
        if "abort" in meta:
            raise ValueError(f"analyzer: server {s!r} aborted: {meta['abort']}")
    modes = {m.get("mode") for m in metas}
    if modes != {cfg.mode}:
        raise ValueError(f"analyzer: servers report modes {modes}, expected {cfg.mode!r}")
    secs = {m.get("security") for m in metas}
    if secs != {cfg.security}:
        raise ValueError(f"analyzer: servers report security {secs}, expected {cfg.security!r}")
    out: Batches = {}
    invalid: dict[str, int] = {}
    for k in sorted(sp):
        shapes = {p[k].shape if k in p else None for p in parts}
        if len(shapes) != 1 or None in shapes:
            raise ValueError(f"analyzer: servers disagree on the shape of batch {k!r}: {shapes}")
        allsh = np.stack([p[k] for p in parts])
        if not shamir.consistent(allsh, cfg.threshold).all():
            raise ValueError(f"analyzer: inconsistent output shares for batch {k!r}")
        vals = shamir.reconstruct(allsh[: cfg.threshold + 1], list(range(cfg.threshold + 1)))
        rej = int(metas[0].get("rejected_rows", {}).get(k, 0))
        if cfg.mode == "open":
            bad = ((vals < 0) | (vals >= sp[k].bound)).any(axis=1)
            out[k] = vals[~bad]
            invalid[k] = int(bad.sum()) + rej + int(metas[0].get("invalid_rows", {}).get(k, 0))
        else:
            out[k] = vals
            invalid[k] = int(metas[0].get("invalid_rows", {}).get(k, 0)) + rej
    stats = [dict(m.get("server_stats", {})) for m in metas]
    users = {m.get("users") for m in metas}
    if len(users) != 1 or not isinstance(next(iter(users)), int):
        raise ValueError(f"analyzer: servers disagree on the number of users: {users}")
    rejected = list(metas[0].get("rejected_clients", []))
    return MPCOutput(cfg.mode, out, invalid, rejected, stats, int(next(iter(users))))
