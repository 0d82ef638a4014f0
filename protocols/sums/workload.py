"""``sdp run rsum_rr | rsum_kr | rsum_rm | rsum_dsg``: sums of a normal over [0, 1].

Parameters (declared in :data:`PARAMS`): ``users`` (default 10,000), ``epsilon`` (the project
default 1.0), ``delta`` (1e-6), ``data_seed`` (0);
``precision`` (rsum_rr: 10; rsum_dsg: default from n and eps), ``levels`` (rsum_kr: survey |
optimal | an integer), ``m`` (rsum_rm: 2 or 3, default 3), ``precisions`` (rsum_rm: optimized |
generic), ``gamma`` and ``delta_split`` (rsum_dsg).
"""

from __future__ import annotations

from typing import Any

from protocols.catalogue.data import normal_unit
from protocols.params import SURVEY_LEGACY, Values, declare
from protocols.sums.rsum_dsg import RSumDSG
from protocols.sums.rsum_kr import RSumKR
from protocols.sums.rsum_rm import RSumRM
from protocols.sums.rsum_rr import RSumRR
from protocols.workloads import Workload, protocol_facts, register_family, scalar_error

_COMMON = {"users": 10_000, "delta": 1e-6, "legacy": SURVEY_LEGACY}
PARAMS = {
    "rsum_rr": declare(**_COMMON, precision=10),
    "rsum_kr": declare(**_COMMON, levels="survey"),
    "rsum_rm": declare(**_COMMON, m=3, precisions="optimized"),
    "rsum_dsg": declare(**_COMMON, gamma=1.0, delta_split=1e-12, precision=None),
}


def build_sum(name: str, n: int, p: Values) -> Any:
    """The sum protocol ``name`` for n users."""
    eps, delta = p.epsilon, p.delta
    if name == "rsum_rr":
        return RSumRR(n, eps, delta, precision=p.precision)
    if name == "rsum_kr":
        return RSumKR(n, eps, delta, levels=p.levels)
    if name == "rsum_rm":
        return RSumRM(n, eps, delta, m=p.m, precisions=p.precisions)
    if name == "rsum_dsg":
        return RSumDSG(n, eps, gamma=p.gamma, delta_split=p.delta_split, precision=p.precision)
    raise ValueError(f"unknown sum protocol {name!r}")


def sum_workload(name: str, p: Values) -> Workload:
    """Workload of sum protocol ``name`` (module docstring)."""
    n = p.users
    if n < 3:
        raise ValueError(f"{name}: users must be >= 3, got {n}")
    x = normal_unit(n, p.data_seed)
    protocol = build_sum(name, n, p)
    true_sum = float(x.sum())

    def report(est: dict[str, Any]) -> dict[str, Any]:
        return {
            "true_sum": true_sum,
            **scalar_error(est["sum"], true_sum),
            "expected_rmse": float(protocol.variance(x) ** 0.5),
            **protocol_facts(protocol),
        }

    return Workload(
        protocol, x.reshape(-1, 1), truth=lambda: {"sum": true_sum, "n": n}, report=report
    )


register_family(PARAMS, sum_workload)
