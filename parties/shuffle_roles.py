"""Client-population and analyzer roles shared by every shuffler backend.

A client population holds a contiguous slice of the simulated users, encodes them in blocks
with the workload's protocol (the same ``encode`` the simulations call) and hands the messages
to the shuffler backend. The analyzer runs the protocol's ``analyze`` on the shuffled multiset,
publishes the estimate in its transcript and writes ``result.json``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from parties import codec
from parties.cluster import Cluster
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


def client_blocks(cluster: Cluster, name: str, workload: Workload) -> Iterator[tuple[Batches, int]]:
    """Encode this population's users block by block: yields (batches, users in block)."""
    clients = [p.name for p in cluster.by_role("client")]
    index = clients.index(name)
    sl = workload.user_slice(index, len(clients))
    rng = client_rng(cluster, index)
    records = workload.records[sl]
    for start in range(0, max(1, records.shape[0]), BLOCK_USERS):
        block = records[start : start + BLOCK_USERS]
        yield workload.protocol.encode(block, rng), int(block.shape[0])


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


def to_jsonable(x: Any) -> Any:
    """numpy values/arrays inside an estimate -> plain JSON types."""
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


def publish_result(
    node: Any,
    cluster: Cluster,
    workload: Workload,
    shuffled: Batches,
    invalid: dict[str, int],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Analyze, publish the estimate in the transcript, write ``result.json``."""
    node.phase("analyze")
    estimate = to_jsonable(workload.protocol.analyze(shuffled))
    node.phase("publish")
    published = codec.dumps(estimate)
    digest = node.publish("estimate", published)
    result = {
        "protocol": cluster.protocol,
        "shuffler": cluster.shuffler,
        "session": cluster.session,
        "params": dict(cluster.params),
        "estimate": estimate,
        "estimate_sha256": digest,
        "privacy": to_jsonable(workload.protocol.privacy()),
        "messages": {k: int(v.shape[0]) for k, v in shuffled.items()},
        "invalid_messages": invalid,
        **(extra or {}),
    }
    path = Path(node.run_dir) / "result.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(path)
    return result
