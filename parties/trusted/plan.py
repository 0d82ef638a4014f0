"""Run plan with the in-process *trusted* shuffler party (simulation backend).

Parties: ``client-1..P`` (user populations), ``shuffler``, ``analyzer``. Per round, clients send
their messages (private) to the shuffler; it drops out-of-domain messages (counted), permutes
each batch uniformly and sends the shuffled multiset (public) to the analyzer. Multi-round
protocols get the analyzer's public state (``state``, public) between rounds.

The trusted shuffler sees every message in the clear: it is the baseline the mix-net and MPC
backends replace, and the one for large simulations.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import numpy as np

from parties.clients.roles import (
    dump_batches,
    gate_round,
    load_batches,
    load_workload,
    publish_result,
    refusal,
)
from parties.runtime import codec
from parties.runtime.busy import beat_until_state
from parties.runtime.cluster import Cluster
from parties.runtime.codec import to_jsonable
from parties.runtime.link import PeerError
from parties.runtime.plans import names_with_role, single
from parties.runtime.transport import log
from protocols.base import BatchSpec, validate_batches
from protocols.defences.fake_removal import (
    add_fakes,
    analyze_with_fakes,
    announced_fakes,
    fake_counts,
    fakes_setting,
    fakes_statement,
)
from protocols.defences.noisy_threshold import (
    threshold_for_minimum,
    threshold_release,
    threshold_release_entry,
    threshold_settings,
)
from protocols.privacy.ledger import PrivacyRefusal, Release


class TrustedShufflePlan:
    """clients -> shuffler -> analyzer (-> clients, for multi-round protocols)."""

    def layout(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        clients = int(options.get("clients", 2))
        return [("analyzer", "analyzer"), ("shuffler", "shuffler")] + [
            (f"client-{i + 1}", "client") for i in range(clients)
        ]

    def peers(self, cluster: Cluster, name: str) -> set[str]:
        role = cluster.party(name).role
        analyzer, shuffler = single(cluster, "analyzer").name, single(cluster, "shuffler").name
        clients = set(names_with_role(cluster, "client"))
        if role == "client":
            return {shuffler, analyzer}
        if role == "shuffler":
            return clients | {analyzer}
        if role == "analyzer":
            return clients | {shuffler}
        raise PeerError(f"role {role!r} has no part in a trusted-shuffler run")

    async def start_client(self, node: Any, cluster: Cluster, workload: Any) -> str:
        """A client party's run state: the shuffler party's name."""
        return single(cluster, "shuffler").name

    async def round_state(self, node: Any, cluster: Cluster, run: str, rnd: int) -> dict[str, Any]:
        return await receive_state(node, cluster, rnd)

    async def submit(self, node: Any, run: str, rnd: int, block: Any) -> None:
        """Send the block's messages in the clear to the shuffler party ``run``."""
        node.phase("submit", rnd)
        await node.send(
            run, "submit", dump_batches(block.batches, users=block.users, final=block.last)
        )

    async def run(self, node: Any, cluster: Cluster) -> None:
        role = cluster.party(node.name).role
        runner = {"client": run_client, "shuffler": run_shuffler, "analyzer": run_analyzer}
        await runner[role](node, cluster)


async def receive_state(node: Any, cluster: Cluster, rnd: int) -> dict[str, Any]:
    """The analyzer's public state for round ``rnd`` (empty before round 0)."""
    if rnd == 0:
        return {}
    node.phase("state", rnd)
    obj = codec.loads(await node.recv(single(cluster, "analyzer").name, "state"))
    if not isinstance(obj, dict):
        raise PeerError("malformed round state from the analyzer")
    return obj


async def run_client(node: Any, cluster: Cluster) -> None:
    """The client round loop (``parties.clients.loop``) with this backend's submit."""
    from parties.clients.loop import run_client as client_loop
    from parties.trusted.backend import BACKEND

    await client_loop(BACKEND, node, cluster)


def specs_of(specs: list[BatchSpec]) -> dict[str, BatchSpec]:
    return {s.name: s for s in specs}


