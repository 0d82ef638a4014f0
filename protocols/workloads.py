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


# One line per protocol for ``sdp protocols``; a protocol registered without one is described by
# its factory's (or module's) docstring.
SUMMARIES: dict[str, str] = {
    "psrr-ss": "1-way marginals of categorical records, padded (attribute, value) messages (spec 000)",
    "srr-ms": "1-way marginals, users split into one group per attribute, k-RR (spec 000)",
    "arr-ss": "1-way marginals, RR over the union of the attribute domains (spec 000)",
    "sue-ms": "baseline: SUE in SRR-MS's attribute groups (spec 000)",
    "oue-ldp": "baseline: attribute sampling + OUE, pure local DP (spec 000)",
    "calm-psrr-ss": "k-way marginals and synthetic data through PSRR-SS (spec 000 section 8)",
    "calm-srr-ms": "k-way marginals and synthetic data through SRR-MS (spec 000 section 8)",
    "calm-arr-ss": "k-way marginals and synthetic data through ARR-SS (spec 000 section 8)",
    "hp-sdp": "histogram publication: OLH through the shuffle + POP, and baselines (spec 002)",
    "gfim": "top-k frequent items on set-valued data, two rounds (spec 003)",
    "ldpminer": "top-k frequent items, LDPMiner in the shuffle model (spec 003)",
    "splitmix-sum": "sum of values in a public range, Split-Mix multi-message (spec 004)",
    "grr": "k-ary randomized response on synthetic Zipf data",
    "cnt_rr": "counting bits: Boolean RR + amplification (spec 004 catalogue)",
    "cnt_2m": "counting bits: Balcer-Cheu two-message sum (spec 004 catalogue)",
    "cnt_sgm": "counting bits: robust pure counting over Split-Mix shares (spec 004 catalogue)",
    "cnt_bn": "counting bits: robust approximate counting, binomial noise bits (spec 004 catalogue)",
    "hist_kr": "histogram: shuffled k-RR (spec 004 catalogue)",
    "hist_mm": "histogram: one-hot + two-message counters (spec 004 catalogue)",
    "slh": "histogram: OLH through the shuffle, shuffle-optimal g (spec 004 catalogue)",
    "murs": "histogram: MURS, SLH plus fake reports (spec 004 catalogue)",
    "prhr": "histogram: PRHR, private-randomness Hadamard response (spec 004 catalogue)",
    "pucm": "histogram: PUCM, public-coin count-min (spec 004 catalogue)",
    "distinct": "distinct elements: re-randomized parities over XOR Split-Mix (spec 004 catalogue)",
    "hist_lwy": "histogram, almost a single message: one report plus a uniform blanket (spec 004 catalogue)",
    "range": "range counting over a hierarchical tree of frequency oracles (spec 004 catalogue)",
    "rsum_rr": "real sum: unary bits + Boolean RR (spec 004 catalogue)",
    "rsum_kr": "real sum: a single k-RR message (spec 004 catalogue)",
    "rsum_rm": "real sum: recursive m digits (spec 004 catalogue)",
    "rsum_dsg": "real sum: Split-Mix + distributed geometric noise (spec 004 catalogue)",
    "put": "uniformity tester (spec 004 catalogue)",
    "aut": "uniformity tester (spec 004 catalogue)",
}


def _load_all() -> None:
    import importlib

    for mod in WORKLOAD_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise


def registered() -> dict[str, WorkloadFactory]:
    """Every registered workload by name (importing every registering module)."""
    _load_all()
    return dict(sorted(WORKLOADS.items()))


def summary(name: str) -> str:
    """One line on protocol ``name``: :data:`SUMMARIES`, else its factory's or module's
    docstring's first line."""
    if name in SUMMARIES:
        return SUMMARIES[name]
    import sys

    fn = registered().get(name)
    if fn is None:
        return ""
    module = sys.modules.get(fn.__module__)
    for doc in (fn.__doc__, getattr(module, "__doc__", None)):
        if doc and doc.strip():
            return doc.strip().splitlines()[0]
    return ""


def get_workload(name: str, params: dict[str, Any]) -> Workload:
    """Build workload ``name``; raises KeyError with the list of known names."""
    _load_all()
    if name not in WORKLOADS:
        raise KeyError(f"unknown protocol {name!r}; known: {', '.join(sorted(WORKLOADS))}")
    return WORKLOADS[name](params)
