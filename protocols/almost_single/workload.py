"""``sdp run hist_lwy``: the histogram of a discretized normal over [d] (as ``hist_kr``) by LWY's
almost-single-message protocol.

Parameters: ``users`` (default 10,000), ``domain`` (d, default 64), ``epsilon`` (the project default 1.0), ``delta``
(1e-6), ``hash_exponent`` (c of the hash range n/ln(n)^c, default 2), ``gamma`` (honest
fraction, 1), ``data_seed`` (0).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.almost_single.lwy import HistLWY
from protocols.catalogue.data import normal_categorical
from protocols.params import SURVEY_LEGACY, Values, declare
from protocols.workloads import Workload, count_errors, protocol_facts, register


@register(
    "hist_lwy",
    params=declare(
        users=10_000, domain=64, delta=1e-6, hash_exponent=2.0, gamma=1.0, legacy=SURVEY_LEGACY
    ),
)
def lwy_workload(p: Values) -> Workload:
    """Workload of ``sdp run hist_lwy`` (module docstring)."""
    n, d = p.users, p.domain
    protocol = HistLWY(d, n, p.epsilon, p.delta, c=p.hash_exponent, gamma=p.gamma)
    values = normal_categorical(n, d, p.data_seed)
    truth = np.bincount(values, minlength=d)

    def report(est: dict[str, Any]) -> dict[str, Any]:
        return {
            **count_errors(est["counts"], truth),
            "expected_rmse": float(np.sqrt(np.mean(protocol.count_variance(truth)))),
            **protocol_facts(protocol),
        }

    return Workload(
        protocol,
        values.reshape(-1, 1),
        truth=lambda: {"counts": truth.tolist(), "n": n, "d": d},
        report=report,
    )
