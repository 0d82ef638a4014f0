"""Cnt_BN: robust approximate counting with distributed binomial noise (survey section 6.1,
after Balcer, Cheu, Joseph & Mao, SODA 2021).

Each user sends 1 + t one-bit messages: its own bit and t noise bits, each 1 with probability p.
The shuffled view is the number of ones, sum x + Bin(users t, p): a sensitivity-1 count plus
binomial noise from the users themselves. The guarantee assumes m0 = ceil(gamma N) honest users
(robust shuffle privacy: any m >= m0 honest users add at least Bin(m0 t, p) noise, and more noise
is a post-processing), and p is calibrated for M = m0 t noise slots:

- ``accounting="paper"``: Balcer & Cheu's binomial-smoothness lemma (the tool of the SODA 2021
  paper's authors for binomial noise, ITC 2020): p M >= the lemma's mass for (eps, delta);
- ``accounting="exact"``: the smallest p whose exact binomial divergence meets (eps, delta)
  (:func:`protocols.distributed_noise.binomial.calibrate_binomial_p`), 3-4x less variance.

t is the smallest number of noise slots keeping p <= 1/2. The estimate (ones - users t p) is
unbiased with variance users t p (1 - p). Every user sends exactly 1 + t messages, so the users
received are certified exactly and the noise they added is re-accounted exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.accountant.survey import robust_users
from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee
from protocols.catalogue.inputs import check_bits, ones_in
from protocols.distributed_noise.binomial import (
    bc_smooth_mass,
    binomial_reaccounted,
    calibrate_binomial_p,
)

ACCOUNTINGS = ("paper", "exact")
MAX_SLOTS = 64


def binomial_noise_rate(eps: float, delta: float, m0: int, accounting: str) -> tuple[int, float]:
    """(t, p): fewest noise slots per user and the rate for m0 honest users."""
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"Cnt_BN: accounting must be one of {ACCOUNTINGS}, got {accounting!r}")
    for t in range(1, MAX_SLOTS + 1):
        if accounting == "paper":
            p = bc_smooth_mass(eps, delta) / (m0 * t)
            if p <= 0.5:
                return t, p
        else:
            q = calibrate_binomial_p(eps, delta, m0 * t)
            if q is not None:
                return t, q
    raise ValueError(f"Cnt_BN: {m0} honest users cannot carry the noise with <= {MAX_SLOTS} slots")


class CntBN(CatalogueProtocol):
    """1 + t bits per user in batch ``bits``; analyzer = ones - users t p."""

    name = "cnt_bn"
    release_what = "count of ones"

    def __init__(
        self, n: int, eps_c: float, delta: float, gamma: float = 1.0, accounting: str = "paper"
    ) -> None:
        self.set_target("Cnt_BN", n, eps_c, delta)
        self.gamma = gamma
        self.accounting = accounting
        self.min_users = robust_users(self.n, gamma)
        self.t, self.p = binomial_noise_rate(self.eps_c, self.delta, self.min_users, accounting)

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("bits", 1, 2)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        x = check_bits(records, "Cnt_BN.encode")
        noise = (rng.random((x.size, self.t)) < self.p).astype(np.int64)
        return {"bits": np.concatenate([x[:, None], noise], axis=1).reshape(-1, 1)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        ones, m, bad = ones_in(shuffled, "bits", "Cnt_BN analyzer")
        users = m // (1 + self.t)
        return {
            "count": float(ones - users * self.t * self.p),
            "messages": m,
            "users": users,
            "invalid": bad,
        }

    def noise_variance(self, users: int | None = None) -> float:
        m = self.n if users is None else users
        return m * self.t * self.p * (1 - self.p)

    def messages_per_user(self) -> float:
        return float(1 + self.t)

    def bits_per_user(self) -> float:
        return float(1 + self.t)

    def max_messages(self) -> dict[str, int]:
        return {"bits": 1 + self.t}

    def mechanism(self) -> str:
        return f"bit + {self.t} Bernoulli({self.p:.4g}) noise bits + uniform shuffle"

    def guarantee(self, users: int) -> Guarantee:
        if users >= self.min_users:
            bound = "bc-smoothness" if self.accounting == "paper" else "exact-binomial"
            return Guarantee(self.eps_c, self.delta, bound, "upper", f"robust (gamma={self.gamma})")
        return binomial_reaccounted(self.delta, users, users * self.t, self.p)

    def privacy(self) -> dict[str, Any]:
        return self.statement(
            {"gamma": self.gamma, "min_users": self.min_users, "noise_slots": self.t, "p": self.p,
             "accounting": self.accounting},
            local_epsilon=None,
        )  # fmt: skip


__all__ = ["ACCOUNTINGS", "CntBN", "binomial_noise_rate"]
