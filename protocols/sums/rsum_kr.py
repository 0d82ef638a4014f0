"""RSum_KR: single-message real summation (Balle, Bell, Gascon, Nissim, CRYPTO 2019).

Each user rounds p x without bias to an integer in [0, p] and sends it through k-RR over the
k = p + 1 values, lambda from the survey's Theorem 4 (Eq. 8) with that k; the analyzer debiases the
report sum (:mod:`protocols.sums.krr_sum`) and divides by p. ``levels="survey"`` uses the survey's
rounding precision p = 10; ``levels="optimal"`` the paper's p = ceil(n^(1/3)), with which the MSE
is Theta(n^(1/3)) (optimal for single-message protocols, same paper). Releases re-account the
fixed eps_l at the reports received.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from protocols.accountant import survey
from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import Guarantee, OneReportProtocol, certified
from protocols.catalogue.inputs import label_counts
from protocols.sums.krr_sum import krr_integers, krr_sum_estimate, krr_sum_variance, theorem4_krr
from protocols.sums.rounding import check_unit_values, randomized_rounding, rounding_variance

SURVEY_PRECISION = 10


def single_message_precision(n: int, levels: str | int) -> int:
    """p for ``levels`` = "survey" (10), "optimal" (ceil(n^(1/3))) or an explicit integer."""
    if levels == "survey":
        return SURVEY_PRECISION
    if levels == "optimal":
        return max(1, math.ceil(n ** (1 / 3)))
    p = int(levels)
    if p < 1:
        raise ValueError(f"RSum_KR: precision must be >= 1, got {levels}")
    return p


class RSumKR(OneReportProtocol):
    """One k-RR report of the rounded value per user, batch ``reports``."""

    name = "rsum_kr"
    release_what = "sum of values in [0, 1]"

    def __init__(self, n: int, eps_c: float, delta: float, levels: str | int = "survey") -> None:
        self.set_target("RSum_KR", n, eps_c, delta)
        self.p = single_message_precision(self.n, levels)
        self.k = self.p + 1
        self.lam, self.eps_l = theorem4_krr(self.eps_c, self.n, self.delta, self.k, "RSum_KR")

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("reports", 1, self.k)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        x = check_unit_values(records, "RSum_KR.encode")
        z = randomized_rounding(x, self.p, rng)
        return {"reports": krr_integers(z, self.k, self.lam, rng).reshape(-1, 1)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        c, bad = label_counts(shuffled, "reports", self.k, "RSum_KR analyzer")
        m = int(c.sum())
        s = float(np.dot(c, np.arange(self.k)))
        return {
            "sum": krr_sum_estimate(s, m, self.k, self.lam) / self.p,
            "reports": m,
            "invalid": bad,
        }

    def variance(self, x: np.ndarray) -> float:
        """Exact variance of the estimate for the values x (k-RR noise + rounding)."""
        y = np.asarray(x, dtype=np.float64) * self.p
        lo = np.floor(y)
        f = y - lo
        # law of total variance: E over the rounding of the k-RR variance + rounding variance
        v_lo = np.array([krr_sum_variance(np.array([z]), self.k, self.lam) for z in range(self.k)])
        zi = lo.astype(np.int64)
        v = (1 - f) * v_lo[zi] + f * v_lo[np.minimum(zi + 1, self.k - 1)]
        return float(v.sum()) / self.p**2 + rounding_variance(x, self.p)

    def bits_per_user(self) -> float:
        return float(math.ceil(math.log2(self.k)))

    def mechanism(self) -> str:
        return f"rounding({self.p}) + {self.k}-RR (lambda={self.lam:.4g}) + uniform shuffle"

    def guarantee(self, users: int) -> Guarantee:
        b = survey.theorem4(self.eps_l, users, self.delta, self.k)
        return Guarantee(certified(b), self.delta, f"survey-theorem4 (k={self.k})")

    def privacy(self) -> dict[str, Any]:
        own = {"lambda": self.lam, "precision": self.p}
        return self.statement(own, local_epsilon=self.eps_l)
