"""``sdp run hist_kr | hist_mm | slh | murs``: histograms of a discretized normal over [d].

Parameters: ``users`` (default 10,000), ``domain`` (d, default 64), ``epsilon`` (0.9), ``delta``
(1e-6), ``data_seed`` (0); ``bound`` (hist_kr: theorem4 | vr), ``accounting`` (hist_mm: paper |
exact), ``fake_rate`` (murs, default 0.01).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from protocols.catalogue.data import normal_categorical
from protocols.histograms.hist_kr import HistKR
from protocols.histograms.hist_mm import HistMM
from protocols.histograms.murs import SurveyMURS, murs_records
from protocols.histograms.slh import SLH
from protocols.workloads import Workload, register


def build_histogram(name: str, d: int, n: int, params: dict[str, Any]) -> Any:
    """The histogram protocol ``name`` for n users over [d]."""
    eps = float(params.get("epsilon", 0.9))
    delta = float(params.get("delta", 1e-6))
    if name == "hist_kr":
        return HistKR(d, n, eps, delta, bound=str(params.get("bound", "theorem4")))
    if name == "hist_mm":
        return HistMM(d, n, eps, delta, accounting=str(params.get("accounting", "paper")))
    if name == "slh":
        return SLH(d, n, eps, delta)
    if name == "murs":
        return SurveyMURS(d, n, eps, delta, fake_rate=float(params.get("fake_rate", 0.01)))
    raise ValueError(f"unknown histogram protocol {name!r}")


def histogram_workload(
    name: str, params: dict[str, Any], build: Callable[..., Any] | None = None
) -> Workload:
    """Workload of histogram protocol ``name`` (module docstring; ``build(name, d, n, params)``
    builds the protocol, default :func:`build_histogram`)."""
    n = int(params.get("users", 10_000))
    d = int(params.get("domain", 64))
    values = normal_categorical(n, d, int(params.get("data_seed", 0)))
    protocol = (build or build_histogram)(name, d, n, params)
    records = murs_records(values, protocol.fakes) if name == "murs" else values.reshape(-1, 1)
    truth = np.bincount(values, minlength=d)

    def report(est: dict[str, Any]) -> dict[str, Any]:
        err = np.asarray(est["counts"], dtype=np.float64) - truth
        return {
            "rmse": float(np.sqrt(np.mean(err**2))),
            "max_abs_error": float(np.max(np.abs(err))),
            "messages_per_user": protocol.messages_per_user(),
            "privacy": protocol.privacy(),
        }

    return Workload(
        protocol,
        records,
        truth=lambda: {"counts": truth.tolist(), "n": n, "d": d},
        report=report,
    )


for _name in ("hist_kr", "hist_mm", "slh", "murs"):
    register(_name)(lambda params, _n=_name: histogram_workload(_n, params))
