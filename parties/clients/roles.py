"""Client-population and analyzer roles shared by every shuffler backend.

A client population holds a contiguous slice of the simulated users, encodes them in blocks
with the workload's protocol (the same ``encode`` the simulations call) and hands the messages
to the shuffler backend. The analyzer runs the protocol's ``analyze`` on the shuffled multiset,
publishes the estimate in its transcript and writes ``result.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from parties.runtime import codec
from parties.runtime.cluster import Cluster
from parties.runtime.codec import to_jsonable
from protocols.base import GROUPING_SEED, USER_IDS, Batches, received_counts
from protocols.datasets.source import DATA_PARAM
from protocols.privacy.ledger import PrivacyRefusal, Release, gate, ledger_json
from protocols.rng import secure_rng
from protocols.workloads import Workload, recorded_workload

BLOCK_USERS = 200_000


def load_workload(cluster: Cluster, name: str | None = None) -> Workload:
    """The run's workload, built from the cluster parameters (deterministic given the seed).

    In a run on its owners' data, client party ``name`` builds it with its own records file
    (its ``data`` in the cluster file); every other party holds no records."""
    params = dict(cluster.params)
    if name is not None and cluster.data_of(name):
        params[DATA_PARAM] = cluster.data_of(name)
    return recorded_workload(cluster.protocol, params)


def own_data(cluster: Cluster) -> bool:
    """A run on the data owners' own files: the client parties declare their users (public);
    each one's file is named in its own directory only."""
    return any(p.users is not None or p.data for p in cluster.by_role("client"))


def client_rng(cluster: Cluster, index: int) -> np.random.Generator:
    """Client randomness: CSPRNG-seeded (``protocols.rng.secure_rng``), or reproducible from
    ``params.seed`` in a seeded run, which is then a simulation without privacy."""
    seed = cluster.params.get("seed")
    if seed is None:
        return secure_rng()
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(1, index)))


def grouping_seed_of(cluster: Cluster) -> int:
    """The run's public grouping seed (``protocols.privacy.grouping``): fixed by the session id
    before any data is read, fresh per run, the same at every client party (a seeded simulation
    derives it from its seed, so that it is reproducible across sessions)."""
    seed = cluster.params.get("seed")
    basis = cluster.session_bytes if seed is None else f"seed:{int(seed)}".encode()
    h = hashlib.sha256(b"sdp-grouping-v1" + basis).digest()
    return int.from_bytes(h[:8], "little") >> 2


def simulated_dropout(cluster: Cluster) -> float:
    """``params.simulate_dropout``: the fraction of users whose submissions never leave their
    client party (a demonstration of the privacy gate refusing or re-accounting)."""
    f = float(cluster.params.get("simulate_dropout", 0.0))
    if not 0.0 <= f < 1.0:
        raise ValueError(f"simulate_dropout must lie in [0, 1), got {f}")
    return f


class ClientPopulation:
    """A client-population process's users, encoded block by block, round by round.

    Each block of at most ``BLOCK_USERS`` users keeps its own private local state across rounds
    (``ShuffleProtocol.encode_round``'s ``local``), exactly like ``protocols.base.simulate``
    keeps one per population.
    """

    def __init__(self, cluster: Cluster, name: str, workload: Workload) -> None:
        clients = cluster.by_role("client")
        index = [p.name for p in clients].index(name)
        self.protocol = workload.protocol
        self.rng = client_rng(cluster, index)
        if own_data(cluster):  # this party's own file; global ids from the declared counts
            me = clients[index]
            if me.users is None or any(p.users is None for p in clients):
                raise ValueError("every client party of a run on its own data declares users")
            records = workload.records
            if records.shape[0] != me.users:  # one record (kept or dummy) per row, in place
                raise ValueError(
                    f"{name}: {records.shape[0]} records from {cluster.data_of(name)}, but the cluster "
                    f"declares {me.users} users for this party"
                )
            first = sum(int(p.users or 0) for p in clients[:index])
        else:  # simulated users: this party's contiguous slice of the bundled records
            sl = workload.user_slice(index, len(clients))
            records, first = workload.records[sl], sl.start
        ids = np.arange(first, first + records.shape[0], dtype=np.int64)
        drop = simulated_dropout(cluster)
        if drop > 0:
            keep = np.sort(self.rng.permutation(ids.shape[0])[int(drop * ids.shape[0]) :])
            records, ids = records[keep], ids[keep]
        self.records = records
        n = self.records.shape[0]
        self.blocks = [slice(s, min(n, s + BLOCK_USERS)) for s in range(0, max(n, 1), BLOCK_USERS)]
        seed = grouping_seed_of(cluster)
        self.local: list[dict[str, Any]] = [
            {USER_IDS: ids[b], GROUPING_SEED: seed} for b in self.blocks
        ]

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


