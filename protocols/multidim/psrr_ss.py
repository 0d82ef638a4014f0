"""PSRR-SS (seed 000, Algorithm 3): padding-based single-attribute RR with a single shuffler.

Every attribute domain is padded to k_max = max_j k_j. Each user picks one attribute theta
uniformly, perturbs its value with k_max-ary RR at the local epsilon, and sends the message
``(theta, y)`` (width 2) to one shuffler; y may be a dummy value in [k_theta, k_max), which the
analyzer discards. Estimators (spec Sec. 5):

* ``paper``: f~ = (d C - n q) / (n (p - q)), i.e. the n/d normalisation;
* ``observed``: f~ = (C / n_i - q) / (p - q) with n_i = #{theta = i} (theta is sent in clear).

Accounting: ``paper`` = Calculate(eps_c, delta, n, k_max) (Theorem 7); ``tight`` = the DP core's
variation-ratio accountant with the k_max-RR parameters over n users. Valid: the randomizer
x -> (theta, RR(x_theta)) has likelihood ratio <= e^eps_l and total-variation distance between
any two records (1/d) sum_theta TV(RR(x_theta), RR(x'_theta)) <= p - q, the k_max-RR values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec
from protocols.multidim.common import MultidimProtocol, sampled_attribute_variance
from protocols.oracles.grr import grr_estimate_from_counts, grr_perturb, grr_probabilities
from protocols.privacy.ledger import Release

BATCH = "reports"


class PSRRSS(MultidimProtocol):
    """PSRR-SS encoder and analyzer (module docstring)."""

    name = "psrr-ss"
    estimators = ("paper", "observed")

    def configure(self) -> None:
        """One k_max-ary RR budget (values padded to the largest domain)."""
        self.k_max = max(self.domain_sizes)
        self.single_rr_budget(self.k_max, "k_max")

    @property
    def feasible(self) -> bool:
        return self.budget.feasible

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec(BATCH, 2, max(self.d, self.k_max))]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        """Each user: uniform attribute theta, k_max-RR of its value, message (theta, y)."""
        eps = self._require_feasible()
        theta, value = self.sampled_values(records, rng)
        y = grr_perturb(value, self.k_max, eps, rng)
        return {BATCH: np.stack([theta, y], axis=1).astype(np.int64)}

    def counts(self, shuffled: Batches) -> tuple[np.ndarray, int, int]:
        """(d, k_max) report counts, number of well-formed reports, number of malformed ones."""
        theta, y = self.theta_reports(shuffled, BATCH)
        ok = (theta >= 0) & (theta < self.d) & (y >= 0) & (y < self.k_max)
        cells = theta[ok] * self.k_max + y[ok]
        c = np.bincount(cells, minlength=self.d * self.k_max).reshape(self.d, self.k_max)
        return c.astype(np.float64), int(ok.sum()), int((~ok).sum())

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        """Both estimators from the (theta, y) counts; dummy cells are dropped."""
        eps = self._require_feasible()
        c, n, malformed = self.counts(shuffled)
        if n == 0:
            raise ValueError("psrr-ss.analyze: no well-formed reports")
        paper = grr_estimate_from_counts(c, eps, n / self.d)
        n_i = c.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            observed = grr_estimate_from_counts(c, eps, np.where(n_i > 0, n_i, np.nan))
        dummy = sum(int(c[i, k:].sum()) for i, k in enumerate(self.domain_sizes))
        est = {
            "paper": [paper[i, :k] for i, k in enumerate(self.domain_sizes)],
            "observed": [observed[i, :k] for i, k in enumerate(self.domain_sizes)],
        }
        return self.package(est, n - dummy, malformed + dummy)

    def privacy(self) -> dict[str, Any]:
        return self.single_rr_privacy()

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """All 1-way marginals from one batch of (theta, k_max-RR) reports (Theorem 7)."""
        return self.single_batch_release(
            counts, "Theorem 7", f"attribute sampling + k_max-RR (k_max={self.k_max})"
        )

    def variance(self, freqs: list[np.ndarray], estimator: str | None = None) -> list[np.ndarray]:
        """Exact per-value variance of each attribute's estimate (``psrr_ss_variance``)."""
        eps = self._require_feasible()
        est = estimator or self.estimator
        return [psrr_ss_variance(f, self.k_max, eps, self.n, self.d, est) for f in freqs]


def psrr_ss_variance(
    freqs: np.ndarray, k_max: int, eps: float, n: int, d: int, estimator: str = "paper"
) -> np.ndarray:
    """Exact variance of the PSRR-SS estimate of values with true frequency ``freqs``.

    ``paper``: Theorem 9 in full, q(d - q)/(n (p-q)^2) + f (d - p - q)/(n (p - q)); ``observed``:
    see :func:`protocols.multidim.common.sampled_attribute_variance` (k_max-RR's p, q).
    """
    p, q = grr_probabilities(k_max, eps)
    return sampled_attribute_variance(freqs, p, q, n, d, estimator)
