"""The methods of the survey's experiment (section 7) under their lower-case names, and one run.

A shuffle method runs the real encoder for all n users, passes the well-formed counts through
the privacy gate (:func:`protocols.privacy.ledger.gate`, so every run is accounted) and times the real
analyzer on the encoded batches. The trusted shuffler's permutation is skipped: every analyzer
here is a symmetric function of each batch (``tests/test_survey_*`` checks this), so the
estimate and the analyzer's work are those of a shuffled run. Hist_MM's label multiset (d + 1
labels per user) is encoded and counted in blocks of users (its analyzer is the label count plus
the truncated estimate; the count is accumulated block by block and timed). Baselines: LDP
(randomizer + estimator, no shuffler; the "analyzer" time is the estimator's) and central DP
(the curator's noisy statistic).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from protocols.almost_single.lwy import HistLWY
from protocols.base import count_valid
from protocols.catalogue.data import bernoulli_bits, normal_categorical, normal_unit
from protocols.counting import baselines as cb
from protocols.counting.cnt_2m import Cnt2M
from protocols.counting.cnt_2m import expected_mse as cnt_2m_expected_mse
from protocols.counting.cnt_bn import CntBN
from protocols.counting.cnt_rr import CntRR
from protocols.counting.cnt_sgm import CntSGM
from protocols.histograms import baselines as hb
from protocols.histograms.hist_kr import HistKR
from protocols.histograms.hist_mm import HistMM, one_hot_two_message
from protocols.histograms.murs import SurveyMURS, murs_records
from protocols.histograms.slh import SLH
from protocols.multi_freq.experiment import run_multi_freq
from protocols.multi_freq.prhr import PRHR
from protocols.multi_freq.pucm import PUCM
from protocols.privacy.ledger import USERS, gate
from protocols.sums import baselines as sb
from protocols.sums.rsum_dsg import RSumDSG
from protocols.sums.rsum_kr import RSumKR
from protocols.sums.rsum_rm import RSumRM
from protocols.sums.rsum_rr import RSumRR

PROBLEMS = ("count", "hist", "sum")


@dataclass(frozen=True)
class Setting:
    """One experimental point."""

    n: int
    eps: float
    delta: float = 1e-6
    q: float = 0.5
    d: int = 64
    data_seed: int = 0


@dataclass
class Outcome:
    """One repetition of one method."""

    error: np.ndarray  # estimate - truth (scalar or one per bin)
    analyzer_s: float
    messages_per_user: float
    bits_per_user: float
    eps: float | None = None  # the gate's accounted guarantee
    delta: float | None = None


@dataclass(frozen=True)
class Method:
    """A method of the comparison."""

    name: str
    problem: str
    kind: str  # "shuffle" | "ldp" | "cdp"
    label: str
    build: Callable[[Setting], Any] | None = None  # shuffle protocols
    baseline: Callable[[np.ndarray, Setting, np.random.Generator], np.ndarray] | None = None


def data_for(problem: str, s: Setting) -> np.ndarray:
    """The survey's synthetic data of a problem at a setting (fixed by the data seed)."""
    if problem == "count":
        return bernoulli_bits(s.n, s.q, s.data_seed)
    if problem == "hist":
        return normal_categorical(s.n, s.d, s.data_seed)
    return normal_unit(s.n, s.data_seed)


def truth_of(problem: str, data: np.ndarray, s: Setting) -> np.ndarray:
    if problem == "count":
        return np.array([float(data.sum())])
    if problem == "hist":
        return np.bincount(data, minlength=s.d).astype(np.float64)
    return np.array([float(data.sum())])


def _estimate(problem: str, est: dict[str, Any]) -> np.ndarray:
    key = {"count": "count", "hist": "counts", "sum": "sum"}[problem]
    return np.atleast_1d(np.asarray(est[key], dtype=np.float64))


def _records(method: Method, proto: Any, data: np.ndarray) -> np.ndarray:
    if method.name == "murs":
        return murs_records(data, proto.fakes)
    return data.reshape(-1, 1)


