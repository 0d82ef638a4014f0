"""Every party of a mix-net run in one process over the in-memory network (simulations, tests)."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from mpc.pools import process_pool
from parties.mixnet.analyzer import receive_result
from parties.mixnet.client import run_clients
from parties.mixnet.record import public_record
from parties.mixnet.server import run_mix_server
from parties.mixnet.state import MixnetAbort, MixnetConfig, ServerState
from parties.runtime.memlink import MemoryNetwork


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
    return res[-1][0], public_record(done[0])
