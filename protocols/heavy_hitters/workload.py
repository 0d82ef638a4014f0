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


@register("hhd")
def hhd_workload(params: dict[str, Any]) -> Workload:
    """Workload of ``sdp run hhd`` (module docstring)."""
    n = int(params.get("users", 20_000))
    B = int(params.get("domain", 1 << 32))
    phi = float(params.get("phi", 0.01))
    delta = params.get("delta")
    protocol = HHD(
        B,
        n,
        float(params.get("epsilon", 1.0)),
        1.0 / n**2 if delta is None else float(delta),
        phi,
        gamma=float(params.get("gamma", 1.0)),
    )
    support = int(params.get("items", max(1, min(B, n // 10))))
    values = zipf_items(
        n, B, support, float(params.get("zipf", 0.9)), int(params.get("data_seed", 0))
    )
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
