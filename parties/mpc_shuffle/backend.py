"""The MPC secret-shared shuffler as a ``ShufflerBackend``: m servers running MPyC among
themselves on one extra port each (``mpc_ports``), over TLS with a key per server written into
its party directory (``mpc_tls``); clients send Shamir shares, one to each server."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from parties.runtime.backend import ShufflerBackend

SERVER_ROLE = "mpc-server"


class MpcBackend(ShufflerBackend):
    name: ClassVar[str] = "mpc"
    plan_ref: ClassVar[str] = "parties.mpc_shuffle.plan:MpcPlan"
    # "mpc": the server role's name in cost ledgers of early runs
    server_roles: ClassVar[frozenset[str]] = frozenset({SERVER_ROLE, "mpc"})
    verify_check: ClassVar[str] = "parties.verify.shuffle:check_mpc_run"

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
