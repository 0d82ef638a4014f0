"""``sdp run cnt_rr | cnt_2m | cnt_sgm | cnt_bn``: counting over synthetic Bernoulli(q) bits.

Parameters: ``users`` (default 10,000), ``epsilon`` (central, 0.9), ``delta`` (1e-6), ``q`` (0.5),
``data_seed`` (0); ``bound`` (cnt_rr: theorem3 | theorem4 | vr), ``accounting`` (cnt_2m, cnt_bn:
paper | exact), ``gamma`` (cnt_sgm, cnt_bn: fraction of honest users, default 1),
``delta_split`` (cnt_sgm: Split-Mix statistical delta, default 1e-12).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.catalogue.data import bernoulli_bits
from protocols.counting.cnt_2m import Cnt2M
from protocols.counting.cnt_bn import CntBN
from protocols.counting.cnt_rr import CntRR
from protocols.counting.cnt_sgm import CntSGM
from protocols.workloads import Workload, register


def build_counting(name: str, n: int, params: dict[str, Any]) -> Any:
    """The counting protocol ``name`` for n users from workload parameters."""
    eps = float(params.get("epsilon", 0.9))
    delta = float(params.get("delta", 1e-6))
    gamma = float(params.get("gamma", 1.0))
    if name == "cnt_rr":
        return CntRR(n, eps, delta, bound=str(params.get("bound", "theorem3")))
    if name == "cnt_2m":
        return Cnt2M(n, eps, delta, accounting=str(params.get("accounting", "paper")))
    if name == "cnt_sgm":
        return CntSGM(n, eps, gamma=gamma, delta_split=float(params.get("delta_split", 1e-12)))
    if name == "cnt_bn":
        return CntBN(n, eps, delta, gamma=gamma, accounting=str(params.get("accounting", "paper")))
    raise ValueError(f"unknown counting protocol {name!r}")


def counting_workload(name: str, params: dict[str, Any]) -> Workload:
    """Workload of counting protocol ``name`` (module docstring)."""
    n = int(params.get("users", 10_000))
    if n < 3:
        raise ValueError(f"{name}: users must be >= 3, got {n}")
    q = float(params.get("q", 0.5))
    bits = bernoulli_bits(n, q, int(params.get("data_seed", 0)))
    protocol = build_counting(name, n, params)
    true_count = int(bits.sum())

    def report(est: dict[str, Any]) -> dict[str, Any]:
        err = float(est["count"]) - true_count
        return {
            "true_count": true_count,
            "error": err,
            "abs_error": abs(err),
            "messages_per_user": protocol.messages_per_user(),
            "privacy": protocol.privacy(),
        }

    return Workload(
        protocol,
        bits.reshape(-1, 1).astype(np.int64),
        truth=lambda: {"count": true_count, "q": q, "n": n},
        report=report,
    )


for _name in ("cnt_rr", "cnt_2m", "cnt_sgm", "cnt_bn"):
    register(_name)(lambda params, _n=_name: counting_workload(_n, params))
