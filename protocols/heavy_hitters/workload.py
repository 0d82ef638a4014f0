"""``sdp run hhd``: heavy hitters (HHD, :mod:`protocols.heavy_hitters.hhd`) of a Zipf stand-in
for the authors' query-log data (:func:`protocols.almost_single.data.zipf_items`: each user holds
one item, ranks scattered over the domain).

Parameters: ``users`` (default 20,000), ``domain`` (B, default 2^32), ``phi`` (threshold,
default 0.01), ``epsilon`` (1), ``delta`` (default 1/users^2, the authors' choice), ``zipf``
(exponent, 0.9), ``items`` (distinct items, default users / 10), ``gamma`` (1),
``data_seed`` (0). The report gives recall and precision against the items of frequency
>= phi n, as the authors' ``PrintInfo``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.almost_single.data import zipf_items
from protocols.heavy_hitters.hhd import HHD
from protocols.params import Values, declare
from protocols.workloads import Workload, register


def true_heavy_hitters(values: np.ndarray, phi: float) -> np.ndarray:
    """Items held by at least ceil(phi n) users (the authors' ``hhthreshold``)."""
    items, counts = np.unique(values, return_counts=True)
    return items[counts >= np.ceil(phi * values.size)]


def recall_precision(found: list[int], truth: np.ndarray) -> dict[str, float]:
    """The authors' rates in percent (100 when the denominator is empty)."""
    both = np.intersect1d(np.asarray(found, dtype=np.int64), truth).size
    return {
        "recall": 100.0 * both / truth.size if truth.size else 100.0,
        "precision": 100.0 * both / len(found) if found else 100.0,
    }


@register(
    "hhd", params=declare(users=20_000, domain=1 << 32, phi=0.01, gamma=1.0, items=None, zipf=0.9)
)
def hhd_workload(p: Values) -> Workload:
    """Workload of ``sdp run hhd`` (module docstring)."""
    n, B, phi = p.users, p.domain, p.phi
    protocol = HHD(B, n, p.epsilon, 1.0 / n**2 if p.delta is None else p.delta, phi, gamma=p.gamma)
    support = max(1, min(B, n // 10)) if p.items is None else p.items
    values = zipf_items(n, B, support, p.zipf, p.data_seed)
    truth = true_heavy_hitters(values, phi)

    def report(est: dict[str, Any]) -> dict[str, Any]:
        return {
            **recall_precision(est["heavy_hitters"], truth),
            "true_heavy_hitters": len(truth),
            "reported": len(est["heavy_hitters"]),
            "messages_per_user": protocol.messages_per_user(),
            "dummy_messages_per_user": protocol.p.rho * protocol.p.pf,
            "privacy": protocol.privacy(),
        }

    return Workload(
        protocol,
        values.reshape(-1, 1),
        truth=lambda: {"heavy_hitters": truth.tolist(), "n": n, "B": B, "phi": phi},
        report=report,
    )
