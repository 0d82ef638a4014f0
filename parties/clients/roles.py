"""Client-population and analyzer roles shared by every shuffler backend.

A client population holds a contiguous slice of the simulated users, encodes them in blocks
with the workload's protocol (the same ``encode`` the simulations call) and hands the messages
to the shuffler backend. The analyzer runs the protocol's ``analyze`` on the shuffled multiset,
publishes the estimate in its transcript and writes ``result.json``.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from parties.runtime import codec
from parties.runtime.cluster import Cluster
from parties.runtime.codec import to_jsonable
from protocols.base import Batches
from protocols.workloads import Workload, get_workload

BLOCK_USERS = 200_000


def load_workload(cluster: Cluster) -> Workload:
    """The run's workload, built from the cluster parameters (deterministic given the seed)."""
    return get_workload(cluster.protocol, dict(cluster.params))


def client_rng(cluster: Cluster, index: int) -> np.random.Generator:
    """Client randomness: reproducible from ``params.seed`` if given, else CSPRNG-seeded."""
    seed = cluster.params.get("seed")
    if seed is None:
        return np.random.default_rng(secrets.randbits(128))
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(1, index)))


def population_records(cluster: Cluster, name: str, workload: Workload) -> np.ndarray:
    """The records of the users held by client population ``name``."""
    clients = [p.name for p in cluster.by_role("client")]
    return workload.records[workload.user_slice(clients.index(name), len(clients))]


class ClientPopulation:
    """A client-population process's users, encoded block by block, round by round.

    Each block of at most ``BLOCK_USERS`` users keeps its own private local state across rounds
    (``ShuffleProtocol.encode_round``'s ``local``), exactly like ``protocols.base.simulate``
    keeps one per population.
    """

    def __init__(self, cluster: Cluster, name: str, workload: Workload) -> None:
        clients = [p.name for p in cluster.by_role("client")]
        self.protocol = workload.protocol
        self.records = population_records(cluster, name, workload)
        self.rng = client_rng(cluster, clients.index(name))
        n = self.records.shape[0]
        self.blocks = [slice(s, min(n, s + BLOCK_USERS)) for s in range(0, max(n, 1), BLOCK_USERS)]
        self.local: list[dict[str, Any]] = [{} for _ in self.blocks]

    @property
    def n_users(self) -> int:
        return int(self.records.shape[0])

    def encode(self, rnd: int, public: dict[str, Any]) -> Iterator[tuple[Batches, int]]:
        """Yield (batches, users in block) for every block of round ``rnd``."""
        for sl, loc in zip(self.blocks, self.local):
            block = self.records[sl]
            yield self.protocol.encode_round(rnd, block, self.rng, public, loc), int(block.shape[0])


def dump_batches(batches: Batches, **extra: Any) -> bytes:
    """Payload carrying message batches plus extra fields."""
    return codec.dumps(
        {
            "batches": {
                k: codec.array_to_obj(np.asarray(v, dtype=np.int64)) for k, v in batches.items()
            },
            **extra,
        }
    )


def load_batches(payload: bytes) -> tuple[Batches, dict[str, Any]]:
    """Inverse of ``dump_batches``; ValueError on malformed payloads."""
    obj = codec.loads(payload)
    if not isinstance(obj, dict) or not isinstance(obj.get("batches"), dict):
        raise ValueError("batch payload must be a map with a 'batches' map")
    batches = {}
    for k, v in obj["batches"].items():
        if not isinstance(k, str):
            raise ValueError("batch names must be strings")
        arr = codec.obj_to_array(v)
        if arr.dtype != np.int64 or arr.ndim != 2:
            raise ValueError(f"batch {k!r}: messages must be a 2-D int64 array")
        batches[k] = arr
    return batches, {k: v for k, v in obj.items() if k != "batches"}


def publish_result(
    node: Any,
    cluster: Cluster,
    workload: Workload,
    estimate: dict[str, Any],
    messages: dict[str, int],
    invalid: dict[str, int],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Publish the final estimate in the transcript, run the workload's artifact hook
    (e.g. synthetic data) and write ``result.json``. Shared by every shuffler backend."""
    node.phase("publish")
    estimate = to_jsonable(estimate)
    privacy = to_jsonable(privacy_statement(cluster, workload.protocol.privacy()))
    digest = node.publish("estimate", codec.dumps(estimate))
    node.publish("privacy", codec.dumps(privacy))
    result = {
        "protocol": cluster.protocol,
        "shuffler": cluster.shuffler,
        "session": cluster.session,
        "params": dict(cluster.params),
        "estimate": estimate,
        "estimate_sha256": digest,
        "privacy": privacy,
        "messages": messages,
        "invalid_messages": invalid,
        **(extra or {}),
    }
    files = workload.artifacts(estimate, Path(node.run_dir))
    if files:
        result["artifacts"] = files
    path = Path(node.run_dir) / "result.json"
    tmp = path.with_name(f".result.json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result, indent=1))
    os.replace(tmp, path)
    return result


SIMULATION_WARNING = (
    "SIMULATION WITHOUT PRIVACY: the client randomness was seeded from the public cluster file "
    "(--seed), so anyone holding the run directory can recompute every user's local noise"
)


def privacy_statement(cluster: Cluster, statement: dict[str, Any]) -> dict[str, Any]:
    """The published privacy statement; a seeded run says it is a simulation without privacy."""
    out = dict(statement)
    if cluster.params.get("seed") is not None:
        out["simulation"] = True
        out["warning"] = SIMULATION_WARNING
    else:
        out["simulation"] = False
    return out
