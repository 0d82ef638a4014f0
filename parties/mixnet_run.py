"""Run plan of the verifiable mix-net shuffler (``--shuffler mixnet``).

Parties: ``analyzer``, ``mix-1..k`` (threshold ElGamal over ristretto255 from a DKG, each
re-encrypts, permutes and proves the shuffle in turn, then t-of-k threshold decryption with
proofs) and one client population ``client-1`` (every simulated user encrypts its messages under
the joint key and proves knowledge of the randomness, bound to its own client id). The protocol
logic is ``mpc.mixnet_protocol``; every mix-net message is public and so recorded in full in the
transcripts. The server that combines the decryption shares publishes the run's public record
(``mixnet.record``), which ``sdp verify`` re-checks with ``mpc.mixnet_verifier`` after tying
every artifact of it to the messages on the wire.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from mpc.mixnet_protocol import (
    MixnetAbort,
    MixnetConfig,
    public_record,
    receive_result,
    run_clients,
    run_mix_server,
)
from parties import codec
from parties.cluster import Cluster
from parties.link import PeerError
from parties.plans import names_with_role, single
from parties.shuffle_roles import ClientPopulation, load_workload, publish_result

SERVER_ROLE = "mix-server"
RECORD_TYPE = "mixnet.record"


def mixnet_config(cluster: Cluster) -> MixnetConfig:
    """The mix-net configuration of a cluster (servers in cluster-file order)."""
    workload = load_workload(cluster)
    proto = workload.protocol
    if proto.n_rounds != 1:
        raise PeerError(
            f"protocol {cluster.protocol!r} has {proto.n_rounds} rounds; the mix-net "
            "backend runs single-round protocols (use --shuffler trusted or mpc)"
        )
    servers = names_with_role(cluster, SERVER_ROLE)
    clients = names_with_role(cluster, "client")
    if len(clients) != 1:
        raise PeerError(f"the mix-net run needs exactly one client population, got {len(clients)}")
    p = cluster.params
    t = int(p.get("threshold", 2))
    if not 1 <= t <= len(servers):
        raise PeerError(f"threshold {t} must lie in 1..{len(servers)} (the number of mix servers)")
    return MixnetConfig(
        session_id=cluster.session,
        servers=servers,
        specs=proto.batch_specs(),
        t=t,
        clients=clients[0],
        analyzer=single(cluster, "analyzer").name,
        workers=int(p.get("mix_workers", os.cpu_count() or 1)),
        verify_mixes=bool(p.get("verify_mixes", True)),
        combine_all=bool(p.get("combine_all", False)),
    )


class MixnetPlan:
    """client population -> k mix servers (DKG, mix, decrypt) -> analyzer.

    Dead-server policy (``mpc.mixnet_protocol``): the run completes if at least t dealers
    qualified, at least one server mixed and t servers gave valid decryption shares; the dead
    servers are then listed as ``faults`` in result.json. Otherwise nothing is published.
    """

    tolerated_roles = {SERVER_ROLE}

    def layout(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        k = int(options.get("mix_servers", 3))
        if k < 1:
            raise ValueError(f"--mix-servers must be at least 1, got {k}")
        return (
            [("analyzer", "analyzer")]
            + [(f"mix-{i + 1}", SERVER_ROLE) for i in range(k)]
            + [("client-1", "client")]
        )

    def peers(self, cluster: Cluster, name: str) -> set[str]:
        role = cluster.party(name).role
        servers = set(names_with_role(cluster, SERVER_ROLE))
        if role == "client":
            return servers
        if role == SERVER_ROLE:
            return (
                (servers - {name})
                | set(names_with_role(cluster, "client"))
                | {single(cluster, "analyzer").name}
            )
        if role == "analyzer":
            return servers
        raise PeerError(f"role {role!r} has no part in a mix-net run")

    async def run(self, node: Any, cluster: Cluster) -> None:
        role = cluster.party(node.name).role
        runner = {"client": run_client, SERVER_ROLE: run_server, "analyzer": run_analyzer}[role]
        try:
            await runner(node, cluster)
        except MixnetAbort as exc:
            raise PeerError(f"mix-net aborted, nothing published: {exc}") from None


async def run_client(node: Any, cluster: Cluster) -> None:
    """Encode every user, encrypt each message under the joint key with a proof bound to the
    user's own client id, submit to every server."""
    cfg = mixnet_config(cluster)
    workload = load_workload(cluster)
    pop = ClientPopulation(cluster, node.name, workload)
    node.phase("encode")
    parts = list(pop.encode(0, {}))
    batches: dict[str, np.ndarray] = {}
    owners: dict[str, list[str]] = {}
    first_user = 0
    for block, n in parts:
        for name, rows in block.items():
            # which user sent each row: encoders emit one row per user unless they say otherwise
            per_user = rows.shape[0] // max(1, n)
            ids = [f"{node.name}/u{first_user + i}" for i in range(n) for _ in range(per_user)]
            if len(ids) != rows.shape[0]:
                ids = [f"{node.name}/m{first_user}-{i}" for i in range(rows.shape[0])]
            batches.setdefault(name, []).append(rows)  # type: ignore[arg-type]
            owners.setdefault(name, []).extend(ids)
        first_user += n
    merged = {k: np.concatenate(v) for k, v in batches.items()}  # type: ignore[arg-type]
    node.progress("encrypt+prove", 0, sum(v.shape[0] for v in merged.values()))
    await run_clients(node, cfg, merged, owners)


async def run_server(node: Any, cluster: Cluster) -> None:
    """One mix server; the one that combined the shares publishes the public record."""
    cfg = mixnet_config(cluster)
    state = await run_mix_server(node, cfg, cfg.servers.index(node.name) + 1)
    if state.delegated is None and state.plaintexts:
        node.phase("publish")
        node.publish(RECORD_TYPE, codec.dumps(public_record(state)))


async def run_analyzer(node: Any, cluster: Cluster) -> None:
    """Receive the decrypted shuffled multiset, estimate, publish."""
    cfg = mixnet_config(cluster)
    workload = load_workload(cluster)
    shuffled = await receive_result(node, cfg)
    node.phase("analyze")
    estimate = workload.protocol.analyze(shuffled)
    publish_result(
        node,
        cluster,
        workload,
        estimate,
        {k: int(v.shape[0]) for k, v in shuffled.items()},
        {},
        {
            "mixnet": {
                "servers": cfg.servers,
                "threshold": cfg.t,
                "record": f"published by the combining server as {RECORD_TYPE}",
            }
        },
    )
