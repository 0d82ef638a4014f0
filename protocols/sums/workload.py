"""``sdp run rsum_rr | rsum_kr | rsum_rm | rsum_dsg``: sums of a normal over [0, 1].

Parameters: ``users`` (default 10,000), ``epsilon`` (0.9), ``delta`` (1e-6), ``data_seed`` (0);
``precision`` (rsum_rr: 10; rsum_dsg: default from n and eps), ``levels`` (rsum_kr: survey |
optimal | an integer), ``m`` (rsum_rm: 2 or 3, default 3), ``precisions`` (rsum_rm: optimized |
generic), ``gamma`` and ``delta_split`` (rsum_dsg).
"""

from __future__ import annotations

from typing import Any

from protocols.catalogue.data import normal_unit
from protocols.sums.rsum_dsg import RSumDSG
from protocols.sums.rsum_kr import RSumKR
from protocols.sums.rsum_rm import RSumRM
from protocols.sums.rsum_rr import RSumRR
from protocols.workloads import Workload, register


def build_sum(name: str, n: int, params: dict[str, Any]) -> Any:
    """The sum protocol ``name`` for n users."""
    eps = float(params.get("epsilon", 0.9))
    delta = float(params.get("delta", 1e-6))
    if name == "rsum_rr":
        return RSumRR(n, eps, delta, precision=int(params.get("precision", 10)))
    if name == "rsum_kr":
        return RSumKR(n, eps, delta, levels=params.get("levels", "survey"))
    if name == "rsum_rm":
        return RSumRM(
            n,
            eps,
            delta,
            m=int(params.get("m", 3)),
            precisions=str(params.get("precisions", "optimized")),
        )
    if name == "rsum_dsg":
        prec = params.get("precision")
        return RSumDSG(
            n,
            eps,
            gamma=float(params.get("gamma", 1.0)),
            delta_split=float(params.get("delta_split", 1e-12)),
            precision=None if prec is None else int(prec),
        )
    raise ValueError(f"unknown sum protocol {name!r}")


def sum_workload(name: str, params: dict[str, Any]) -> Workload:
    """Workload of sum protocol ``name`` (module docstring)."""
    n = int(params.get("users", 10_000))
    if n < 3:
        raise ValueError(f"{name}: users must be >= 3, got {n}")
    x = normal_unit(n, int(params.get("data_seed", 0)))
    protocol = build_sum(name, n, params)
    true_sum = float(x.sum())

    def report(est: dict[str, Any]) -> dict[str, Any]:
        err = float(est["sum"]) - true_sum
        return {
            "true_sum": true_sum,
            "error": err,
            "abs_error": abs(err),
            "expected_rmse": float(protocol.variance(x) ** 0.5),
            "messages_per_user": protocol.messages_per_user(),
            "privacy": protocol.privacy(),
        }

    return Workload(
        protocol, x.reshape(-1, 1), truth=lambda: {"sum": true_sum, "n": n}, report=report
    )


for _name in ("rsum_rr", "rsum_kr", "rsum_rm", "rsum_dsg"):
    register(_name)(lambda params, _n=_name: sum_workload(_n, params))
