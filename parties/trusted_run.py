"""Run plan with the in-process *trusted* shuffler party (simulation backend).

Parties: ``client-1..P`` (user populations), ``shuffler``, ``analyzer``. Clients send their
messages (private) to the shuffler; it drops out-of-domain messages (counted), permutes each
batch uniformly and sends the shuffled multiset (public) to the analyzer.

The trusted shuffler sees every message in the clear: it is the baseline the mix-net and MPC
backends replace, and the one for large simulations.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import numpy as np

from parties.cluster import Cluster
from parties.link import PeerError
from parties.plans import names_with_role, single
from parties.shuffle_roles import (
    client_blocks,
    dump_batches,
    load_batches,
    load_workload,
    publish_result,
)
from protocols.base import validate_batches


class TrustedShufflePlan:
    """clients -> shuffler -> analyzer."""

    def layout(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        clients = int(options.get("clients", 2))
        return [("analyzer", "analyzer"), ("shuffler", "shuffler")] + [
            (f"client-{i + 1}", "client") for i in range(clients)
        ]

    def peers(self, cluster: Cluster, name: str) -> set[str]:
        role = cluster.party(name).role
        if role == "client":
            return {single(cluster, "shuffler").name}
        if role == "shuffler":
            return set(names_with_role(cluster, "client")) | {single(cluster, "analyzer").name}
        if role == "analyzer":
            return {single(cluster, "shuffler").name}
        raise PeerError(f"role {role!r} has no part in a trusted-shuffler run")

    async def run(self, node: Any, cluster: Cluster) -> None:
        role = cluster.party(node.name).role
        await {"client": run_client, "shuffler": run_shuffler, "analyzer": run_analyzer}[role](
            node, cluster
        )


async def run_client(node: Any, cluster: Cluster) -> None:
    """Encode this population's users and submit their messages in blocks."""
    shuffler = single(cluster, "shuffler").name
    workload = load_workload(cluster)
    sl = workload.user_slice(
        [p.name for p in cluster.by_role("client")].index(node.name), len(cluster.by_role("client"))
    )
    total = sl.stop - sl.start
    done = 0
    blocks = client_blocks(cluster, node.name, workload)
    node.phase("encode")
    batches, n = next(blocks)
    while True:
        done += n
        node.progress("encode+submit", done, total)
        nxt = next(blocks, None)
        node.phase("submit")
        await node.send(shuffler, "submit", dump_batches(batches, users=n, final=nxt is None))
        if nxt is None:
            break
        node.phase("encode")
        batches, n = nxt
        await asyncio.sleep(0)


async def run_shuffler(node: Any, cluster: Cluster) -> None:
    """Collect every population's messages, validate, shuffle, forward to the analyzer."""
    workload = load_workload(cluster)
    protocol = workload.protocol
    node.phase("submit")
    collected: dict[str, list[np.ndarray]] = {s.name: [] for s in protocol.batch_specs()}
    invalid = {s.name: 0 for s in protocol.batch_specs()}

    async def from_client(client: str) -> None:
        while True:
            payload = await node.recv(client, "submit")
            try:
                batches, meta = load_batches(payload)
                bad = validate_batches(protocol, batches)
            except ValueError as exc:
                raise PeerError(f"malformed submission from {client}: {exc}") from None
            for name, arr in batches.items():
                if bad[name]:
                    spec = next(s for s in protocol.batch_specs() if s.name == name)
                    ok = ((arr >= 0) & (arr < spec.bound)).all(axis=1)
                    invalid[name] += int((~ok).sum())
                    arr = arr[ok]
                collected[name].append(arr)
            if meta.get("final"):
                return

    await asyncio.gather(*(from_client(c) for c in names_with_role(cluster, "client")))
    node.phase("shuffle")
    rng = np.random.default_rng(secrets.randbits(128))
    shuffled = {}
    for name, parts in collected.items():
        spec = next(s for s in protocol.batch_specs() if s.name == name)
        arr = np.concatenate(parts) if parts else np.zeros((0, spec.width), np.int64)
        shuffled[name] = arr[rng.permutation(arr.shape[0])]
    node.phase("deliver")
    await node.send(
        single(cluster, "analyzer").name,
        "shuffled",
        dump_batches(shuffled, invalid=invalid),
        public=True,
    )


async def run_analyzer(node: Any, cluster: Cluster) -> None:
    """Receive the shuffled multiset, estimate, publish."""
    workload = load_workload(cluster)
    node.phase("deliver")
    payload = await node.recv(single(cluster, "shuffler").name, "shuffled")
    try:
        shuffled, meta = load_batches(payload)
        validate_batches(workload.protocol, shuffled)
    except ValueError as exc:
        raise PeerError(f"malformed shuffled batches from the shuffler: {exc}") from None
    publish_result(node, cluster, workload, shuffled, dict(meta.get("invalid", {})))
