"""Run plan of the verifiable mix-net shuffler (``--shuffler mixnet``).

Multi-round protocols (e.g. GFIM) run one complete mix-net per round; between rounds the
analyzer broadcasts its public state (``state``) to the clients and the servers.

Parties: ``analyzer``, ``mix-1..k`` (threshold ElGamal over ristretto255 from a DKG, each
re-encrypts, permutes and proves the shuffle in turn, then t-of-k threshold decryption with
proofs) and one client population ``client-1`` (every simulated user encrypts its messages under
the joint key and proves knowledge of the randomness, bound to its own client id). The message
flow is ``parties.mixnet`` (``server``, ``client``, ``analyzer``), the arithmetic
``mpc.mixnet``; every mix-net message is public and so recorded in full in the transcripts. The
server that combines the decryption shares publishes the run's public record
(``mixnet.record``), which ``sdp verify`` re-checks with ``mpc.mixnet.record_verifier`` after
tying every artifact of it to the messages on the wire.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from mpc.mixnet.schema import MixnetShapeError, check_shape
from parties.clients.roles import (
    gate_round,
    load_workload,
    publish_result,
)
from parties.mixnet.analyzer import receive_result
from parties.mixnet.backend import SERVER_ROLE
from parties.mixnet.client import run_clients
from parties.mixnet.record import publish_record
from parties.mixnet.server import run_mix_server
from parties.mixnet.state import MixnetAbort, MixnetConfig
from parties.runtime import codec
from parties.runtime.cluster import Cluster
from parties.runtime.codec import to_jsonable
from parties.runtime.link import PeerError
from parties.runtime.plans import names_with_role, single
from parties.runtime.pools import open_pool
from parties.runtime.receive import recv_patient
from protocols.privacy.ledger import Release
from protocols.workloads import Workload

RECORD_TYPE = "mixnet.record"


def mixnet_config(
    cluster: Cluster,
    rnd: int = 0,
    public: dict[str, Any] | None = None,
    workload: Workload | None = None,
) -> MixnetConfig:
    """The mix-net configuration of round ``rnd`` (servers in cluster-file order).

    A multi-round protocol runs one complete mix-net per round (its own DKG, session id
    ``SESSION/rROUND`` and that round's batches, which may depend on the analyzer's public
    state ``public``); a single-round run keeps the cluster's session id. ``workload`` saves
    rebuilding the run's workload when the caller has it.
    """
    proto = (workload or load_workload(cluster)).protocol
    servers = names_with_role(cluster, SERVER_ROLE)
    clients = names_with_role(cluster, "client")
    if not clients:
        raise PeerError("the mix-net run needs at least one client party")
    p = cluster.params
    t = int(p.get("threshold", 2))
    if "verify_mixes" in p:
        raise MixnetShapeError(
            "--param verify_mixes is not accepted: every server verifies the whole mix chain "
            "before it releases a decryption share"
        )
    return MixnetConfig(
        session_id=cluster.session if proto.n_rounds == 1 else f"{cluster.session}/r{rnd}",
        servers=servers,
        specs=proto.batch_specs_round(rnd, public or {}),
        t=t,
        clients=clients[0],
        client_parties=clients,
        analyzer=single(cluster, "analyzer").name,
        workers=int(p.get("mix_workers", os.cpu_count() or 1)),
        combine_all=bool(p.get("combine_all", False)),
    )


@dataclass
class _ClientRun:
    """A mix-net client party's round: its blocks gathered until the last one."""

    cluster: Any
    workload: Any
    patience: int
    batches: dict[str, list[np.ndarray]] = field(default_factory=dict)
    owners: dict[str, list[str]] = field(default_factory=dict)


