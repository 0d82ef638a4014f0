"""Hist_KR: k-ary randomized response over [d] with amplification by shuffling.

Each user sends one value: its own with probability 1 - lambda, otherwise a uniform value of [d]
(survey Eq. 5, k = d), i.e. GRR at eps_l = ln(1 + d (1 - lambda)/lambda). lambda comes from the
survey's Theorem 4 (Balle et al. 2019, Eq. 8) for the central (eps_c, delta) and N users
(``bound="theorem4"``, default) or from the project accountant's variation-ratio bound for GRR
(``bound="vr"``). Unbiased count estimate per value: (c_j - m lambda/d)/(1 - lambda) with m
reports; exact variance (GRR's) m (q(1-q) + f (p-q)(1-p-q))/(p-q)^2 in counts. The error grows
with d (lambda is proportional to d). Releases re-account the fixed eps_l at the reports received.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from protocols.accountant import survey
from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import Guarantee, OneReportProtocol, certified
from protocols.catalogue.inputs import check_domain_and_users, check_values, label_counts
from protocols.defences.fake_removal import UniformFakeReports
from protocols.oracles.grr import grr_estimate_from_counts, grr_perturb, grr_variance

BOUNDS = ("theorem4", "vr")


def krr_local_epsilon(eps_c: float, n: int, delta: float, d: int, bound: str) -> float:
    """eps_l of shuffled d-ary RR certified for (eps_c, delta) with n users."""
    if bound == "theorem4":
        b = survey.theorem4_inverse(eps_c, n, delta, d)
        if not b.valid or b.value is None:
            raise ValueError(f"Hist_KR: Theorem 4 {b.reason}")
        return float(b.value)
    if bound == "vr":
        from protocols.accountant import max_local_epsilon

        e = max_local_epsilon(eps_c, n, delta, bound="vr", mechanism="grr", k=d)
        if e is None:
            raise ValueError(f"Hist_KR: the vr bound certifies no eps_l (n={n}, d={d})")
        return float(e)
    raise ValueError(f"Hist_KR: bound must be one of {BOUNDS}, got {bound!r}")


class HistKR(OneReportProtocol):
    """One k-RR report per user in batch ``reports``."""

    name = "hist_kr"
    release_what = "histogram of [d]"

    def __init__(self, d: int, n: int, eps_c: float, delta: float, bound: str = "theorem4") -> None:
        check_domain_and_users("Hist_KR", d, n)
        self.d, self.n, self.eps_c, self.delta, self.bound = int(d), int(n), eps_c, delta, bound
        self.eps_l = krr_local_epsilon(float(eps_c), self.n, float(delta), self.d, bound)
        self.lam = survey.rr_lambda(self.eps_l, self.d)

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("reports", 1, self.d)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        v = check_values(records, self.d, "Hist_KR.encode")
        return {"reports": grr_perturb(v, self.d, self.eps_l, rng).reshape(-1, 1)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        c, bad = label_counts(shuffled, "reports", self.d, "Hist_KR analyzer")
        return self.estimate_from_counts(c.astype(np.float64), int(c.sum()), bad)

    def estimate_from_counts(
        self, counts: np.ndarray, reports: int, invalid: int
    ) -> dict[str, Any]:
        m = int(reports)
        if m == 0:
            raise ValueError("Hist_KR analyzer: no well-formed report")
        freqs = grr_estimate_from_counts(np.asarray(counts, np.float64), self.eps_l, n=m)
        return {"counts": (freqs * m).tolist(), "reports": m, "invalid": int(invalid)}

    def uniform_fake_reports(self) -> UniformFakeReports:
        return UniformFakeReports("reports", self.d, self.eps_l, float(self.delta))

    def count_variance(self, true_counts: np.ndarray) -> np.ndarray:
        """Exact variance of each count estimate given the true counts."""
        c = np.asarray(true_counts, dtype=np.float64)
        m = int(c.sum())
        return grr_variance(c / m, self.d, self.eps_l, m) * m * m

    def bits_per_user(self) -> float:
        return float(math.ceil(math.log2(self.d)))

    def mechanism(self) -> str:
        return f"{self.d}-RR (lambda={self.lam:.4g}, eps_l={self.eps_l:.4g}) + uniform shuffle"

    def guarantee(self, users: int) -> Guarantee:
        if self.bound == "theorem4":
            b = survey.theorem4(self.eps_l, users, self.delta, self.d)
            return Guarantee(certified(b), self.delta, "survey-theorem4", note=b.reason)
        from protocols.accountant import amplify

        a = amplify(self.eps_l, users, self.delta, bound="vr", mechanism="grr", k=self.d)
        if not a.valid or a.eps_central is None:
            raise ValueError(a.reason)
        return Guarantee(float(a.eps_central), self.delta, "vr(grr)")

    def privacy(self) -> dict[str, Any]:
        return self.statement({"lambda": self.lam}, local_epsilon=self.eps_l, bound=self.bound)
