"""The MPC secret-shared shuffler: clients, servers (on MPyC's runtime) and the analyzer.

Trust model (MPyC's): m >= 3 servers, Shamir threshold t < m/2, semi-honest honest majority.
Any coalition of at most t servers learns nothing about the messages or the permutation (the
shares are uniformly random and some all-honest coalition's permutation is unknown to them).
A server that deviates from the protocol is outside the model: it can change the output
without detection. Nothing here is a proof of correct shuffling (contrast the mix-net).

Flow:
1. ``client_submit``: each client population Shamir-shares its messages over GF(2^31-1)
   (``mpc.shamir``) and sends share i to server i over the authenticated transport
   (``PartyContext``); each server receives only its own shares.
2. ``server_run``: the servers agree on the set of well-formed submissions (every server must
   have received the same row counts from a client, else the client is rejected and counted),
   agree on per-coalition seeds by X25519 inside each coalition, and run permute-and-reshare
   (``mpc.permute_reshare``) over MPyC's peer connections.
3. Output modes:
   - ``open``: each server sends its shares of the shuffled messages to the analyzer, who
     reconstructs them (and checks the m shares lie on one degree-t polynomial). The analyzer
     sees exactly what a trusted shuffler would give it: the shuffled multiset, so the
     shuffle-model DP guarantee of the protocol applies. No server sees any message.
   - ``histogram``: the servers compute per-component histograms of the shuffled messages in
     MPC (power sums + Lagrange basis, all values must have a domain of at most ``max_domain``)
     and open only the counts to the analyzer. The analyzer learns the statistic, not even the
     shuffled reports: a post-processing of the shuffled multiset, so at least as private.
   Values outside the message domain are detected and counted as invalid in both modes (mode
   ``histogram`` opens r * prod_j (v - j) for a secret random r per shuffled row, which reveals
   only whether that shuffled row is out of domain).

Failure handling: every MPyC step runs under a timeout and a watchdog that inspects MPyC's peer
connections. MPyC itself reports a dead peer only as a closed transport (``connection_lost``:
the peer's protocol is unset, or on a reset MPyC re-raises into the event loop), keeps waiting
for that peer's messages, and stops the whole event loop when an MPC task then fails
(``asyncoro._reconcile``). ``make_runtime`` therefore hooks (process-wide, server processes
only) ``MessageExchanger.connection_lost`` to record when each peer was lost, and
``asyncoro._reconcile`` plus the loop's exception handler to swallow the follow-up task errors
once a peer is gone; the watchdog then raises one ``MPCServerError`` naming the first server
lost ("lost connection to server mpc-2 (MPyC party 2)"). The mesh is connected while the
clients' shares arrive, so a transport abort (``PeerError``) ends a waiting server at once.
Transport errors towards clients and the analyzer surface as ``PeerError`` from the party
runtime; malformed client submissions are rejected (counted), never fatal.

TLS: MPyC 0.11 supports TLS between its parties with ``--ssl`` (here ``ssl_dir``): mutual
authentication against ``.config/mpyc_ca.crt`` with per-party ``party_i.crt/.key`` and the
server name ``MPyC party i``, loaded relative to the working directory
(``write_mpyc_tls_files`` makes them; ``start_runtime`` connects from inside that directory).
MPyC unpickles its peers' payloads, so only TLS-authenticated servers should be peers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from mpc import permute_reshare as pr
from mpc import shamir
from mpc.permute_reshare import MPCServerError
from mpc.shamir import PRIME
from parties import codec
from parties.link import PartyContext
from protocols.base import Batches, BatchSpec

MSG_SHARES = "mpc-shares"
MSG_OUTPUT = "mpc-output"
MODES = ("open", "histogram")
CHUNK_ELEMENTS = 1 << 21  # field elements per frame: 8 MiB of shares, under the frame cap
SENTINEL = PRIME - 1  # what a client shares for an out-of-domain value (always invalid)
T = TypeVar("T")


@dataclass(frozen=True)
class MPCShufflerConfig:
    """Who is who in an MPC shuffle run (server i is MPyC party i)."""

    servers: tuple[str, ...]
    analyzer: str
    clients: tuple[str, ...]
    threshold: int = 1
    mode: str = "open"
    timeout: float = 120.0
    max_domain: int = 64
    run_label: bytes = field(default=b"sdp-mpc")
    round: int = 0  # protocol round (multi-round protocols run one shuffle per round)

    def __post_init__(self) -> None:
        m, t = len(self.servers), self.threshold
        if m < 3 or not (0 < t and 2 * t < m):
            raise ValueError(f"MPC shuffler: need m >= 3 servers and 0 < t < m/2, got m={m}, t={t}")
        if self.mode not in MODES:
            raise ValueError(f"MPC shuffler: mode must be one of {MODES}, got {self.mode!r}")
        if len(set(self.servers)) != m:
            raise ValueError(f"MPC shuffler: duplicate server names in {self.servers}")

    @property
    def m(self) -> int:
        return len(self.servers)

    def for_round(self, rnd: int) -> MPCShufflerConfig:
        """The same run's configuration for protocol round ``rnd``."""
        return replace(self, round=int(rnd))

    @property
    def label(self) -> bytes:
        """Domain-separation label of this run and round (seeds, permutations)."""
        return self.run_label + b"|round" + str(self.round).encode()


