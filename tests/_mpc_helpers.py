"""Set-up shared by the MPC shuffler's security tests (``test_security_mpc_*.py``): in-process
runs of the real roles on ``LocalMPCNetwork`` runtimes, the raw reconstruction of everything the
servers sent, and ``sdp run`` of GRR over the MPC shuffler with its keys kept."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from conftest import keys_of, sdp

from mpc import shamir
from parties.mpc_shuffle import input_evidence, local_runtime, shuffler, wire
from parties.runtime.memlink import MemoryNetwork
from protocols.base import BatchSpec

SERVERS = ("mpc-1", "mpc-2", "mpc-3")  # the launcher's MPC server names

Submit = Callable[[Any], Awaitable[Any]]


def honest_client(cfg: wire.MPCShufflerConfig, specs: Sequence[BatchSpec], data: dict) -> Submit:
    """A client population that shares ``data`` as the real client does."""
    users = len(next(iter(data.values())))
    return lambda ctx: shuffler.client_submit(ctx, cfg, specs, data, users=users)


def raw_client(cfg: wire.MPCShufflerConfig, batch: str, rows: np.ndarray) -> Submit:
    """A malicious client: shares raw field elements (no sentinel for out-of-domain values)."""

    async def submit(ctx: Any) -> None:
        sh = shamir.share(rows, cfg.m, cfg.threshold)
        per_server = [{batch: sh[i]} for i in range(cfg.m)]
        await input_evidence.send_shares(
            ctx, cfg, per_server, {"users": len(rows)}, last=True, block=0
        )

    return submit


async def run_in_process(
    cfg: wire.MPCShufflerConfig,
    specs: Sequence[BatchSpec],
    clients: dict[str, Submit],
    *,
    collect: bool = True,
    timeout: float = 5,
) -> tuple[list[Any], MemoryNetwork, Any]:
    """The servers' ``server_run`` (real code path) with the given client submissions.

    Returns (each server's stats or exception, the network, the analyzer's ``MPCOutput`` if
    ``collect`` and no server failed, else None). What the servers sent the analyzer stays on
    the network when ``collect`` is False (``sent_outputs``, ``raw_outputs``)."""
    net = MemoryNetwork([*cfg.servers, cfg.analyzer, *cfg.clients], timeout=timeout)
    rts = local_runtime.LocalMPCNetwork(cfg.m, cfg.threshold).runtimes()
    servers = [
        asyncio.ensure_future(shuffler.server_run(net.context(s), rts[i], cfg, specs))
        for i, s in enumerate(cfg.servers)
    ]
    await asyncio.gather(*(fn(net.context(c)) for c, fn in clients.items()))
    results = await asyncio.gather(*servers, return_exceptions=True)
    out = None
    if collect and not any(isinstance(r, BaseException) for r in results):
        out = await shuffler.analyzer_collect(net.context(cfg.analyzer), cfg, specs)
    return results, net, out


def sent_outputs(net: MemoryNetwork, cfg: wire.MPCShufflerConfig) -> int:
    """How many output messages the servers sent the analyzer."""
    return sum(net._queues[(s, cfg.analyzer, wire.MSG_OUTPUT)].qsize() for s in cfg.servers)


async def raw_outputs(net: MemoryNetwork, cfg: wire.MPCShufflerConfig, batch: str) -> np.ndarray:
    """Anyone holding the servers' public output shares: reconstruct every value sent."""
    ctx = net.context(cfg.analyzer)
    parts = []
    for s in cfg.servers:
        arrays, _ = await wire.recv_chunked(ctx, s, wire.MSG_OUTPUT, s)
        parts.append(arrays[batch])
    t = cfg.threshold
    return shamir.reconstruct(np.stack(parts)[: t + 1], list(range(t + 1)))[:, 0]


def grr_mpc_run(run: Path, *extra: str, users: int = 300) -> Path:
    """``sdp run grr --shuffler mpc`` into ``run``, keys kept (for re-signing forgeries)."""
    sdp(
        "run",
        "grr",
        "--shuffler",
        "mpc",
        "--users",
        str(users),
        *extra,
        "--out",
        str(run),
        "--keep-keys",
        str(keys_of(run)),
        "--quiet",
        timeout=300,
        check=True,
    )
    return run


def transcript_entries(run: Path, party: str) -> list[dict]:
    """``party``'s signed transcript entries (JSON lines)."""
    path = run / "transcripts" / f"{party}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]
