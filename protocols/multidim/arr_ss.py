"""ARR-SS (seed 000, Algorithm 2): all-attribute RR with a single shuffler.

The RR domain is the union of all attribute domains, K = sum_j k_j (cell of (theta, v) at
offset(theta) + v). Each user picks one attribute theta uniformly, locates its value's cell,
applies K-ary RR at eps_r and sends the relocated cell ``(theta', y')`` (width 2) to one shuffler.
Estimator (spec Sec. 4): f~ = d (C - n q) / (n (p - q)); q applies to every other cell of the
combined domain.

Accounting: ``paper`` = Calculate(eps_c, delta, n, K) (Theorem 4, kept although its extra 1/d on
the blanket makes it conservative); ``tight`` = the DP core's variation-ratio accountant with the
K-RR parameters over n users (valid: the randomizer's likelihood ratio is <= e^eps_r and its
total-variation distance between two records, an average over the attribute choice, is at most
that of K-RR).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec
from protocols.multidim.common import MultidimProtocol
from protocols.oracles.grr import grr_perturb, grr_probabilities
from protocols.privacy.ledger import Release

BATCH = "reports"


class ARRSS(MultidimProtocol):
    """ARR-SS encoder and analyzer (module docstring)."""

    name = "arr-ss"
    estimators = ("paper",)

    def configure(self) -> None:
        """Combined domain K = sum k_j, its offsets, and one K-ary RR budget."""
        self.K = int(sum(self.domain_sizes))
        self.offsets = np.concatenate([[0], np.cumsum(self.domain_sizes)[:-1]]).astype(np.int64)
        self.single_rr_budget(self.K, "K")

    def locate(self, theta: np.ndarray, value: np.ndarray) -> np.ndarray:
        """Combined-domain cell of (attribute, value)."""
        return self.offsets[theta] + value

    def relocate(self, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(attribute, value) of a combined-domain cell."""
        theta = np.searchsorted(self.offsets, cell, side="right") - 1
        return theta, cell - self.offsets[theta]

    @property
    def feasible(self) -> bool:
        return self.budget.feasible

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec(BATCH, 2, max(self.d, max(self.domain_sizes)))]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        """Each user: uniform attribute, K-RR of its located cell, relocated message."""
        eps = self._require_feasible()
        theta, value = self.sampled_values(records, rng)
        cell = grr_perturb(self.locate(theta, value), self.K, eps, rng)
        t, y = self.relocate(cell)
        return {BATCH: np.stack([t, y], axis=1).astype(np.int64)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        """Counts per combined cell; f~ = d (C - n q) / (n (p - q))."""
        eps = self._require_feasible()
        theta, y = self.theta_reports(shuffled, BATCH)
        ok = (theta >= 0) & (theta < self.d) & (y >= 0)
        ok[ok] &= y[ok] < np.asarray(self.domain_sizes)[theta[ok]]
        n = int(ok.sum())
        if n == 0:
            raise ValueError("arr-ss.analyze: no well-formed reports")
        c = np.bincount(self.locate(theta[ok], y[ok]), minlength=self.K).astype(np.float64)
        p, q = grr_probabilities(self.K, eps)
        f = self.d * (c - n * q) / (n * (p - q))
        est = [f[o : o + k] for o, k in zip(self.offsets, self.domain_sizes, strict=True)]
        return self.package({"paper": est}, n, int((~ok).sum()))

    def privacy(self) -> dict[str, Any]:
        return self.single_rr_privacy()

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """All 1-way marginals from one batch of K-RR reports among all users (Theorem 4)."""
        return self.single_batch_release(counts, "Theorem 4", f"K-RR (K={self.K})")

    def variance(self, freqs: list[np.ndarray], estimator: str | None = None) -> list[np.ndarray]:
        """Exact per-value variance of each attribute's estimate (``arr_ss_variance``)."""
        eps = self._require_feasible()
        return [arr_ss_variance(f, self.K, eps, self.n, self.d) for f in freqs]


def arr_ss_variance(freqs: np.ndarray, K: int, eps: float, n: int, d: int) -> np.ndarray:
    """Theorem 6 in full: d^2/(n (p-q)^2) [f a (1-a) + (1-f) q (1-q)], a = p/d + q (d-1)/d."""
    f = np.asarray(freqs, dtype=np.float64)
    p, q = grr_probabilities(K, eps)
    a = p / d + q * (d - 1) / d
    return d**2 / (n * (p - q) ** 2) * (f * a * (1 - a) + (1 - f) * q * (1 - q))