def _check_specs(
    specs: Sequence[BatchSpec], cfg: MPCShufflerConfig | None = None
) -> dict[str, BatchSpec]:
    out = {s.name: s for s in specs}
    for s in specs:
        if not (1 <= s.bound <= SENTINEL):
            raise ValueError(f"batch {s.name!r}: bound {s.bound} does not fit GF(2^31-1)")
        if cfg is not None and cfg.mode == "histogram" and s.bound > cfg.max_domain:
            raise ValueError(
                f"histogram mode: batch {s.name!r} has bound {s.bound} > max_domain "
                f"{cfg.max_domain}; use mode 'open'"
            )
    return out


# ---------------------------------------------------------------------------------------------
# Client side.


def share_batches(
    batches: Batches, specs: Sequence[BatchSpec], m: int, t: int
) -> list[dict[str, np.ndarray]]:
    """Shamir-share every message; returns one ``{batch: (n, width) shares}`` dict per server.

    A component outside ``[0, bound)`` is shared as ``SENTINEL`` so the run counts it as
    invalid instead of failing. Wrong batch names or widths raise ValueError.
    """
    sp = _check_specs(specs)
    per_server: list[dict[str, np.ndarray]] = [{} for _ in range(m)]
    for name, arr in batches.items():
        if name not in sp:
            raise ValueError(f"share_batches: unknown batch {name!r}; expected {sorted(sp)}")
        a = np.asarray(arr)
        if a.ndim != 2 or a.shape[1] != sp[name].width or a.dtype.kind not in "iu":
            raise ValueError(
                f"share_batches: batch {name!r} must be integer (n, "
                f"{sp[name].width}), got {a.dtype} {a.shape}"
            )
        a = a.astype(np.int64)
        a = np.where((a < 0) | (a >= sp[name].bound), SENTINEL, a)
        sh = shamir.share(a, m, t)
        for i in range(m):
            per_server[i][name] = sh[i]
    return per_server


def _pack(arrays: dict[str, np.ndarray], extra: dict[str, Any] | None = None) -> bytes:
    obj: dict[str, Any] = {
        "batches": {
            k: {"shape": list(v.shape), "data": shamir.to_wire(v)} for k, v in arrays.items()
        }
    }
    obj.update(extra or {})
    return codec.dumps(obj)