async def collect_submissions(
    node: Any, cluster: Cluster, specs: list[BatchSpec], dropped: dict[str, str]
) -> tuple[dict[str, list[np.ndarray]], dict[str, int], dict[str, dict[str, int]]]:
    """Every live client party's messages of one round, out-of-domain rows dropped (counted).

    A client party that disconnects or misses the deadline (the phase timeout) drops out: what
    it sent whole before is kept, it is listed in ``dropped`` and not waited for again; the
    privacy gate at the analyzer decides whether what arrived may be published. Returns
    (messages per batch, invalid rows per batch, per client {users, messages, invalid})."""
    by_name = specs_of(specs)
    collected: dict[str, list[np.ndarray]] = {s.name: [] for s in specs}
    invalid = {s.name: 0 for s in specs}
    per_client: dict[str, dict[str, int]] = {}

    async def from_client(client: str) -> None:
        stats = per_client.setdefault(client, {"users": 0, "messages": 0, "invalid": 0})
        while True:
            try:
                payload = await node.recv(client, "submit")
            except PeerError as exc:
                dropped[client] = str(exc)
                log(node.name, f"client {client} dropped out: {exc}")
                return
            try:
                batches, meta = load_batches(payload)
                bad = validate_batches(None, batches, specs)
                users = int(meta.get("users", -1))
                if users < 0:
                    raise ValueError("submission without its number of users")
            except (ValueError, TypeError) as exc:
                raise PeerError(f"malformed submission from {client}: {exc}") from None
            for name, arr in batches.items():
                if bad[name]:
                    ok = ((arr >= 0) & (arr < by_name[name].bound)).all(axis=1)
                    invalid[name] += int((~ok).sum())
                    stats["invalid"] += int((~ok).sum())
                    arr = arr[ok]
                collected[name].append(arr)
                stats["messages"] += int(arr.shape[0])
            stats["users"] += users
            received[0] += users
            node.progress("reports received (users)", received[0], expected)
            if meta.get("final"):
                return

    live = [c for c in names_with_role(cluster, "client") if c not in dropped]
    received = [0]
    expected = sum(int(getattr(p, "users", 0) or 0) for p in cluster.by_role("client"))
    await asyncio.gather(*(from_client(c) for c in live))
    return collected, invalid, per_client


async def run_shuffler(node: Any, cluster: Cluster) -> None:
    """Per round: collect, validate, shuffle, forward to the analyzer."""
    protocol = load_workload(cluster).protocol
    public: dict[str, Any] = {}
    dropped: dict[str, str] = {}
    settings = threshold_settings(cluster.params)
    fake_rows = fake_counts(protocol, fakes_setting(cluster.params))
    for rnd in range(protocol.n_rounds):
        public = await receive_state(node, cluster, rnd) if rnd else {}
        specs = protocol.batch_specs_round(rnd, public)
        node.phase("submit", rnd)
        collected, invalid, per_client = await collect_submissions(node, cluster, specs, dropped)
        node.phase("shuffle", rnd)
        rng = np.random.default_rng(secrets.randbits(128))
        users = sum(c["users"] for c in per_client.values())
        threshold = None
        if settings is not None:  # the survey's crowd threshold, with DP noise on the volume
            n_min, eps_t, beta = settings
            t = threshold_for_minimum(n_min, eps_t, beta)
            ok, noisy = threshold_release(users, t, eps_t, rng)
            threshold = {"n_min": n_min, "eps_t": eps_t, "beta": beta, "threshold": t,
                         "noisy_users": noisy}  # fmt: skip
            if not ok:
                node.phase("deliver", rnd)
                await node.send(
                    single(cluster, "analyzer").name,
                    "shuffled",
                    dump_batches({}, withheld=threshold, round=rnd),
                    public=True,
                )
                raise PeerError(
                    f"round {rnd}: batch withheld: noisy size {noisy} below the threshold {t} "
                    f"(min_batch {n_min})"
                )
        merged = {
            spec.name: np.concatenate(collected[spec.name])
            if collected[spec.name]
            else np.zeros((0, spec.width), np.int64)
            for spec in specs
        }
        # uniform fakes (run parameter ``fakes``), drawn from the CSPRNG-seeded generator
        merged = add_fakes(merged, specs, fake_rows, rng)
        shuffled = {name: arr[rng.permutation(arr.shape[0])] for name, arr in merged.items()}
        node.phase("deliver", rnd)
        await node.send(
            single(cluster, "analyzer").name,
            "shuffled",
            dump_batches(
                shuffled,
                invalid=invalid,
                round=rnd,
                users=users,
                clients=per_client,
                dropped=sorted(dropped),
                **({"threshold": threshold} if threshold is not None else {}),
                **({"fakes": fake_rows} if fake_rows else {}),
            ),
            public=True,
        )