class MixnetPlan:
    """client parties -> k mix servers (DKG, mix, decrypt) -> analyzer.

    Dead-server policy (``parties.mixnet.server``): the run completes if at least t dealers
    qualified, at least one server mixed and t servers gave valid decryption shares; the dead
    servers are then listed as ``faults`` in result.json. Otherwise nothing is published.
    """

    def check_params(self, params: dict[str, Any], options: dict[str, Any]) -> None:
        """Refuse at launch what the servers would refuse mid-run (``MixnetShapeError``)."""
        if "verify_mixes" in params:
            raise MixnetShapeError(
                "--param verify_mixes is not accepted: every server verifies the whole mix "
                "chain before it releases a decryption share"
            )
        check_shape(int(options.get("mix_servers", 3)), int(params.get("threshold", 2)))

    def layout(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        """Parties of the run; raises ``MixnetShapeError`` (a ``ValueError``) for fewer than 2
        mix servers or a threshold outside 2..k."""
        k = int(options.get("mix_servers", 3))
        check_shape(k, int(options.get("threshold", 2)))
        clients = int(options.get("clients", 1))
        if clients < 1:
            raise ValueError(f"--clients must be at least 1, got {clients}")
        return (
            [("analyzer", "analyzer")]
            + [(f"mix-{i + 1}", SERVER_ROLE) for i in range(k)]
            + [(f"client-{i + 1}", "client") for i in range(clients)]
        )

    def peers(self, cluster: Cluster, name: str) -> set[str]:
        role = cluster.party(name).role
        servers = set(names_with_role(cluster, SERVER_ROLE))
        analyzer = {single(cluster, "analyzer").name}
        if role == "client":
            return servers | analyzer
        if role == SERVER_ROLE:
            return (
                (servers - {name})
                | set(names_with_role(cluster, "client"))
                | {single(cluster, "analyzer").name}
            )
        if role == "analyzer":
            return servers | set(names_with_role(cluster, "client"))
        raise PeerError(f"role {role!r} has no part in a mix-net run")

    async def start_client(self, node: Any, cluster: Any, workload: Any) -> _ClientRun:
        cfg = mixnet_config(cluster, 0, {}, workload)
        return _ClientRun(cluster, workload, state_patience(cfg))

    async def round_state(self, node: Any, cluster: Any, run: Any, rnd: int) -> dict[str, Any]:
        return await receive_state(node, cluster, rnd, run.patience)

    async def submit(self, node: Any, run: Any, rnd: int, block: Any) -> None:
        """Gather the round's blocks (each row owned by its user); after the last, encrypt
        and prove every message under the round's joint key and send them to every server."""
        for name, rows in block.batches.items():
            # who sent each row: encoders emit one row per user unless they say otherwise
            # (the servers namespace them by this party: ``mpc.mixnet.schema.bound_client_id``)
            n, first = block.users, block.first_user
            per_user = rows.shape[0] // max(1, n)
            ids = [f"u{first + i}" for i in range(n) for _ in range(per_user)]
            if len(ids) != rows.shape[0]:
                ids = [f"m{first}-{i}" for i in range(rows.shape[0])]
            run.batches.setdefault(name, []).append(rows)
            run.owners.setdefault(name, []).extend(ids)
        if not block.last:
            return
        cfg = mixnet_config(run.cluster, rnd, block.public, run.workload)
        merged = {k: np.concatenate(v) for k, v in run.batches.items()}
        owners, run.batches, run.owners = run.owners, {}, {}
        try:
            await run_clients(node, cfg, merged, owners, users=block.total_users)
        except MixnetAbort as exc:
            raise PeerError(f"mix-net aborted, nothing published: {exc}") from None

    async def run(self, node: Any, cluster: Cluster) -> None:
        role = cluster.party(node.name).role
        runner = {"client": run_client, SERVER_ROLE: run_server, "analyzer": run_analyzer}[role]
        try:
            await runner(node, cluster)
        except MixnetAbort as exc:
            raise PeerError(f"mix-net aborted, nothing published: {exc}") from None


async def receive_state(node: Any, cluster: Cluster, rnd: int, patience: int) -> dict[str, Any]:
    """The analyzer's public state for round ``rnd`` (empty before round 0); waits up to
    ``patience`` receive timeouts, since a whole mix-net round runs before it is sent."""
    if rnd == 0:
        return {}
    node.phase("state", rnd)
    raw = await recv_patient(node, single(cluster, "analyzer").name, "state", patience)
    if isinstance(raw, PeerError):
        raise raw
    obj = codec.loads(raw)
    if not isinstance(obj, dict):
        raise PeerError("malformed round state from the analyzer")
    return obj


def state_patience(cfg: MixnetConfig) -> int:
    """Receive timeouts tolerated while the other parties run one mix-net round."""
    return cfg.mix_patience * (len(cfg.servers) + 1)


async def run_client(node: Any, cluster: Cluster) -> None:
    """The client round loop (``parties.clients.loop``) with this backend's submit: per
    round, every user's messages encrypted under the round's joint key with a proof bound to
    the user's own client id, submitted to every server."""
    from parties.clients.loop import run_client as client_loop
    from parties.mixnet.backend import BACKEND

    await client_loop(BACKEND, node, cluster)


async def run_server(node: Any, cluster: Cluster) -> None:
    """One mix server per round; the one that combined the shares publishes the round's
    public record (with ``round``)."""
    workload = load_workload(cluster)
    cfg = mixnet_config(cluster, 0, {}, workload)
    # the server's pool for every round: its own processes, or its Dask cluster's workers
    # (connected off the event loop: Dask's client runs a loop of its own)
    pool = await asyncio.to_thread(open_pool, cluster.pools.get(node.name), cfg.workers)
    released: list[Release] = []  # the releases of the rounds this server decrypted (M-3)
    try:
        for rnd in range(workload.protocol.n_rounds):
            public = await receive_state(node, cluster, rnd, state_patience(cfg))
            cfg = replace(mixnet_config(cluster, rnd, public, workload), workers=pool.workers)
            state = await run_mix_server(node, cfg, cfg.servers.index(node.name) + 1, pool.executor)
            if state.delegated is None and state.plaintexts:
                # spec 05 M-3: the record carries the round's plaintexts, its release: published
                # only past the analyzer's privacy gate, evaluated here on the same data (a
                # refusal ends this server with the gate's reason, nothing of the round published)
                shuffled = {
                    k: rows[np.asarray(ok, dtype=bool)] for k, (rows, ok) in state.result.items()
                }
                released += gate_round(
                    workload.protocol, rnd, public, shuffled, state.users, released
                )
                node.phase("publish", rnd)
                publish_record(node, RECORD_TYPE, state, {"round": rnd})
    finally:
        await asyncio.to_thread(pool.close)


async def run_analyzer(node: Any, cluster: Cluster) -> None:
    """Per round: receive the decrypted shuffled multiset and analyze; broadcast the public
    state to clients and servers, or publish the estimate after the last round."""
    workload = load_workload(cluster)
    protocol = workload.protocol
    receivers = names_with_role(cluster, "client") + names_with_role(cluster, SERVER_ROLE)
    public: dict[str, Any] = {}
    released: list[Release] = []
    for rnd in range(protocol.n_rounds):
        cfg = mixnet_config(cluster, rnd, public, workload)
        shuffled, users = await receive_result(node, cfg)
        released += gate_round(protocol, rnd, public, shuffled, users, released)
        node.phase("analyze", rnd)
        result = to_jsonable(protocol.analyze_round(rnd, shuffled, public))
        if rnd < protocol.n_rounds - 1:
            node.phase("state", rnd + 1)
            payload = codec.dumps(result)
            for peer in receivers:
                try:
                    await node.send(peer, "state", payload, public=True)
                except PeerError:  # a dead mix server or a client party that dropped out
                    continue
            public = result
            continue
        publish_result(
            node,
            cluster,
            workload,
            result,
            {k: int(v.shape[0]) for k, v in shuffled.items()},
            {},
            {
                "mixnet": {
                    "servers": cfg.servers,
                    "threshold": cfg.t,
                    "rounds": protocol.n_rounds,
                    "record": f"published by the combining server as {RECORD_TYPE} per round",
                }
            },
            released,
        )
