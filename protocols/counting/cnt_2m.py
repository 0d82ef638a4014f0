"""Cnt_2M: Balcer & Cheu's two-message binary sum (ITC 2020), truncated at zero.

Randomizer: a user holding bit x draws z ~ Bernoulli(p) and sends x + z copies of the message
"1" (0, 1 or 2 messages: the survey's {}, {1}, {1,1}). The shuffled view is the number of ones
|y| = sum x + Bin(n, p) = sum x + n - Bin(n, 1 - p), i.e. the count plus binomial noise.

Analyzer (Balcer-Cheu): c* = |y|/n; the estimated count is n (c* - p) if c* > 1, else 0. A zero
count never exceeds n ones, so it always returns exactly 0 ("hard truncation"); any count below
the noise deficit Bin(n, 1-p) (mean 50 ln(2/delta)/eps^2) is also truncated: the estimator is
biased, E[est] = E[(S + n(1-p) - Bin(n, 1-p)) 1{S > Bin(n, 1-p)}] (:func:`expected_estimate`).

Parameters. ``accounting="paper"``: Balcer-Cheu's 1 - p = 50 ln(2/delta)/(eps^2 n), valid for
eps, delta in (0, 1] and n >= 100 ln(2/delta)/eps^2 (their binary-sum theorem, via their
binomial-smoothness lemma). ``accounting="exact"``: the smallest 1 - p whose exact binomial
divergence (:mod:`protocols.distributed_noise.binomial`) meets (eps, delta). Releases: the number
of users is not visible (variable messages); the count certifies ceil(|y|/2) users, at which the
noise Bin(users, 1 - p) is re-accounted exactly. Communication grows with the data: a user sends
x + p messages on average.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee
from protocols.catalogue.inputs import check_bits, ones_in
from protocols.distributed_noise.binomial import (
    bc_two_message_gamma,
    binomial_reaccounted,
    calibrate_binomial_p,
)

ACCOUNTINGS = ("paper", "exact")


def two_message_gamma(eps: float, delta: float, n: int, accounting: str) -> float:
    """1 - p for n users at (eps, delta) under ``accounting`` (ValueError if infeasible)."""
    if accounting == "paper":
        g, why = bc_two_message_gamma(eps, delta, n)
        if g is None:
            raise ValueError(f"Cnt_2M: {why}")
        return g
    if accounting == "exact":
        g2 = calibrate_binomial_p(eps, delta, n)
        if g2 is None:
            raise ValueError(f"Cnt_2M: no noise rate <= 1/2 reaches ({eps}, {delta}) with n={n}")
        return g2
    raise ValueError(f"Cnt_2M: accounting must be one of {ACCOUNTINGS}, got {accounting!r}")


def two_message_counts(x: np.ndarray, p: float, rng: np.random.Generator) -> np.ndarray:
    """Messages per user, x + Bernoulli(p) (0, 1 or 2)."""
    return x + (rng.random(x.shape) < p).astype(np.int64)


def truncated_estimate(ones: int, n: int, p: float) -> float:
    """Balcer-Cheu's analyzer in counts: |y| - n p if |y| > n, else 0."""
    return float(ones - n * p) if ones > n else 0.0


def expected_estimate(count: int, n: int, gamma: float) -> float:
    """Exact E[estimate] for a true count S: E[(S + n gamma - D) 1{D < S}], D ~ Bin(n, gamma)."""
    d = np.arange(0, min(count, n + 1))
    if d.size == 0:
        return 0.0
    pmf = stats.binom.pmf(d, n, gamma)
    return float(np.sum(pmf * (count + n * gamma - d)))


def expected_mse(count: int, n: int, gamma: float) -> float:
    """Exact MSE of the truncated estimate for a true count S: the error is n gamma - D when
    D < S and -S otherwise, D ~ Bin(n, gamma)."""
    d = np.arange(0, min(count, n + 1))
    pmf = stats.binom.pmf(d, n, gamma)
    below = float(np.sum(pmf * (n * gamma - d) ** 2))
    return below + float(stats.binom.sf(count - 1, n, gamma)) * count**2


class Cnt2M(CatalogueProtocol):
    """Balcer-Cheu binary sum: 0-2 messages "1" per user in batch ``ones``."""

    name = "cnt_2m"
    fixed_messages = False
    release_what = "count of ones"

    def __init__(self, n: int, eps_c: float, delta: float, accounting: str = "paper") -> None:
        self.set_target("Cnt_2M", n, eps_c, delta)
        self.accounting = accounting
        self.gamma = two_message_gamma(self.eps_c, self.delta, self.n, accounting)
        self.p = 1.0 - self.gamma

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("ones", 1, 2)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        x = check_bits(records, "Cnt_2M.encode")
        k = two_message_counts(x, self.p, rng)
        return {"ones": np.ones((int(k.sum()), 1), dtype=np.int64)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        ones, m, bad = ones_in(shuffled, "ones", "Cnt_2M analyzer")
        return {
            "count": truncated_estimate(ones, self.n, self.p),
            "messages": m,
            "invalid": bad,
            "truncated": ones <= self.n,
        }

    def noise_variance(self) -> float:
        """Variance of the binomial noise, n p (1 - p) (the estimator's variance above truncation)."""
        return self.n * self.p * self.gamma

    def messages_per_user(self, mean_bit: float | None = None) -> float:
        """Expected messages per user, mean_bit + p (upper bound 1 + p without the data mean)."""
        return (1.0 if mean_bit is None else float(mean_bit)) + self.p

    def bits_per_user(self, mean_bit: float | None = None) -> float:
        return self.messages_per_user(mean_bit)  # one-bit messages

    def max_messages(self) -> dict[str, int]:
        return {"ones": 2}

    def mechanism(self) -> str:
        return f"Balcer-Cheu two-message sum (1-p={self.gamma:.4g}) + uniform shuffle"

    def guarantee(self, users: int) -> Guarantee:
        if users >= self.n:
            bound = "balcer-cheu" if self.accounting == "paper" else "exact-binomial"
            kind = "upper"
            return Guarantee(self.eps_c, self.delta, bound, kind)
        return binomial_reaccounted(self.delta, users, users, self.gamma)

    def privacy(self) -> dict[str, Any]:
        return self.statement(
            {"one_minus_p": self.gamma, "accounting": self.accounting}, local_epsilon=None,
            note="no local (user-side) guarantee: a user with x = 1 always sends >= 1 message",
        )  # fmt: skip