def _run_hist_mm(proto: HistMM, data: np.ndarray, rng: np.random.Generator) -> tuple[Any, ...]:
    counts = np.zeros(proto.d, dtype=np.int64)
    rows, spent = 0, 0.0
    block = max(1, (1 << 23) // proto.d)
    for s in range(0, data.size, block):
        labels = one_hot_two_message(data[s : s + block], proto.d, proto.p, rng)
        t0 = time.perf_counter()
        counts += np.bincount(labels, minlength=proto.d)
        spent += time.perf_counter() - t0
        rows += labels.size
    releases = gate(proto, 0, {"labels": rows, USERS: int(data.shape[0])})
    t0 = time.perf_counter()
    est = proto.estimate(counts)
    spent += time.perf_counter() - t0
    return est, spent, rows, releases


def run_once(method: Method, s: Setting, data: np.ndarray, rng: np.random.Generator) -> Outcome:
    """One repetition (module docstring); ValueError when the method is infeasible at s."""
    truth = truth_of(method.problem, data, s)
    if method.kind != "shuffle":
        assert method.baseline is not None
        t0 = time.perf_counter()
        est = np.atleast_1d(method.baseline(data, s, rng))
        dt = time.perf_counter() - t0
        bits = 1.0 if method.problem == "count" else float(np.ceil(np.log2(max(2, s.d))))
        if method.kind == "cdp":
            return Outcome(est - truth, dt, 0.0, 0.0, s.eps, 0.0)
        return Outcome(est - truth, dt, 1.0, bits, s.eps, 0.0)
    assert method.build is not None
    proto = method.build(s)
    if method.name == "hist_mm":
        est, dt, rows, rel = _run_hist_mm(proto, data, rng)
    elif isinstance(proto, (PRHR, PUCM)):
        est, dt, rows, rel = run_multi_freq(proto, data, rng)
    else:
        batches = proto.encode(_records(method, proto, data), rng)
        rows = sum(int(b.shape[0]) for b in batches.values())
        counts = count_valid(proto.batch_specs(), batches)
        counts[USERS] = int(np.asarray(data).shape[0])  # every simulated user submitted
        rel = gate(proto, 0, counts)
        t0 = time.perf_counter()
        out = proto.analyze(batches)
        dt = time.perf_counter() - t0
        est = _estimate(method.problem, out)
    per_message_bits = float(proto.bits_per_user()) / float(proto.messages_per_user())
    return Outcome(
        np.asarray(est, dtype=np.float64) - truth,
        dt,
        rows / s.n,
        per_message_bits * rows / s.n,
        rel[0].eps,
        rel[0].delta,
    )


def expected_rmse(method: Method, s: Setting, data: np.ndarray) -> float | None:
    """sqrt of the exact expected MSE where the estimator's variance is known (unbiased ones)."""
    try:
        if method.kind == "ldp":
            if method.problem == "count":
                return float(np.sqrt(cb.ldp_rr_variance(s.n, s.eps)))
            if method.problem == "hist":
                return float(
                    np.sqrt(np.mean(hb.ldp_krr_variance(truth_of("hist", data, s), s.eps)))
                )
            return float(np.sqrt(sb.harmony_variance(data, s.eps)))
        if method.kind == "cdp":
            if method.name == "count_cdp_geometric":
                return float(np.sqrt(cb.central_variances(s.eps)["geometric"]))
            if method.problem == "hist":
                return float(np.sqrt(hb.central_laplace_variance(s.eps)))
            return float(np.sqrt(2.0 / s.eps**2))
        assert method.build is not None
        p = method.build(s)
        if method.problem == "sum":
            return float(np.sqrt(p.variance(data)))
        if method.name == "cnt_rr":
            return float(np.sqrt(p.variance()))
        if method.name in ("cnt_sgm", "cnt_bn", "cnt_bn_exact"):
            return float(np.sqrt(p.noise_variance()))
        if method.name == "cnt_2m":  # biased by truncation: exact MSE
            return float(np.sqrt(cnt_2m_expected_mse(int(data.sum()), s.n, p.gamma)))
        if method.name == "hist_mm":
            return float(np.sqrt(np.mean(p.count_mse(truth_of("hist", data, s)))))
        if method.name in ("hist_kr", "hist_lwy", "prhr", "prhr_exact"):
            return float(np.sqrt(np.mean(p.count_variance(truth_of("hist", data, s)))))
        if method.name in ("slh", "murs"):
            f = truth_of("hist", data, s) / s.n
            return float(np.sqrt(np.mean(p.variance(f)))) * s.n
    except ValueError:
        return None
    return None


METHODS: dict[str, Method] = {
    m.name: m
    for m in [
        Method("cnt_rr", "count", "shuffle", "Cnt_RR", lambda s: CntRR(s.n, s.eps, s.delta)),
        Method("cnt_2m", "count", "shuffle", "Cnt_2M", lambda s: Cnt2M(s.n, s.eps, s.delta)),
        Method("cnt_sgm", "count", "shuffle", "Cnt_SGM", lambda s: CntSGM(s.n, s.eps)),
        Method("cnt_bn", "count", "shuffle", "Cnt_BN", lambda s: CntBN(s.n, s.eps, s.delta)),
        Method(
            "cnt_bn_exact",
            "count",
            "shuffle",
            "Cnt_BN (exact acct.)",
            lambda s: CntBN(s.n, s.eps, s.delta, accounting="exact"),
        ),
        Method(
            "count_ldp_rr",
            "count",
            "ldp",
            "LDP RR",
            baseline=lambda x, s, rng: np.array([cb.ldp_rr_count(x, s.eps, rng)]),
        ),
        Method(
            "count_cdp_laplace",
            "count",
            "cdp",
            "CDP Laplace",
            baseline=lambda x, s, rng: np.array([cb.central_laplace_count(x, s.eps, rng)]),
        ),
        Method(
            "count_cdp_geometric",
            "count",
            "cdp",
            "CDP geometric",
            baseline=lambda x, s, rng: np.array([cb.central_geometric_count(x, s.eps, rng)]),
        ),
        Method("hist_kr", "hist", "shuffle", "Hist_KR", lambda s: HistKR(s.d, s.n, s.eps, s.delta)),
        Method("hist_mm", "hist", "shuffle", "Hist_MM", lambda s: HistMM(s.d, s.n, s.eps, s.delta)),
        Method("slh", "hist", "shuffle", "SLH", lambda s: SLH(s.d, s.n, s.eps, s.delta)),
        Method("murs", "hist", "shuffle", "MURS", lambda s: SurveyMURS(s.d, s.n, s.eps, s.delta)),
        Method("prhr", "hist", "shuffle", "PRHR", lambda s: PRHR(s.d, s.n, s.eps, s.delta)),
        Method(
            "prhr_exact",
            "hist",
            "shuffle",
            "PRHR (exact rho)",
            lambda s: PRHR(s.d, s.n, s.eps, s.delta, rho="exact"),
        ),
        Method("pucm", "hist", "shuffle", "PUCM", lambda s: PUCM(s.d, s.n, s.eps, s.delta)),
        Method(
            "pucm_exact",
            "hist",
            "shuffle",
            "PUCM (exact gamma)",
            lambda s: PUCM(s.d, s.n, s.eps, s.delta, gamma="exact"),
        ),
        Method(
            "hist_lwy", "hist", "shuffle", "Hist_LWY", lambda s: HistLWY(s.d, s.n, s.eps, s.delta)
        ),
        Method(
            "hist_ldp_krr",
            "hist",
            "ldp",
            "LDP k-RR",
            baseline=lambda v, s, rng: hb.ldp_krr_counts(v, s.d, s.eps, rng),
        ),
        Method(
            "hist_cdp_laplace",
            "hist",
            "cdp",
            "CDP Laplace",
            baseline=lambda v, s, rng: hb.central_laplace_counts(v, s.d, s.eps, rng),
        ),
        Method("rsum_rr", "sum", "shuffle", "RSum_RR", lambda s: RSumRR(s.n, s.eps, s.delta)),
        Method("rsum_kr", "sum", "shuffle", "RSum_KR", lambda s: RSumKR(s.n, s.eps, s.delta)),
        Method("rsum_rm", "sum", "shuffle", "RSum_RM (m=3)", lambda s: RSumRM(s.n, s.eps, s.delta)),
        Method(
            "rsum_rm2",
            "sum",
            "shuffle",
            "RSum_RM (m=2)",
            lambda s: RSumRM(s.n, s.eps, s.delta, m=2),
        ),
        Method("rsum_dsg", "sum", "shuffle", "RSum_DSG", lambda s: RSumDSG(s.n, s.eps)),
        Method(
            "sum_ldp_harmony",
            "sum",
            "ldp",
            "LDP Harmony",
            baseline=lambda x, s, rng: np.array([sb.harmony_sum(x, s.eps, rng)]),
        ),
        Method(
            "sum_cdp_laplace",
            "sum",
            "cdp",
            "CDP Laplace",
            baseline=lambda x, s, rng: np.array([sb.central_laplace_sum(x, s.eps, rng)]),
        ),
    ]
}

SURVEY_METHODS = {
    "count": ["cnt_rr", "cnt_2m", "cnt_sgm", "cnt_bn"],
    "hist": ["hist_kr", "hist_mm", "slh", "murs"],
    "sum": ["rsum_rr", "rsum_kr", "rsum_rm", "rsum_dsg"],
}

# issue 32's newer protocols (Hist_LWY, PRHR, PUCM): compared in their own report sections, not
# judged in the survey's claims
NEWER = {"hist_lwy", "prhr", "prhr_exact", "pucm", "pucm_exact"}


def methods_of(problem: str) -> list[Method]:
    """Every method of a problem, shuffle methods first."""
    order = {"shuffle": 0, "ldp": 1, "cdp": 2}
    return sorted(
        (m for m in METHODS.values() if m.problem == problem), key=lambda m: order[m.kind]
    )
