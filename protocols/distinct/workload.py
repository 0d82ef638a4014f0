"""``sdp run distinct``: the number of distinct values of a categorical column over [k].

The column: every user's value is drawn uniformly from a seeded random subset of [k] holding
``support`` k of its values (so the true count is at most support k, and below it when users are
few). Parameters: ``users`` (default 10,000), ``domain`` (k, default 256), ``support`` (0.5),
``epsilon`` (0.9), ``gamma`` (fraction of honest users, 1), ``delta_split`` (the XOR Split-Mix
statistical delta, 1e-12), ``word_bits`` (bits of [k] per message, 30), ``data_seed`` (0).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.distinct.parity import RobustDistinct
from protocols.rng import experiment_rng
from protocols.workloads import Workload, register


def distinct_column(n: int, k: int, support: float, seed: int) -> np.ndarray:
    """n values of [k], uniform on a seeded subset of round(support k) values."""
    if int(n) != n or n < 1 or int(k) != k or k < 2:
        raise ValueError(f"distinct column: need users >= 1 and domain >= 2, got {n}, {k}")
    if not 0 < support <= 1:
        raise ValueError(f"distinct column: support must lie in (0, 1], got {support}")
    rng = experiment_rng(seed, "distinct", "column", int(k))
    held = rng.permutation(int(k))[: max(1, round(support * k))]
    return held[rng.integers(0, held.size, size=int(n))].astype(np.int64)


def build_distinct(n: int, params: dict[str, Any]) -> RobustDistinct:
    """The protocol for n users from workload parameters."""
    return RobustDistinct(
        n,
        int(params.get("domain", 256)),
        float(params.get("epsilon", 0.9)),
        gamma=float(params.get("gamma", 1.0)),
        delta_split=float(params.get("delta_split", 1e-12)),
        word_bits=int(params.get("word_bits", 30)),
    )


@register("distinct")
def distinct_workload(params: dict[str, Any]) -> Workload:
    """Workload of ``sdp run distinct`` (module docstring)."""
    n = int(params.get("users", 10_000))
    protocol = build_distinct(n, params)
    values = distinct_column(
        n, protocol.k, float(params.get("support", 0.5)), int(params.get("data_seed", 0))
    )
    true_d = int(np.unique(values).size)

    def report(est: dict[str, Any]) -> dict[str, Any]:
        err = float(est["distinct"]) - true_d
        return {
            "true_distinct": true_d,
            "error": err,
            "abs_error": abs(err),
            "expected_rmse": float(np.sqrt(protocol.variance(true_d))),
            "sqrt_k": float(np.sqrt(protocol.k)),
            "messages_per_user": protocol.messages_per_user(),
            "privacy": protocol.privacy(),
        }

    return Workload(
        protocol,
        values.reshape(-1, 1),
        truth=lambda: {"distinct": true_d, "k": protocol.k, "n": n},
        report=report,
    )
