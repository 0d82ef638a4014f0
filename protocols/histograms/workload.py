"""``sdp run hist_kr | hist_mm | slh | murs``: histograms of a discretized normal over [d].

Parameters (declared in :data:`PARAMS`): ``users`` (default 10,000), ``domain`` (d, default 64),
``epsilon`` (the project default 1.0), ``delta`` (1e-6), ``data_seed`` (0); ``bound`` (hist_kr: theorem4 | vr), ``accounting`` (hist_mm: paper |
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
from protocols.params import SURVEY_LEGACY, Values, declare
from protocols.workloads import Workload, count_errors, protocol_facts, register_family

# The histogram workload's data parameters (prhr and pucm share them).
DATA_DEFAULTS = {"users": 10_000, "domain": 64, "delta": 1e-6, "legacy": SURVEY_LEGACY}
PARAMS = {
    "hist_kr": declare(**DATA_DEFAULTS, bound="theorem4"),
    "hist_mm": declare(**DATA_DEFAULTS, accounting="paper"),
    "slh": declare(**DATA_DEFAULTS),
    "murs": declare(**DATA_DEFAULTS, fake_rate=0.01),
}


def build_histogram(name: str, d: int, n: int, p: Values) -> Any:
    """The histogram protocol ``name`` for n users over [d]."""
    eps, delta = p.epsilon, p.delta
    if name == "hist_kr":
        return HistKR(d, n, eps, delta, bound=p.bound)
    if name == "hist_mm":
        return HistMM(d, n, eps, delta, accounting=p.accounting)
    if name == "slh":
        return SLH(d, n, eps, delta)
    if name == "murs":
        return SurveyMURS(d, n, eps, delta, fake_rate=p.fake_rate)
    raise ValueError(f"unknown histogram protocol {name!r}")


def histogram_workload(name: str, p: Values, build: Callable[..., Any] | None = None) -> Workload:
    """Workload of histogram protocol ``name`` (module docstring; ``build(name, d, n, p)``
    builds the protocol, default :func:`build_histogram`)."""
    n, d = p.users, p.domain
    values = normal_categorical(n, d, p.data_seed)
    protocol = (build or build_histogram)(name, d, n, p)
    records = murs_records(values, protocol.fakes) if name == "murs" else values.reshape(-1, 1)
    truth = np.bincount(values, minlength=d)

    def report(est: dict[str, Any]) -> dict[str, Any]:
        return {**count_errors(est["counts"], truth), **protocol_facts(protocol)}

    return Workload(
        protocol,
        records,
        truth=lambda: {"counts": truth.tolist(), "n": n, "d": d},
        report=report,
    )


register_family(PARAMS, histogram_workload)