async def run_analyzer(node: Any, cluster: Cluster) -> None:
    """Per round: receive the shuffled multiset, analyze; broadcast state or publish."""
    workload = load_workload(cluster)
    protocol = workload.protocol
    public: dict[str, Any] = {}
    invalid_total: dict[str, int] = {}
    released: list[Release] = []
    clients: dict[str, Any] = {}
    dropped: set[str] = set()
    shuffler = single(cluster, "shuffler").name
    planned_fakes = fake_counts(protocol, fakes_setting(cluster.params))
    fakes_stmt = None
    for rnd in range(protocol.n_rounds):
        receivers = [p for p in names_with_role(cluster, "client") + [shuffler] if p not in dropped]
        with beat_until_state(node, receivers, rnd, protocol.n_rounds):
            node.phase("deliver", rnd)
            payload = await node.recv(shuffler, "shuffled")
            try:
                shuffled, meta = load_batches(payload)
                if "withheld" in meta:
                    w = meta["withheld"]
                    raise refusal(
                        rnd,
                        f"the shuffler withheld the batch (noisy size {w['noisy_users']} below the "
                        f"threshold {w['threshold']} for min_batch {w['n_min']})",
                        released,
                    )
                validate_batches(protocol, shuffled, protocol.batch_specs_round(rnd, public))
                users = int(meta["users"])
                fakes = announced_fakes(meta)
                if fakes != planned_fakes:
                    raise ValueError(f"fakes {fakes} announced, the run sets {planned_fakes}")
            except (ValueError, KeyError, TypeError) as exc:
                if isinstance(exc, PrivacyRefusal):
                    raise
                raise PeerError(f"malformed shuffled batches from the shuffler: {exc}") from None
            for k, v in dict(meta.get("invalid", {})).items():
                invalid_total[f"{k}" if protocol.n_rounds == 1 else f"r{rnd}:{k}"] = int(v)
            clients[f"round {rnd}"] = meta.get("clients", {})
            dropped |= set(meta.get("dropped", []))
            if "threshold" in meta:  # the shuffler's noisy volume test is a release of its own
                released.append(threshold_release_entry(meta["threshold"], rnd))
            released += gate_round(protocol, rnd, public, shuffled, users, released, fakes)
            node.phase("analyze", rnd)
            result = to_jsonable(analyze_with_fakes(protocol, rnd, shuffled, public, fakes))
            if fakes:  # what the fakes give, next to the ledger (docs/privacy.md)
                fakes_stmt = fakes_statement(protocol, sum(fakes.values()), int(result["reports"]))
            if rnd < protocol.n_rounds - 1:
                node.phase("state", rnd + 1)
                state = codec.dumps(result)
                for peer in names_with_role(cluster, "client") + [shuffler]:
                    if peer not in dropped:
                        await node.send(peer, "state", state, public=True)
                public = result
            else:
                messages = {k: int(v.shape[0]) for k, v in shuffled.items()}
                extra = {"clients": clients, "dropped_clients": sorted(dropped)}
                publish_result(
                    node, cluster, workload, result, messages, invalid_total, extra, released,
                    {"fakes": fakes_stmt} if fakes_stmt is not None else None,
                )  # fmt: skip
