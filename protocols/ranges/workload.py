"""``sdp run range``: range counting over a discretized normal on [d].

Parameters (declared at registration): ``users`` (default 10,000), ``domain`` (d, default 64),
``epsilon`` (the project default 1.0), ``delta`` (1e-6), ``branching`` (2), ``oracle`` (krr | slh), ``bound`` (krr: theorem4 | vr), ``queries``
(number of random ranges answered, default 100), ``data_seed`` (0). The report gives the RMSE
over the random ranges and over all prefix ranges [0, j]. Theorem 4 needs about
14 b^L ln(2L/delta) L^2/eps^2 users for the deepest level; for small networked runs use a small
domain and ``bound=vr``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.catalogue.data import normal_categorical
from protocols.params import SURVEY_LEGACY, Values, declare
from protocols.ranges.matrix_mechanism import range_answers
from protocols.ranges.tree import RangeTree, random_ranges
from protocols.workloads import Workload, register


@register(
    "range",
    params=declare(
        users=10_000, domain=64, delta=1e-6, branching=2, oracle="krr", bound="theorem4",
        queries=100, legacy=SURVEY_LEGACY,
    ),
)  # fmt: skip
def range_workload(p: Values) -> Workload:
    """Range-tree workload (module docstring)."""
    n, d, seed = p.users, p.domain, p.data_seed
    values = normal_categorical(n, d, seed)
    queries = random_ranges(d, p.queries, seed)
    protocol = RangeTree(
        d,
        n,
        p.epsilon,
        p.delta,
        branching=p.branching,
        oracle=p.oracle,
        queries=queries,
        bound=p.bound,
    )
    truth = np.bincount(values, minlength=d).astype(np.float64)
    prefixes = np.stack([np.zeros(d, dtype=np.int64), np.arange(d)], axis=1)

    def report(est: dict[str, Any]) -> dict[str, Any]:
        leaves = np.asarray(est["leaf_counts"], dtype=np.float64)
        err = np.asarray(est["answers"]) - range_answers(truth, queries)
        perr = range_answers(leaves, prefixes) - range_answers(truth, prefixes)
        return {
            "rmse_random_ranges": float(np.sqrt(np.mean(err**2))),
            "rmse_prefix_ranges": float(np.sqrt(np.mean(perr**2))),
            "messages_per_user": protocol.messages_per_user(),
            "privacy": protocol.privacy(),
        }

    return Workload(
        protocol,
        values.reshape(-1, 1),
        truth=lambda: {"counts": truth.tolist(), "ranges": queries.tolist()},
        report=report,
    )
