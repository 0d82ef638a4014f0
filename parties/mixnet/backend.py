"""The verifiable mix-net as a ``ShufflerBackend``: k mix servers (DKG, re-encrypt and prove
the shuffle, t-of-k threshold decryption); a dead mix server is tolerated by the dead-server
policy; the decryption threshold ``threshold`` defaults to ``--threshold``."""

from __future__ import annotations

from typing import Any, ClassVar

from parties.runtime.backend import ShufflerBackend
from protocols.params import Param

SERVER_ROLE = "mix-server"


class MixnetBackend(ShufflerBackend):
    name: ClassVar[str] = "mixnet"
    plan_ref: ClassVar[str] = "parties.mixnet.plan:MixnetPlan"
    server_roles: ClassVar[frozenset[str]] = frozenset({SERVER_ROLE})
    # a dead mix server (dead-server policy) or a client party that dropped out (the servers
    # agree to leave it out; the privacy gate decides whether the rest may be published)
    tolerated_roles: ClassVar[frozenset[str]] = frozenset({SERVER_ROLE, "client"})
    verify_check: ClassVar[str] = "parties.verify.mixnet:check_mixnet_run"
    runtime_params: ClassVar[dict[str, str]] = {"threshold": "threshold"}
    params: ClassVar[tuple[Param, ...]] = (
        # the range (2..mix servers) is checked by the mix-net plan, which knows the layout
        Param("threshold", "int", "mix-net decryption threshold t (2 <= t <= mix servers)"),
        Param(
            "verify_mixes",
            "bool",
            "refused by the mix-net plan: every server verifies the whole mix chain",
        ),
        Param("mix_workers", "int", "worker processes per mix server", low=1),
    )

    def check_params(self, params: dict[str, Any], layout: dict[str, Any]) -> None:
        self.plan().check_params(params, layout)


BACKEND = MixnetBackend()
