"""The client party's round loop, one for every shuffler: per round, the analyzer's public
state (after round 0), then this population's users encoded block by block, each block handed
to the run's shuffler by its backend's ``submit`` (``parties.runtime.backend``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from parties.clients.roles import ClientPopulation, load_workload
from parties.runtime.backend import ShufflerBackend
from protocols.base import Batches


@dataclass(frozen=True)
class Block:
    """One encoded block of one round of a client party's users."""

    batches: Batches
    users: int  # users encoded in this block
    first_user: int  # index of its first user within the party
    last: bool  # the round's last block
    total_users: int  # users of the party
    public: dict[str, Any]  # the analyzer's public state of the round


async def run_client(backend: ShufflerBackend, node: Any, cluster: Any) -> None:
    """Encode this population's users and submit their messages, block by block, per round."""
    workload = load_workload(cluster, node.name)
    pop = ClientPopulation(cluster, node.name, workload)
    run = await backend.start_client(node, cluster, workload)
    for rnd in range(workload.protocol.n_rounds):
        public = await backend.round_state(node, cluster, run, rnd) if rnd else {}
        done = 0
        node.phase("encode", rnd)
        blocks = pop.encode(rnd, public)
        item = next(blocks, None)
        while item is not None:
            batches, n = item
            nxt = next(blocks, None)
            block = Block(batches, n, done, nxt is None, pop.n_users, public)
            done += n
            node.progress(f"round {rnd} encode+submit", done, pop.n_users)
            await backend.submit(node, run, rnd, block)
            node.phase("encode", rnd)
            item = nxt
            await asyncio.sleep(0)