def _unpack(payload: bytes, where: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    obj = codec.loads(payload)
    if not isinstance(obj, dict) or not isinstance(obj.get("batches"), dict):
        raise ValueError(f"{where}: payload must be a map with a 'batches' map")
    out = {}
    for k, v in obj["batches"].items():
        if not isinstance(v, dict) or set(v) != {"shape", "data"}:
            raise ValueError(f"{where}: batch {k!r} must have keys shape, data")
        shape = v["shape"]
        if not (isinstance(shape, list) and all(isinstance(s, int) and s >= 0 for s in shape)):
            raise ValueError(f"{where}: batch {k!r} has bad shape {shape!r}")
        out[k] = shamir.from_wire(v["data"], tuple(shape), f"{where} batch {k!r}")
    return out, obj


async def client_submit(
    ctx: PartyContext,
    cfg: MPCShufflerConfig,
    specs: Sequence[BatchSpec],
    batches: Batches,
    *,
    last: bool = True,
) -> int:
    """Share this client population's messages and send share i to server i; returns bytes.

    A population may submit in several blocks: call with ``last=False`` for all but the last.
    """
    ctx.phase("mpc-submit", cfg.round)
    shares = share_batches(batches, specs, cfg.m, cfg.threshold)
    sent = 0
    for server, arrays in zip(cfg.servers, shares, strict=True):
        sent += await send_chunked(ctx, server, MSG_SHARES, arrays, {}, last=last)
    return sent


def _chunks(arrays: dict[str, np.ndarray], max_elements: int) -> list[dict[str, np.ndarray]]:
    """Split row-wise so that every piece holds at most ``max_elements`` field elements."""
    pieces: list[dict[str, np.ndarray]] = []
    for k in sorted(arrays):
        a = arrays[k]
        rows = max(1, max_elements // max(1, int(np.prod(a.shape[1:]))))
        for start in range(0, a.shape[0], rows):
            pieces.append({k: a[start : start + rows]})
        if a.shape[0] == 0:
            pieces.append({k: a})
    return pieces or [{}]


async def send_chunked(
    ctx: PartyContext,
    peer: str,
    msg_type: str,
    arrays: dict[str, np.ndarray],
    meta: dict[str, Any],
    *,
    last: bool = True,
    max_elements: int | None = None,
) -> int:
    """Send share arrays in frames of at most ``max_elements`` elements (the transport caps
    frame size); ``meta`` and ``last`` ride on the final piece. Returns bytes sent."""
    pieces = _chunks(arrays, max_elements or CHUNK_ELEMENTS)
    sent = 0
    for i, piece in enumerate(pieces):
        final = i == len(pieces) - 1
        payload = _pack(piece, {**meta, "last": bool(last)} if final else {"last": False})
        sent += len(payload)
        await ctx.send(peer, msg_type, payload)
    return sent


async def recv_chunked(
    ctx: PartyContext, peer: str, msg_type: str, where: str
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Receive pieces until one has ``last``; returns concatenated arrays and its meta."""
    blocks, meta = [], {}
    while True:
        arrays, meta = _unpack(await ctx.recv(peer, msg_type), where)
        blocks.append(arrays)
        if meta.get("last", True) is not False:
            break
    names = sorted({k for b in blocks for k in b})
    out = {}
    for k in names:
        parts = [b[k] for b in blocks if k in b]
        if len({p.shape[1:] for p in parts}) != 1:
            raise ValueError(f"{where}: pieces of batch {k!r} have different shapes")
        out[k] = np.concatenate(parts)
    return out, meta


# ---------------------------------------------------------------------------------------------
# MPC building blocks over a runtime's ``transfer`` (MPyC or ``LocalRuntime``).


async def share_from(
    rt: Any, senders: Sequence[int], value: np.ndarray | None, shape: tuple[int, ...]
) -> np.ndarray:
    """My Shamir share of the sum of the values input by ``senders`` (fresh degree-t sharings)."""
    m, t, me = len(rt.parties), rt.threshold, rt.pid
    outgoing: list[bytes | None] = [None] * m
    if me in senders:
        if value is None or value.shape != shape:
            raise ValueError(f"share_from: sender {me} must input an array of shape {shape}")
        sh = shamir.share(value, m, t)
        outgoing = [shamir.to_wire(sh[r]) for r in range(m)]
    futs = [rt.transfer(outgoing[r], sender_receivers=[(s, r) for s in senders]) for r in range(m)]
    got = await rt.gather(futs[me])
    for r in range(m):
        if r != me:
            await rt.gather(futs[r])
    acc = np.zeros(shape, dtype=np.int64)
    for s, data in zip(senders, got, strict=True):
        acc = (acc + shamir.from_wire(data, shape, f"sharing from server {s}")) % PRIME
    return acc


async def secure_mul(rt: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shares of the elementwise product (local product, then GRR98 degree reduction)."""
    m = len(rt.parties)
    lam = shamir.lagrange_coefficients(range(1, m + 1))[rt.pid]
    d = a * b % PRIME * int(lam) % PRIME
    return await share_from(rt, list(range(m)), d, d.shape)


async def open_to_servers(rt: Any, share_i: np.ndarray) -> np.ndarray:
    """Open a shared array to all servers (checks the m shares are consistent)."""
    got = await rt.gather(rt.transfer(shamir.to_wire(share_i)))
    allsh = np.stack(
        [shamir.from_wire(g, share_i.shape, f"opening from server {j}") for j, g in enumerate(got)]
    )
    if not shamir.consistent(allsh, rt.threshold).all():
        raise MPCServerError("opening: the servers' shares are inconsistent (a deviating server)")
    return shamir.reconstruct(allsh[: rt.threshold + 1], list(range(rt.threshold + 1)))


def _poly_from_roots(roots: Sequence[int]) -> list[int]:
    """Coefficients (low to high) of prod (x - r) mod PRIME."""
    c = [1]
    for r in roots:
        nxt = [0] * (len(c) + 1)
        for i, ci in enumerate(c):
            nxt[i] = (nxt[i] - r * ci) % PRIME
            nxt[i + 1] = (nxt[i + 1] + ci) % PRIME
        c = nxt
    return c


def lagrange_basis(k: int) -> np.ndarray:
    """``C[j, d]``: coefficient of x^d in the polynomial that is 1 at j and 0 at 0..k-1 \\ j."""
    out = np.zeros((k, k), dtype=np.int64)
    for j in range(k):
        num = _poly_from_roots([r for r in range(k) if r != j])
        den = 1
        for r in range(k):
            if r != j:
                den = den * (j - r) % PRIME
        inv = pow(den, PRIME - 2, PRIME)
        out[j] = [c * inv % PRIME for c in num]
    return out


async def secure_powers(rt: Any, v: np.ndarray, top: int) -> list[np.ndarray]:
    """Shares of v^0 .. v^top (v^0 = 1), in ceil(log2 top) multiplication rounds."""
    p = [np.ones_like(v), v]
    while len(p) - 1 < top:
        h = len(p) - 1
        k = min(h, top - h)
        lo = np.stack(p[1 : k + 1])
        hi = np.broadcast_to(p[h], lo.shape).copy()
        prod = await secure_mul(rt, hi, lo)
        p.extend(prod[i] for i in range(k))
    return p


async def mpc_histogram(
    rt: Any, arrays: dict[str, np.ndarray], specs: dict[str, BatchSpec]
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Per batch: shares of counts (width, bound) over the in-domain rows, and the number of
    out-of-domain rows (opened to the servers, positions are of the shuffled order only)."""
    counts, invalid = {}, {}
    t = rt.threshold
    for name in sorted(arrays):
        v, k = arrays[name], specs[name].bound
        powers = await secure_powers(rt, v, k)
        z = _poly_from_roots(range(k))  # zero exactly on the domain
        zv = np.zeros_like(v)
        for d, c in enumerate(z):
            zv = (zv + powers[d] * c) % PRIME
        r = await share_from(
            rt,
            list(range(t + 1)),
            shamir.random_field_elements(v.shape) if rt.pid <= t else None,
            v.shape,
        )
        masked = (await secure_mul(rt, r, zv)).sum(axis=1) % PRIME
        bad = (await open_to_servers(rt, masked)) != 0
        invalid[name] = int(bad.sum())
        good = ~bad
        basis = lagrange_basis(k)
        sums = np.stack([powers[d][good].sum(axis=0) % PRIME for d in range(k)])  # (k, w)
        c = np.zeros((v.shape[1], k), dtype=np.int64)
        for d in range(k):
            c = (c + sums[d][:, None] * basis[:, d][None, :]) % PRIME
        counts[name] = c
    return counts, invalid


# ---------------------------------------------------------------------------------------------
# Server side.


def _dead_peers(rt: Any) -> list[int]:
    """MPyC peers whose connection is gone, first lost first (empty for runtimes without
    transports)."""
    dead = []
    for p in getattr(rt, "parties", ()):
        if not hasattr(p, "pid") or p.pid == rt.pid:
            continue
        proto = getattr(p, "protocol", None)
        tr = getattr(proto, "transport", None)
        if proto is None or tr is None or tr.is_closing():
            dead.append(p.pid)
    lost = getattr(rt, "_sdp_lost", {})
    return sorted(dead, key=lambda d: lost.get(d, float("inf")))


async def guarded(rt: Any, cfg: MPCShufflerConfig, step: str, aw: Awaitable[T]) -> T:
    """Await an MPC step under ``cfg.timeout`` and a dead-peer watchdog (MPCServerError)."""
    task = asyncio.ensure_future(aw)
    deadline = time.monotonic() + cfg.timeout
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=0.2)
            if done:
                return task.result()
            dead = _dead_peers(rt)
            if dead:
                names = [f"{cfg.servers[d]} (MPyC party {d})" for d in dead]
                later = f" (then also {', '.join(names[1:])})" if len(names) > 1 else ""
                raise MPCServerError(
                    f"MPC step {step!r}: lost connection to server {names[0]}{later}"
                )
            if time.monotonic() > deadline:
                raise MPCServerError(
                    f"MPC step {step!r}: timed out after {cfg.timeout:.0f} s "
                    f"waiting for the other servers"
                )
    finally:
        if not task.done():
            task.cancel()


async def receive_client_shares(
    ctx: PartyContext, cfg: MPCShufflerConfig, specs: dict[str, BatchSpec]
) -> tuple[dict[str, dict[str, np.ndarray]], list[list[int] | None]]:
    """Receive this server's shares from every client; a malformed or missing submission gets
    status None (its rows are then rejected by all servers)."""
    got: dict[str, dict[str, np.ndarray]] = {}
    status: list[list[int] | None] = []
    names = sorted(specs)
    for client in cfg.clients:
        try:
            arrays, _ = await recv_chunked(ctx, client, MSG_SHARES, f"shares from {client!r}")
            if set(arrays) - set(names):
                raise ValueError(f"unknown batches {sorted(set(arrays) - set(names))}")
            for k, a in arrays.items():
                if a.ndim != 2 or a.shape[1] != specs[k].width:
                    raise ValueError(f"batch {k!r} has shape {a.shape}, width {specs[k].width}")
            got[client] = arrays
            status.append([int(arrays[k].shape[0]) if k in arrays else 0 for k in names])
        except ValueError as exc:  # malformed: reject this client (a transport PeerError
            # aborts the run instead, as every other party of the runtime does)
            logging.warning("MPC server %s: rejecting submission of %s: %s", ctx.name, client, exc)
            status.append(None)
    return got, status


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
    t0 = time.perf_counter()
    ctx.phase("mpc-receive", cfg.round)
    got, status = await receive_client_shares(ctx, cfg, sp)

    if ready is not None:  # the MPyC mesh is connected (started while receiving)
        await ready
    ctx.phase("mpc-agree", cfg.round)
    all_status = await guarded(rt, cfg, "agree", rt.gather(rt.transfer(status)))
    accepted = [
        c
        for i, c in enumerate(cfg.clients)
        if all(s[i] is not None and s[i] == all_status[0][i] for s in all_status)
    ]
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
    stats["accepted_clients"] = len(accepted)
    stats["rejected_clients"] = [c for c in cfg.clients if c not in accepted]
    stats["t_receive_s"] = time.perf_counter() - t0

    ctx.phase("mpc-shuffle", cfg.round)
    t1 = time.perf_counter()
    mpyc_before = mpyc_bytes_sent(rt)
    coals = pr.coalitions(cfg.m, cfg.threshold)
    seeds = await guarded(rt, cfg, "seed agreement", pr.agree_coalition_seeds(rt, coals, cfg.label))
    shuffled = await guarded(
        rt, cfg, "permute-and-reshare", pr.mpyc_permute_reshare(rt, arrays, seeds, cfg.label)
    )
    stats["t_shuffle_s"] = time.perf_counter() - t1
    ledger = getattr(ctx, "ledger", None)
    if ledger is not None:  # MPyC's mesh traffic is not on our transport: count it here
        ledger.sent("mpc-shuffle", cfg.round, mpyc_bytes_sent(rt) - mpyc_before, frames=0)

    ctx.phase("mpc-output", cfg.round)
    t2 = time.perf_counter()
    stats["mpyc_bytes_through_shuffle"] = mpyc_bytes_sent(rt)
    extra: dict[str, Any] = {
        "mode": cfg.mode,
        "rejected_rows": rejected_rows,
        "rejected_clients": stats["rejected_clients"],
        "server_stats": dict(stats),
    }
    if cfg.mode == "open":
        out_arrays = shuffled
    else:
        counts, invalid = await guarded(rt, cfg, "histogram", mpc_histogram(rt, shuffled, sp))
        extra["invalid_rows"] = invalid
        out_arrays = counts
    sent = await send_chunked(ctx, cfg.analyzer, MSG_OUTPUT, out_arrays, extra)
    stats["t_output_s"] = time.perf_counter() - t2
    stats["output_bytes"] = sent
    return stats


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
    modes = {m.get("mode") for m in metas}
    if modes != {cfg.mode}:
        raise ValueError(f"analyzer: servers report modes {modes}, expected {cfg.mode!r}")
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
            invalid[k] = int(bad.sum()) + rej
        else:
            out[k] = vals
            invalid[k] = int(metas[0].get("invalid_rows", {}).get(k, 0)) + rej
    stats = [dict(m.get("server_stats", {})) for m in metas]
    return MPCOutput(cfg.mode, out, invalid, list(metas[0].get("rejected_clients", [])), stats)


# ---------------------------------------------------------------------------------------------
# MPyC runtime for a server process.


def import_mpyc_runtime() -> Any:
    """Import ``mpyc.runtime`` without letting it parse or rewrite this process's argv."""
    saved = sys.argv
    sys.argv = [saved[0] if saved else "sdp", "--no-log"]
    try:
        import mpyc.runtime as mr
    finally:
        sys.argv = saved
    return mr


def make_runtime(
    pid: int, addresses: Sequence[tuple[str, int]], threshold: int, *, ssl_dir: str | None = None
) -> Any:
    """An MPyC ``Runtime`` for party ``pid`` (call inside the running event loop).

    ``addresses[i]`` is (host, port) of MPyC party i. With ``ssl_dir`` the connections use TLS
    with MPyC's ``--ssl`` files: MPyC loads ``.config/party_{pid}.crt|.key`` and
    ``.config/mpyc_ca.crt`` relative to the working directory (also on every connection
    retry), so ``start_runtime`` runs ``start()`` inside ``ssl_dir`` and then restores the
    working directory (see ``write_mpyc_tls_files``).
    """
    mr = import_mpyc_runtime()
    import mpyc

    m = len(addresses)
    if not (0 <= pid < m) or not (0 < threshold and 2 * threshold < m):
        raise ValueError(f"make_runtime: bad pid {pid} / threshold {threshold} for {m} parties")
    opts = mpyc._get_arg_parser().parse_args([])
    opts.threshold, opts.index, opts.no_log = threshold, pid, True
    opts.no_async, opts.no_prss, opts.ssl = False, False, ssl_dir is not None
    if ssl_dir is not None:
        for f in (f"party_{pid}.crt", f"party_{pid}.key", "mpyc_ca.crt"):
            if not os.path.exists(os.path.join(ssl_dir, ".config", f)):
                raise ValueError(f"make_runtime: missing TLS file {ssl_dir}/.config/{f}")
        opts.sdp_ssl_dir = ssl_dir  # MPyC reads the files in start(): see ``start_runtime``
    parties = [mr.Party(i, h, int(p)) for i, (h, p) in enumerate(addresses)]
    rt = mr.Runtime(pid, parties, opts)
    for mod in (
        "sectypes",
        "asyncoro",
        "mpctools",
        "seclists",
        "secpols",
        "secgroups",
        "random",
        "statistics",
    ):
        sys.modules[f"mpyc.{mod}"].runtime = rt
    logging.disable(logging.INFO)  # MPyC logs start/stop lines at INFO on stdout
    _hook_connection_loss(rt)
    return rt


def _hook_connection_loss(rt: Any) -> None:
    """Record when each MPyC peer connection is lost, and keep MPyC's follow-up task errors
    (it keeps using a vanished peer) out of stderr once a peer is gone: the watchdog in
    ``guarded`` reports the failure as one MPCServerError instead."""
    from mpyc import asyncoro

    rt._sdp_lost = {}
    cls = asyncoro.MessageExchanger
    if not getattr(cls, "_sdp_hooked", False):
        orig = cls.connection_lost

        def connection_lost(self: Any, exc: Exception | None) -> None:
            lost = getattr(self.runtime, "_sdp_lost", None)
            if lost is not None and self.peer_pid is not None:
                lost.setdefault(self.peer_pid, time.monotonic())
            if exc is not None:  # MPyC re-raises into the event loop; record instead
                logging.debug("MPyC connection to party %s lost: %r", self.peer_pid, exc)
                exc = None
            orig(self, exc)

        cls.connection_lost = connection_lost
        cls._sdp_hooked = True

        # MPyC stops the whole event loop when an MPC task fails (asyncoro._reconcile), which
        # would take the party's transport down too; after a lost peer, drop the error instead
        # and let ``guarded`` raise MPCServerError.
        orig_reconcile = asyncoro._reconcile

        def _reconcile(decl: Any, task: Any) -> None:
            if task.cancelled() or (task.exception() is not None and _dead_peers(asyncoro.runtime)):
                asyncoro.runtime._pc_level -= 1
                return
            orig_reconcile(decl, task)

        asyncoro._reconcile = _reconcile

    def handler(loop: Any, context: dict[str, Any]) -> None:
        if _dead_peers(rt):
            logging.debug("MPyC task error after a lost peer: %s", context.get("exception"))
            return
        asyncoro.exception_handler(loop, context)

    rt._loop.set_exception_handler(handler)


def write_mpyc_tls_files(directory: str, m: int) -> None:
    """A CA and per-party certificates in ``directory/.config`` in MPyC's ``--ssl`` layout
    (subject CN and SAN ``MPyC party i``, which MPyC uses as the TLS server name)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    cfg = os.path.join(directory, ".config")
    os.makedirs(cfg, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)

    def cert(subject: str, key: Any, issuer: str, issuer_key: Any, ca: bool) -> x509.Certificate:
        b = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            b = b.add_extension(
                x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False
            )
        return b.sign(issuer_key, hashes.SHA256())

    def save(path: str, data: bytes) -> None:
        with open(os.path.join(cfg, path), "wb") as f:
            f.write(data)

    pem = serialization.Encoding.PEM
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = cert("MPyC Certification Authority", ca_key, "MPyC Certification Authority", ca_key, True)
    save("mpyc_ca.crt", ca.public_bytes(pem))
    for i in range(m):
        k = ec.generate_private_key(ec.SECP256R1())
        c = cert(f"MPyC party {i}", k, "MPyC Certification Authority", ca_key, False)
        save(f"party_{i}.crt", c.public_bytes(pem))
        save(
            f"party_{i}.key",
            k.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
        )


async def start_runtime(rt: Any, timeout: float) -> None:
    """``rt.start()`` under a timeout, in ``ssl_dir`` while MPyC loads its TLS files."""
    ssl_dir = getattr(rt.options, "sdp_ssl_dir", None)
    cwd = os.getcwd()
    try:
        if ssl_dir is not None:
            os.chdir(ssl_dir)
        await asyncio.wait_for(rt.start(), timeout)
    finally:
        os.chdir(cwd)


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
            await start_runtime(rt, cfg.timeout)
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
            all_stats.append(await server_run(ctx, rt, cfg.for_round(rnd), specs, ready=started))
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


def mpyc_bytes_sent(rt: Any) -> int:
    """Bytes this party sent over MPyC's peer connections so far (0 for ``LocalRuntime``)."""
    total = 0
    for p in rt.parties:
        proto = getattr(p, "protocol", None)
        if getattr(p, "pid", rt.pid) != rt.pid and proto is not None:
            total += int(getattr(proto, "nbytes_sent", 0))
    return total


# ---------------------------------------------------------------------------------------------
# Self-test of one server process on the real MPyC runtime (used by the multi-process tests):
#   python -m mpc.mpc_shuffler selftest --pid I --m 3 --base-port P --n N --out FILE


async def _selftest(args: Any) -> int:
    m, t = args.m, (args.m - 1) // 2
    names = tuple(f"server{i}" for i in range(m))
    cfg = MPCShufflerConfig(
        servers=names,
        analyzer="analyzer",
        clients=(),
        threshold=t,
        mode=args.mode,
        timeout=args.timeout,
    )
    addresses = [("127.0.0.1", args.base_port + i) for i in range(m)]
    rt = make_runtime(args.pid, addresses, t, ssl_dir=args.ssl_dir)
    await start_runtime(rt, args.timeout)
    # identical test data and (deterministic, test-only) sharing polynomials in every process
    rng = np.random.default_rng(args.seed)
    spec = BatchSpec("x", 1, args.bound)
    x = rng.integers(0, args.bound, size=(args.n, 1))
    x[: args.invalid, 0] = args.bound + 5
    coef = rng.integers(0, PRIME, size=(t, args.n, 1))
    mine = shamir.share(np.where(x >= args.bound, SENTINEL, x), m, t, coefficients=coef)[args.pid]
    # MPyC compatibility: our shares are MPyC shares of the same secret
    sec = pr.to_secfld(rt, mine[:5, 0])
    opened = await guarded(rt, cfg, "mpyc-output", rt.output(sec))
    compat = [int(v) for v in opened] == np.where(x >= args.bound, SENTINEL, x)[:5, 0].tolist()
    coals = pr.coalitions(m, t)
    seeds = await guarded(rt, cfg, "seed agreement", pr.agree_coalition_seeds(rt, coals, b"st"))
    if args.die_after_seeds and args.pid == m - 1:
        os._exit(3)  # simulate a killed server
    t0 = time.perf_counter()
    out = await guarded(
        rt, cfg, "permute-and-reshare", pr.mpyc_permute_reshare(rt, {"x": mine}, seeds, b"st")
    )
    elapsed = time.perf_counter() - t0
    res: dict[str, Any] = {"pid": args.pid, "compat": compat, "shuffle_s": elapsed}
    if args.mode == "histogram":
        counts, invalid = await guarded(rt, cfg, "histogram", mpc_histogram(rt, out, {"x": spec}))
        res["counts_share"] = counts["x"].tolist()
        res["invalid"] = invalid["x"]
    res["share"] = out["x"][:, 0].tolist()
    res["data"] = x[:, 0].tolist()
    res["bytes_sent"] = mpyc_bytes_sent(rt)
    await guarded(rt, cfg, "shutdown", rt.shutdown())
    with open(args.out, "w") as f:
        import json

        json.dump(res, f)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m mpc.mpc_shuffler selftest ...``: one MPyC server process of a self-test."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m mpc.mpc_shuffler")
    ap.add_argument("command", choices=["selftest"])
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--m", type=int, default=3)
    ap.add_argument("--base-port", type=int, required=True)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--bound", type=int, default=4)
    ap.add_argument("--invalid", type=int, default=0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--mode", choices=MODES, default="open")
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--ssl-dir", default=None)
    ap.add_argument("--die-after-seeds", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    try:
        return asyncio.run(_selftest(args))
    except MPCServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
