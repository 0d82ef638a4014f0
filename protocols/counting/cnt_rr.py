"""Cnt_RR: Boolean randomized response with amplification by shuffling (Cheu et al. 2019).

Each user sends one bit: its own bit with probability 1 - lambda, otherwise a uniform bit
(survey Eq. 5 with k = 2), so the report is eps_l-LDP with eps_l = ln((2 - lambda)/lambda). The
analyzer's unbiased estimate of the number of ones among the m reports received is

    (sum y - lambda m / 2) / (1 - lambda),   Var = sum_i P_i (1 - P_i) / (1 - lambda)^2,

P_i = lambda/2 + (1 - lambda) x_i, i.e. m (lambda/2)(1 - lambda/2)/(1 - lambda)^2 for any data.

lambda is the smallest value the chosen bound certifies for the central (eps_c, delta) with N
users: ``"theorem3"`` (default, the survey's Theorem 3 = Cheu et al., Eq. 6), ``"theorem4"``
(Balle et al.'s k-RR bound with k = 2) or ``"vr"`` (the project accountant's variation-ratio bound
for GRR, k = 2). Both the local and the central epsilon are reported. Releases re-account the
fixed eps_l at the number of reports received (fewer users, less amplification).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.accountant import survey
from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee
from protocols.catalogue.inputs import check_bits, ones_in
from protocols.defences.fake_removal import UniformFakeReports

BOUNDS = ("theorem3", "theorem4", "vr")


def rr_bits(x: np.ndarray, lam: float, rng: np.random.Generator) -> np.ndarray:
    """Each bit replaced by a uniform bit with probability lambda (vectorized)."""
    replace = rng.random(x.shape) < lam
    return np.where(replace, rng.integers(0, 2, size=x.shape), x).astype(np.int64)


def rr_count_estimate(ones: float, m: int, lam: float) -> float:
    """Unbiased count of ones among m Boolean-RR reports holding ``ones`` ones."""
    return (ones - lam * m / 2.0) / (1.0 - lam)


def rr_count_variance(m: int, lam: float) -> float:
    """Exact variance of :func:`rr_count_estimate` (data-independent)."""
    return m * (lam / 2.0) * (1.0 - lam / 2.0) / (1.0 - lam) ** 2


def central_from_local(eps_l: float, n: int, delta: float, bound: str) -> survey.Bound:
    """Central epsilon of n shuffled Boolean-RR reports at eps_l by ``bound``."""
    if bound in ("theorem3", "theorem4"):
        return survey.forward(bound, eps_l, n, delta, k=2)
    if bound == "vr":
        from protocols.accountant import amplify

        a = amplify(eps_l, n, delta, bound="vr", mechanism="grr", k=2)
        return survey.Bound("vr", "forward", a.eps_central, a.valid, a.reason)
    raise ValueError(f"Cnt_RR: unknown bound {bound!r}; expected one of {BOUNDS}")


def local_from_central(eps_c: float, n: int, delta: float, bound: str) -> survey.Bound:
    """Largest eps_l the bound certifies for (eps_c, delta) with n users."""
    if bound in ("theorem3", "theorem4"):
        return survey.inverse(bound, eps_c, n, delta, k=2)
    if bound == "vr":
        from protocols.accountant import max_local_epsilon

        e = max_local_epsilon(eps_c, n, delta, bound="vr", mechanism="grr", k=2)
        why = "" if e is not None else "not valid: the vr bound certifies no eps_l"
        return survey.Bound("vr", "inverse", e, e is not None, why)
    raise ValueError(f"Cnt_RR: unknown bound {bound!r}; expected one of {BOUNDS}")


class CntRR(CatalogueProtocol):
    """One Boolean-RR bit per user, one batch ``bits``."""

    name = "cnt_rr"
    release_what = "count of ones"

    def __init__(self, n: int, eps_c: float, delta: float, bound: str = "theorem3") -> None:
        self.set_target("Cnt_RR", n, eps_c, delta)
        self.bound = bound
        inv = local_from_central(self.eps_c, self.n, self.delta, bound)
        if not inv.valid or inv.value is None:
            raise ValueError(f"Cnt_RR: {bound} certifies no local epsilon: {inv.reason}")
        self.eps_l = float(inv.value)
        self.lam = survey.rr_lambda(self.eps_l, 2)
        fwd = central_from_local(self.eps_l, self.n, self.delta, bound)
        self.eps_certified = float(fwd.value) if fwd.valid and fwd.value is not None else None

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("bits", 1, 2)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        x = check_bits(records, "Cnt_RR.encode")
        return {"bits": rr_bits(x, self.lam, rng).reshape(-1, 1)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        ones, m, bad = ones_in(shuffled, "bits", "Cnt_RR analyzer")
        return self.estimate_from_counts(np.array([m - ones, ones], np.float64), m, bad)

    def estimate_from_counts(
        self, counts: np.ndarray, reports: int, invalid: int
    ) -> dict[str, Any]:
        if reports == 0:
            raise ValueError("Cnt_RR analyzer: no well-formed report")
        return {
            "count": rr_count_estimate(float(counts[1]), int(reports), self.lam),
            "reports": int(reports),
            "invalid": int(invalid),
        }

    def uniform_fake_reports(self) -> UniformFakeReports:
        return UniformFakeReports("bits", 2, self.eps_l, self.delta)

    def variance(self, m: int | None = None) -> float:
        """Exact variance of the count estimate with m reports (default N)."""
        return rr_count_variance(self.n if m is None else m, self.lam)

    def messages_per_user(self) -> float:
        return 1.0

    def bits_per_user(self) -> float:
        return 1.0

    def max_messages(self) -> dict[str, int]:
        return {"bits": 1}

    def mechanism(self) -> str:
        return f"boolean RR (lambda={self.lam:.4g}, eps_l={self.eps_l:.4g}) + uniform shuffle"

    def guarantee(self, users: int) -> Guarantee:
        b = central_from_local(self.eps_l, users, self.delta, self.bound)
        if not b.valid or b.value is None:
            raise ValueError(b.reason or f"{self.bound} gives no amplification")
        return Guarantee(float(b.value), self.delta, f"survey-{self.bound}", note=b.reason)

    def privacy(self) -> dict[str, Any]:
        return self.statement(
            {"lambda": self.lam}, certified_epsilon=self.eps_certified,
            target_epsilon=self.eps_c, local_epsilon=self.eps_l, bound=self.bound,
        )  # fmt: skip


def cheu_lambda_bounds(n: int, delta: float) -> tuple[float, float]:
    """Theorem 3's admissible lambda range [14 ln(4/delta)/n, 1] (for reports and tests)."""
    return survey.theorem3_lambda_min(n, delta), 1.0


__all__ = ["BOUNDS", "CntRR", "cheu_lambda_bounds", "rr_bits", "rr_count_estimate"]