def gate_round(
    protocol: Any,
    rnd: int,
    public: dict[str, Any],
    shuffled: Batches,
    users: int,
    released: list[Release],
    fakes: dict[str, int] | None = None,
) -> list[Release]:
    """The analyzer's privacy gate for one round, before the analyzer looks at the batches:
    well-formed messages per batch (the shuffler's announced ``fakes`` taken out) and the users
    whose submissions arrived, against what the protocol's guarantee was accounted for;
    ``PrivacyRefusal`` (one line) otherwise."""
    counts = received_counts(protocol.batch_specs_round(rnd, public), shuffled, users, fakes)
    try:
        return gate(protocol, rnd, counts, previous=released)
    except PrivacyRefusal as exc:
        raise refusal(rnd, str(exc), released) from None


def refusal(rnd: int, why: str, released: list[Release]) -> PrivacyRefusal:
    """The analyzer's refusal of round ``rnd``, carrying the ledger of the releases that passed
    the gate before it (earlier rounds' results already went out; the launcher lists them)."""
    msg = f"privacy gate refused to publish round {rnd}: {why}"
    if released:
        msg += RELEASED_MARK + json.dumps(ledger_json(released), separators=(",", ":"))
    return PrivacyRefusal(msg)


RELEASED_MARK = " || released before the refusal: "


def released_before_refusal(reason: str) -> tuple[str, dict[str, Any] | None]:
    """(the refusal without its ledger, the ledger of the releases that passed the gate before
    it, or None): the analyzer's refusal of a later round names what earlier rounds released."""
    head, mark, tail = reason.partition(RELEASED_MARK)
    if not mark:
        return reason, None
    try:
        ledger = json.loads(tail)
    except ValueError:
        return head, {"unparsed": tail}
    return head, ledger


def publish_result(
    node: Any,
    cluster: Cluster,
    workload: Workload,
    estimate: dict[str, Any],
    messages: dict[str, int],
    invalid: dict[str, int],
    extra: dict[str, Any] | None = None,
    releases: list[Release] | None = None,
    statements: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Publish the final estimate and the privacy statement (with its ledger: every release that
    passed the gate, and ``statements`` beside it, e.g. ``fakes``) in the transcript, run the
    workload's artifact hook (e.g. synthetic data) and write ``result.json``. Shared by every
    shuffler backend."""
    if not releases:
        raise PrivacyRefusal("no release passed the privacy gate; nothing is published")
    node.phase("publish")
    estimate = to_jsonable(estimate)
    statement = {**workload.protocol.privacy(), **ledger_json(releases), **(statements or {})}
    privacy = to_jsonable(privacy_statement(cluster, statement))
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
        "spec_version": SPEC_VERSION,
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


# the verifier specification (docs/spec/) this run's artifacts follow; verifiers refuse an
# unknown major version (docs/spec/07-privacy.md P-1)
SPEC_VERSION = "1.1"


def privacy_statement(cluster: Cluster, statement: dict[str, Any]) -> dict[str, Any]:
    """The published privacy statement, with the spec version the run follows; a seeded run says
    it is a simulation without privacy."""
    out = {**statement, "spec_version": SPEC_VERSION}
    if cluster.params.get("seed") is not None:
        out["simulation"] = True
        out["warning"] = SIMULATION_WARNING
    else:
        out["simulation"] = False
    return out
