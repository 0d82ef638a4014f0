"""Uniform fake messages as a run option (``fakes=F``): who can remove them, how, what they give.

The trusted shuffler adds F uniform rows to the batch of a single-message categorical protocol
(k-RR family: ``grr``, ``hist_kr``, ``cnt_rr``) after the users randomized and before it
shuffles, and announces F in its signed message to the analyzer. Such a protocol describes its
reports with :class:`UniformFakeReports` (``ShuffleProtocol.uniform_fake_reports``) and builds its
estimate from a histogram of reports (``estimate_from_counts``), which its own ``analyze`` also
calls. Every analyzer (``simulate``, the networked analyzer party, ``sdp verify``'s re-run) goes
through :func:`analyze_with_fakes`: subtract the fakes' expected count F/k from every category
and F from the number of reports, then estimate. The estimators are linear in the counts for a
fixed number of reports and F is known exactly, so the estimate stays unbiased (only its
variance grows, by the fakes' multinomial spread). The privacy gate counts the users' reports
only (:func:`without_fakes`).

Accounting (:func:`fakes_statement`). The users' (eps, delta) in the ledger is unchanged: the
fakes are post-processing of the shuffled batch by the shuffler, and they are not credited. The
statement adds what the fakes give when every other user colludes with the analyzer: the F
fakes are then the whole privacy blanket of the target's report (MURS), eps_c =
``blanket_epsilon_with_fakes(eps_l, k, 1, F, delta)`` = sqrt(14 k ln(2/delta)/F), valid only where
Theorem 4 holds (eps_c <= 1, i.e. F >= 14 k ln(2/delta)); otherwise it says "not valid" and the
condition. It also gives, for information, the blanket bound crediting the fakes next to the
honest users' reports. Both assume the shuffler is honest (it knows which rows are fakes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from protocols.accountant.balle import blanket_mass_needed
from protocols.defences.fake_messages import blanket_epsilon_with_fakes, uniform_fakes

FAKES_PARAM = "fakes"  # run parameter: uniform fake rows the trusted shuffler adds per batch


@dataclass(frozen=True)
class UniformFakeReports:
    """A protocol whose analyzer can remove uniform fakes exactly: one report per user in
    ``batch``, one component in [0, k), randomized by k-RR at ``eps_local`` (delta: the run's)."""

    batch: str
    k: int
    eps_local: float
    delta: float


def fakes_setting(params: dict[str, Any]) -> int:
    """F from the run parameter ``fakes`` (0 when unset); ValueError unless an integer >= 0."""
    v = params.get(FAKES_PARAM)
    if v is None:
        return 0
    if isinstance(v, bool) or (isinstance(v, float) and not v.is_integer()):
        raise ValueError(f"fakes must be an integer >= 0, got {v!r}")
    try:
        f = int(v)
    except (TypeError, ValueError):
        raise ValueError(f"fakes must be an integer >= 0, got {v!r}") from None
    if f < 0:
        raise ValueError(f"fakes must be an integer >= 0, got {f}")
    return f


def fake_reports_of(protocol: Any) -> UniformFakeReports:
    """The protocol's descriptor, or ValueError (one line) when its analyzer cannot remove
    uniform fakes."""
    get = getattr(protocol, "uniform_fake_reports", None)
    desc = get() if get is not None else None
    if desc is None or getattr(protocol, "n_rounds", 1) != 1:
        raise ValueError(
            f"fakes: the analyzer of {protocol.name!r} cannot remove uniform fake messages "
            "(only single-message k-RR reports can: grr, hist_kr, cnt_rr); leave fakes unset"
        )
    return desc


def fake_counts(protocol: Any, fakes: int) -> dict[str, int]:
    """Fake rows per batch for F = ``fakes`` ({} when 0)."""
    return {fake_reports_of(protocol).batch: int(fakes)} if fakes else {}


def add_fakes(batches: dict[str, np.ndarray], specs: list, fakes: dict[str, int], rng: Any):  # noqa: ANN201
    """The shuffler's step: ``fakes[b]`` uniform rows appended to batch b (before the shuffle)."""
    by_name = {s.name: s for s in specs}
    out = dict(batches)
    for name, count in fakes.items():
        spec = by_name[name]
        rows = uniform_fakes(spec, count, rng)
        have = out.get(name)
        out[name] = rows if have is None else np.concatenate([np.asarray(have, np.int64), rows])
    return out


def announced_fakes(meta: dict[str, Any]) -> dict[str, int]:
    """Fake rows per batch announced in a shuffler's message (``fakes`` field; {} if absent)."""
    f = meta.get("fakes", {})
    if not isinstance(f, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in f.items()
    ):
        raise ValueError(f"malformed fake counts {f!r}")
    return {k: int(v) for k, v in f.items() if v}


def without_fakes(counts: dict[str, int], fakes: dict[str, int]) -> dict[str, int]:
    """Well-formed counts per batch with the announced fakes taken out (what the gate counts)."""
    out = dict(counts)
    for name, f in fakes.items():
        got = int(out.get(name, 0))
        if got < f:
            raise ValueError(f"batch {name!r}: {got} well-formed rows but {f} fakes announced")
        out[name] = got - f
    return out


def analyze_with_fakes(
    protocol: Any, round: int, shuffled: dict[str, np.ndarray], public: dict[str, Any],
    fakes: dict[str, int],
) -> dict[str, Any]:  # fmt: skip
    """The analyzer of every run: ``protocol.analyze_round`` without fakes; with fakes, the
    per-category counts minus F/k and the reports minus F, through the protocol's
    ``estimate_from_counts`` (the estimate gains ``fakes``: F)."""
    if not fakes:
        return protocol.analyze_round(round, shuffled, public)
    desc = fake_reports_of(protocol)
    if set(fakes) != {desc.batch}:
        raise ValueError(f"fakes announced for {sorted(fakes)}, expected [{desc.batch!r}]")
    f = int(fakes[desc.batch])
    hist, well_formed, invalid = report_histogram(desc, shuffled.get(desc.batch))
    counts = hist - f / desc.k
    reports = well_formed - f
    if reports < 1:
        raise ValueError(f"{well_formed} well-formed reports for {f} fakes: no user's report")
    est = protocol.estimate_from_counts(counts, reports, invalid)
    return {**est, "fakes": f}


def report_histogram(desc: UniformFakeReports, arr: Any) -> tuple[np.ndarray, int, int]:
    """(float counts per category in [0, k), well-formed reports, malformed rows) of the
    ``desc.batch`` batch ``arr``; ValueError when the batch is missing."""
    if arr is None:
        raise ValueError(f"no {desc.batch!r} batch received")
    v = np.asarray(arr).reshape(-1)
    ok = (v >= 0) & (v < desc.k)
    counts = np.bincount(v[ok], minlength=desc.k).astype(np.float64)
    return counts, int(ok.sum()), int((~ok).sum())


def _blanket(eps_l: float, k: int, n: int, f: int, delta: float, who: str) -> dict[str, Any]:
    eps = blanket_epsilon_with_fakes(eps_l, k, n, f, delta)
    need = math.ceil(
        blanket_mass_needed(1.0, delta) * k - (n - 1) * k / (math.exp(min(eps_l, 700)) + k - 1)
    )
    cond = (
        f"Balle et al. Thm 4 needs eps_c <= 1: (n - 1)/(e^eps_l + k - 1) + F/k >= 14 ln(2/delta) "
        f"with n = {n}, i.e. F >= {max(need, 0)} fakes ({f} added)"
    )
    return {
        "eps": eps,
        "delta": float(delta),
        "valid": eps is not None,
        "bound": f"blanket_epsilon_with_fakes(eps_l, k={k}, n={n}, F={f}, delta) ({who})",
        "condition": cond if eps is not None else f"not valid: {cond}",
    }


def fakes_statement(protocol: Any, fakes: int, reports: int) -> dict[str, Any]:
    """``privacy.fakes`` of a run with F = ``fakes`` uniform fakes and ``reports`` users' reports
    (module docstring): re-derived by ``sdp verify`` from the count the shuffler signed."""
    d = fake_reports_of(protocol)
    f = int(fakes)
    return {
        "count": f,
        "batch": d.batch,
        "added_by": "the trusted shuffler, after the users randomized and before shuffling, "
        f"uniform over [0, {d.k}); the analyzer subtracts F/{d.k} per category (unbiased)",
        "ledger": "unchanged: the ledger's (eps, delta) is the users' guarantee as accounted "
        "(the fakes are the shuffler's post-processing of the shuffled batch, not credited)",
        "k": d.k,
        "eps_local": float(d.eps_local),
        "all_other_users_collude": _blanket(
            d.eps_local, d.k, 1, f, d.delta, "every other user colludes with the analyzer: "
            "the honest shuffler's fakes are the whole blanket"
        ),
        "honest_users_and_fakes": _blanket(
            d.eps_local, d.k, max(1, int(reports)), f, d.delta,
            "for information: the users' reports and the fakes as one blanket",
        ),
    }  # fmt: skip
