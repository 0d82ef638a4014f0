"""Run plans: which parties a run has, who talks to whom, and each role's coroutine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from parties.runtime.backend import ShufflerBackend, backend, load_plan, shuffler_names
from parties.runtime.cluster import Cluster, ClusterError, PartySpec, did_you_mean


class RunPlan(Protocol):
    """How a kind of run is laid out and executed."""

    def layout(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        """[(party name, role)] of a run with these launcher options."""

    def peers(self, cluster: Cluster, name: str) -> set[str]:
        """The parties ``name`` exchanges messages with."""

    async def run(self, node: Any, cluster: Cluster) -> None:
        """Execute the role of ``node`` (a ``parties.runtime.transport.Node``)."""


# protocol-specific plans (their own parties, no shuffler); every other run is laid out by
# its shuffler's backend (``parties.runtime.backend``)
PROTOCOL_PLANS: dict[str, str] = {"txpub": "parties.txpub.plan:TxpubPlan"}


def backend_of(protocol: str, shuffler: str) -> ShufflerBackend | None:
    """The shuffler backend of a run; None for a protocol-specific plan (txpub)."""
    return None if protocol in PROTOCOL_PLANS else backend(shuffler)


def plan_for(protocol: str, shuffler: str) -> RunPlan:
    """The plan of a protocol/shuffler combination."""
    b = backend_of(protocol, shuffler)
    return load_plan(PROTOCOL_PLANS[protocol]) if b is None else b.plan()


def extra_ports(protocol: str, shuffler: str, layout: dict[str, Any]) -> int:
    """Ports a run needs beyond one per party (its backend's, e.g. the MPC servers' mesh)."""
    b = backend_of(protocol, shuffler)
    return 0 if b is None else b.extra_ports(layout)


def tolerated_roles(protocol: str, shuffler: str) -> frozenset[str]:
    """Roles whose failure a published run tolerates (none for a protocol-specific plan)."""
    b = backend_of(protocol, shuffler) if shuffler in shuffler_names() else None
    return frozenset() if b is None else b.tolerated_roles


def prepare_party_dirs(cluster: Cluster, dirs: dict[str, Path]) -> None:
    """What the run's backend writes into the party directories (e.g. MPC TLS keys)."""
    b = backend_of(cluster.protocol, cluster.shuffler)
    if b is not None:
        b.prepare_party_dirs(cluster, dirs)


def get_plan(cluster: Cluster) -> RunPlan:
    """The plan of a cluster's run."""
    return plan_for(cluster.protocol, cluster.shuffler)


LAYOUT_PROBE = {"clients": 2, "mix_servers": 3, "threshold": 2, "servers": 3}


def check_roles(cluster: Cluster, plan: RunPlan | None = None) -> None:
    """Every party's role is one of the plan's (ClusterError with "did you mean" otherwise), so
    a typo such as ``mix-sever`` is caught when the cluster is written, not on a host later."""
    plan = plan or plan_for(cluster.protocol, cluster.shuffler)
    roles = sorted({role for _, role in plan.layout(dict(LAYOUT_PROBE))})
    for p in cluster.parties:
        if p.role not in roles:
            what = cluster.protocol if cluster.protocol in PROTOCOL_PLANS else cluster.shuffler
            raise ClusterError(
                f"party {p.name!r}: role {p.role!r} is not a role of a {what} run"
                f"{did_you_mean(p.role, roles)} (roles: {', '.join(roles)})"
            )


def names_with_role(cluster: Cluster, role: str) -> list[str]:
    return [p.name for p in cluster.by_role(role)]


def single(cluster: Cluster, role: str) -> PartySpec:
    """The one party with ``role``; ClusterError otherwise."""
    ps = cluster.by_role(role)
    if len(ps) != 1:
        raise ClusterError(f"the run needs exactly one party with role {role!r}, found {len(ps)}")
    return ps[0]
