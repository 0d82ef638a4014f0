"""Run plans: which parties a run has, who talks to whom, and each role's coroutine."""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from parties.runtime.cluster import Cluster, ClusterError, PartySpec, did_you_mean


class RunPlan(Protocol):
    """How a kind of run is laid out and executed."""

    def layout(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        """[(party name, role)] of a run with these launcher options."""

    def peers(self, cluster: Cluster, name: str) -> set[str]:
        """The parties ``name`` exchanges messages with."""

    async def run(self, node: Any, cluster: Cluster) -> None:
        """Execute the role of ``node`` (a ``parties.runtime.transport.Node``)."""


# protocol-specific plans first, then plans by shuffler backend
PROTOCOL_PLANS: dict[str, str] = {"txpub": "parties.txpub.plan:TxpubPlan"}
SHUFFLER_PLANS: dict[str, str] = {
    "trusted": "parties.trusted.plan:TrustedShufflePlan",
    "mixnet": "parties.mixnet.plan:MixnetPlan",
    "mpc": "parties.mpc_shuffle.plan:MpcPlan",
}


def _load(ref: str) -> RunPlan:
    mod, cls = ref.split(":")
    try:
        module = importlib.import_module(mod)
    except ModuleNotFoundError as exc:
        if exc.name == mod:
            raise ClusterError(f"run plan {ref} is not available in this build") from None
        raise
    return getattr(module, cls)()


def plan_for(protocol: str, shuffler: str) -> RunPlan:
    """The plan of a protocol/shuffler combination."""
    if protocol in PROTOCOL_PLANS:
        return _load(PROTOCOL_PLANS[protocol])
    if shuffler not in SHUFFLER_PLANS:
        raise ClusterError(f"unknown shuffler {shuffler!r}; known: {', '.join(SHUFFLER_PLANS)}")
    return _load(SHUFFLER_PLANS[shuffler])


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
