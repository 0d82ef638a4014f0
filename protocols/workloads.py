"""Runnable workloads: a protocol plus the records its simulated users hold.

``sdp run NAME`` looks NAME up here. Every client-population process calls the same factory
with the same parameters (deterministic from the seed) and takes its own slice of users, so the
records never travel over the wire. ``truth``/``report`` are evaluation only: they are computed by
the launcher, never by a party of the protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from protocols.base import ShuffleProtocol


@dataclass
class Workload:
    """A protocol and the records of all its users (one row or value per user)."""

    protocol: ShuffleProtocol
    records: np.ndarray
    truth: Callable[[], dict[str, Any]] = field(default=lambda: {})
    report: Callable[[dict[str, Any]], dict[str, Any]] = field(default=lambda est: {})
    # Post-processing of the published estimate done by the analyzer party after publication
    # (e.g. synthetic data from published marginals): (estimate, run_dir) -> files written.
    artifacts: Callable[[dict[str, Any], Path], list[str]] = field(default=lambda est, d: [])
    # In a run on its owners' data: what reading this party's file excluded before randomizing
    # (counts per kind and reason, no line numbers or values: ``DataReport.public()``).
    data_report: dict[str, Any] | None = None

    @property
    def n_users(self) -> int:
        return int(self.records.shape[0])

    def user_slice(self, index: int, count: int) -> slice:
        """The contiguous users held by client population ``index`` of ``count``."""
        n = self.n_users
        return slice(index * n // count, (index + 1) * n // count)


WorkloadFactory = Callable[[dict[str, Any]], Workload]
WORKLOADS: dict[str, WorkloadFactory] = {}


def register(name: str) -> Callable[[WorkloadFactory], WorkloadFactory]:
    """Decorator registering a workload factory under ``name``."""

    def deco(fn: WorkloadFactory) -> WorkloadFactory:
        WORKLOADS[name] = fn
        return fn

    return deco


# Modules that register workloads; imported lazily by ``get_workload``.
WORKLOAD_MODULES = [
    "protocols.grr.workload",
    "protocols.multidim.workloads",
    "protocols.summation.workload",
    "protocols.marginals.workload",
    "protocols.gfim.workload",
    "protocols.hp_sdp.workload",
    # the seed-004 catalogue: one workload module per family (each family imports the shared
    # base protocols.catalogue.common; the base never imports its users)
    "protocols.counting.workload",  # cnt_rr, cnt_2m, cnt_sgm, cnt_bn
    "protocols.histograms.workload",  # hist_kr, hist_mm, slh, murs
    "protocols.ranges.workload",  # range
    "protocols.sums.workload",  # rsum_rr, rsum_kr, rsum_rm, rsum_dsg
    "protocols.uniformity.workload",  # put, aut
    "protocols.distinct.workload",  # distinct
    "protocols.almost_single.workload",  # hist_lwy
    "protocols.almost_single.fe1_workload",  # fe1
    "protocols.heavy_hitters.workload",  # hhd
    "protocols.multi_freq.workload",  # prhr, pucm
]


def get_workload(name: str, params: dict[str, Any]) -> Workload:
    """Build workload ``name``; raises KeyError with the list of known names."""
    import importlib

    for mod in WORKLOAD_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
    if name not in WORKLOADS:
        raise KeyError(f"unknown protocol {name!r}; known: {', '.join(sorted(WORKLOADS))}")
    return WORKLOADS[name](params)
