"""``sdp run distinct``: the number of distinct values of a categorical column over [k].

The column: every user's value is drawn uniformly from a seeded random subset of [k] holding
``support`` k of its values (so the true count is at most support k, and below it when users are
few). Parameters: ``users`` (default 10,000), ``domain`` (k, default 256), ``support`` (0.5),
``epsilon`` (the project default 1.0), ``gamma`` (fraction of honest users, 1), ``delta_split`` (the XOR Split-Mix
statistical delta, 1e-12), ``word_bits`` (bits of [k] per message, 30), ``data_seed`` (0).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.distinct.parity import RobustDistinct
from protocols.params import SURVEY_LEGACY, Values, declare
from protocols.rng import experiment_rng
from protocols.workloads import Workload, protocol_facts, register, scalar_error


def distinct_column(n: int, k: int, support: float, seed: int) -> np.ndarray:
    """n values of [k], uniform on a seeded subset of round(support k) values."""
    if int(n) != n or n < 1 or int(k) != k or k < 2:
        raise ValueError(f"distinct column: need users >= 1 and domain >= 2, got {n}, {k}")
    if not 0 < support <= 1:
        raise ValueError(f"distinct column: support must lie in (0, 1], got {support}")
    rng = experiment_rng(seed, "distinct", "column", int(k))
    held = rng.permutation(int(k))[: max(1, round(support * k))]
    return held[rng.integers(0, held.size, size=int(n))].astype(np.int64)


def build_distinct(n: int, p: Values) -> RobustDistinct:
    """The protocol for n users from workload parameters."""
    return RobustDistinct(
        n, p.domain, p.epsilon, gamma=p.gamma, delta_split=p.delta_split, word_bits=p.word_bits
    )


@register(
    "distinct",
    params=declare(
        users=10_000,
        domain=256,
        gamma=1.0,
        delta_split=1e-12,
        word_bits=30,
        support=0.5,
        legacy=SURVEY_LEGACY,
    ),
)
def distinct_workload(p: Values) -> Workload:
    """Workload of ``sdp run distinct`` (module docstring)."""
    n = p.users
    protocol = build_distinct(n, p)
    values = distinct_column(n, protocol.k, p.support, p.data_seed)
    true_d = int(np.unique(values).size)

    def report(est: dict[str, Any]) -> dict[str, Any]:
        return {
            "true_distinct": true_d,
            **scalar_error(est["distinct"], true_d),
            "expected_rmse": float(np.sqrt(protocol.variance(true_d))),
            "sqrt_k": float(np.sqrt(protocol.k)),
            **protocol_facts(protocol),
        }

    return Workload(
        protocol,
        values.reshape(-1, 1),
        truth=lambda: {"distinct": true_d, "k": protocol.k, "n": n},
        report=report,
    )
