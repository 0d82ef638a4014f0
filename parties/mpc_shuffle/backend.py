"""The MPC secret-shared shuffler as a ``ShufflerBackend``: m servers running MPyC among
themselves on one extra port each (``mpc_ports``), over TLS with a key per server written into
its party directory (``mpc_tls``); clients send Shamir shares, one to each server."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from parties.runtime.backend import ShufflerBackend
from protocols.params import Param

SERVER_ROLE = "mpc-server"


class MpcBackend(ShufflerBackend):
    name: ClassVar[str] = "mpc"
    plan_ref: ClassVar[str] = "parties.mpc_shuffle.plan:MpcPlan"
    # "mpc": the server role's name in cost ledgers of early runs
    server_roles: ClassVar[frozenset[str]] = frozenset({SERVER_ROLE, "mpc"})
    verify_check: ClassVar[str] = "parties.verify.shuffle:check_mpc_run"
    params: ClassVar[tuple[Param, ...]] = (
        Param("mpc_tls", "bool", "MPC: per-server MPyC TLS keys (cluster runs)"),
        Param("mpc_ports", "str", "MPC: one MPyC port per server (list, 'p1,p2,p3' or a base)"),
        Param("mpc_threshold", "int", "MPC: Shamir threshold t < m/2 (default (m-1)//2)", low=0),
        Param(
            "mpc_multiset", "bool", "MPC malicious-abort: add the multiset check (log2 n rounds)"
        ),
        Param(
            "security",
            "choice",
            "MPC: malicious-abort (MACs, default) or the faster semi-honest mode",
            choices=("malicious-abort", "semi-honest"),
        ),
        Param(
            "mpc_mode",
            "choice",
            "MPC: open the shuffled rows or only their histogram",
            choices=("open", "histogram"),
        ),
    )

    def extra_ports(self, layout: dict[str, Any]) -> int:
        """One MPyC port per server."""
        return int(layout["servers"])

    def assign_ports(self, params: dict[str, Any], ports: list[int]) -> None:
        """MPyC's mesh on ``ports``, over TLS with a key per server (``prepare_party_dirs``)."""
        params["mpc_ports"] = list(ports)
        params["mpc_tls"] = True

    def prepare_party_dirs(self, cluster: Any, dirs: dict[str, Path]) -> None:
        self.plan().prepare_party_dirs(cluster, dirs)

    def check_workload(self, params: dict[str, Any], workload: Any) -> None:
        self.plan().check_workload(params, workload)


BACKEND = MpcBackend()
