"""``sdp run fe1``: FE1 (:mod:`protocols.almost_single.fe1`) on a Zipf stand-in for the authors'
query-log data (:func:`protocols.almost_single.data.zipf_items`).

Parameters: ``users`` (default 10,000), ``domain`` (B, default 2^16), ``epsilon`` (1),
``delta`` (default 1/users^2, the authors' choice), ``hash_exponent`` (c, default 1),
``blanket`` (authors | exact), ``gamma`` (1), ``zipf`` (exponent, 1.1), ``items`` (distinct
items, default users / 2), ``data_seed`` (0). The report gives the authors' error quantiles:
the 50/90/99% points and the maximum of |f_y - f^_y| over all B items.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.almost_single.data import zipf_items
from protocols.almost_single.fe1 import FE1
from protocols.params import Values, declare
from protocols.workloads import Workload, register


def error_quantiles(est: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """The authors' CheckError: sorted |error| over all items, index round(p B) - 1."""
    err = np.sort(np.abs(np.asarray(est, dtype=np.float64) - truth))
    at = lambda p: float(err[max(0, int(round(p * err.size)) - 1)])  # noqa: E731
    return {"p50": at(0.50), "p90": at(0.90), "p99": at(0.99), "linf": float(err[-1])}


@register(
    "fe1",
    params=declare(
        users=10_000, domain=1 << 16, hash_exponent=1.0, blanket="authors", gamma=1.0, items=None,
        zipf=1.1,
    ),
)  # fmt: skip
def fe1_workload(p: Values) -> Workload:
    """Workload of ``sdp run fe1`` (module docstring)."""
    n, B = p.users, p.domain
    delta = 1.0 / n**2 if p.delta is None else p.delta
    protocol = FE1(B, n, p.epsilon, delta, c=p.hash_exponent, blanket=p.blanket, gamma=p.gamma)
    support = max(1, min(B, n // 2)) if p.items is None else p.items
    values = zipf_items(n, B, support, p.zipf, p.data_seed)
    truth = np.bincount(values, minlength=B)

    def report(est: dict[str, Any]) -> dict[str, Any]:
        counts = np.asarray(est["counts"], dtype=np.float64)
        return {
            **error_quantiles(counts, truth),
            "expected_rmse": float(np.sqrt(np.mean(protocol.count_variance(truth)))),
            "messages_per_user": protocol.messages_per_user(),
            "privacy": protocol.privacy(),
        }

    return Workload(
        protocol,
        values.reshape(-1, 1),
        truth=lambda: {"counts": truth.tolist(), "n": n, "B": B},
        report=report,
    )
