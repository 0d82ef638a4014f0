"""Runnable workloads: a protocol plus the records its simulated users hold.

``sdp run NAME`` looks NAME up here. Every client-population process calls the same factory
with the same parameters (deterministic from the seed) and takes its own slice of users, so the
records never travel over the wire. ``truth``/``report`` are evaluation only: they are computed by
the launcher, never by a party of the protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from protocols.base import ShuffleProtocol
from protocols.params import Declared, Param, Values


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
ValuesFactory = Callable[[Values], Workload]
# Every workload by name: a callable of the run's raw parameters (it reads them through the
# workload's declaration, then calls the factory with typed values).
WORKLOADS: dict[str, WorkloadFactory] = {}
# The declared parameters of every workload, by name (``register(NAME, params=...)``).
DECLARED: dict[str, Declared] = {}


def register(name: str, *, params: Declared) -> Callable[[ValuesFactory], ValuesFactory]:
    """Decorator registering a workload factory under ``name`` with its declared parameters:
    the factory is called with ``params.read(run parameters)`` (typed values, the declared
    defaults filled in; a parameter of another protocol or a bad value is refused first)."""
    declared = params.named(name)

    def deco(fn: ValuesFactory) -> ValuesFactory:
        inner = getattr(fn, "func", fn)  # a functools.partial: the function it calls
        other = WORKLOADS.get(name)
        if other is not None and other.__module__ != inner.__module__:
            raise ValueError(f"workload {name!r} is registered twice ({inner.__module__})")
        DECLARED[name] = declared

        def build(run_params: dict[str, Any]) -> Workload:
            return fn(declared.read(run_params))

        build.__doc__, build.__module__ = inner.__doc__, inner.__module__
        WORKLOADS[name] = build
        return fn

    return deco


def register_family(
    declared: Mapping[str, Declared], factory: Callable[[str, Values], Workload]
) -> None:
    """Register ``factory(name, values)`` under every name of ``declared`` (a family of
    workloads built by one factory), each with its own declaration."""
    for name, d in declared.items():
        register(name, params=d)(partial(factory, name))


def protocol_facts(protocol: Any) -> dict[str, Any]:
    """The report lines every catalogue workload gives: messages per user and the statement."""
    return {"messages_per_user": protocol.messages_per_user(), "privacy": protocol.privacy()}


def scalar_error(estimate: float, truth: float) -> dict[str, float]:
    """Error and absolute error of a one-number estimate (evaluation only)."""
    err = float(estimate) - float(truth)
    return {"error": err, "abs_error": abs(err)}


def count_errors(estimate: Any, truth: np.ndarray) -> dict[str, float]:
    """RMSE and largest absolute error of estimated counts against the true ones."""
    err = np.asarray(estimate, dtype=np.float64) - truth
    return {"rmse": float(np.sqrt(np.mean(err**2))), "max_abs_error": float(np.max(np.abs(err)))}


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


def workload_modules() -> list[str]:
    """The modules that register workloads: every ``workload*`` (or ``*_workload``) module of a
    sub-package of :mod:`protocols`, found by scanning the package (no list to keep)."""
    import pkgutil

    import protocols

    found = []
    for pkg in pkgutil.iter_modules(protocols.__path__):
        if not pkg.ispkg:
            continue
        path = [str(Path(protocols.__path__[0]) / pkg.name)]
        for mod in pkgutil.iter_modules(path):
            if not mod.ispkg and "workload" in mod.name:
                found.append(f"protocols.{pkg.name}.{mod.name}")
    return sorted(found)


def _load_all() -> None:
    import importlib

    for mod in workload_modules():
        importlib.import_module(mod)


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


def recorded_workload(name: str, params: dict[str, Any]) -> Workload:
    """Build workload ``name`` from a run's record (its cluster file's parameters), reading a
    record made before a parameter was pinned with the default of its time
    (:meth:`Declared.recorded`): what the parties and the verifier rebuild."""
    d = declaration(name)
    return get_workload(name, params if d is None else d.recorded(params))


def declaration(name: str) -> Declared | None:
    """The declared parameters of workload ``name`` (None: not a workload, e.g. txpub's plan)."""
    _load_all()
    return DECLARED.get(name)


def check_params(
    protocol: str,
    params: Mapping[str, Any],
    runtime: Mapping[str, Param] | None = None,
    options: Iterable[str] = (),
) -> None:
    """Refuse unknown keys (with the closest names and the names ``protocol`` takes) and bad
    values (:meth:`Declared.check`); ``runtime`` holds the parameters the parties read (any
    protocol takes them). A protocol that is not a workload (txpub) validates its own plan."""
    d = declaration(protocol)
    if d is not None:
        d.check(params, runtime, options)


def help_table(protocol: str, runtime: Mapping[str, Param] | None = None) -> str:
    """The parameters of ``protocol`` as text lines for ``sdp run NAME --help``."""
    d = declaration(protocol)
    return "" if d is None else d.help(runtime)


def pinned_defaults(protocol: str) -> dict[str, Any]:
    """Defaults written into a run's parameters, so that its record names the model that ran
    even if a later version changed the default (the verifier rebuilds from the parameters)."""
    d = declaration(protocol)
    return {} if d is None else d.pinned_defaults()
