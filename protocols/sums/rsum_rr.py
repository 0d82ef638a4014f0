"""RSum_RR: real summation from Boolean RR (after Cheu et al., EUROCRYPT 2019, section on sums).

Each user rounds p x without bias to an integer z in [0, p] (p = ``precision``, the survey's 10)
and sends its unary encoding as p one-bit messages (z ones, p - z zeros), each through Boolean RR
with uniform-bit probability lambda; all n p bits go to one shuffle batch. The analyzer's estimate
(ones - lambda n p/2)/((1 - lambda) p) is unbiased for sum x.

Privacy: the view is the count of ones among N = n p Boolean-RR bits. Replacing one user's x
changes at most p of the bits, a chain of p bit-level neighbours, so by group privacy a per-bit
(eps1, delta1) guarantee gives (p eps1, p e^((p-1) eps1) delta1). We take eps1 = eps/p and
delta1 = delta/(p e^((p-1) eps/p)) and lambda from the survey's Theorem 3 (Cheu et al.) for N
bit-holders at (eps1, delta1). (Cheu et al. choose p = eps sqrt(n) and analyse the sum directly;
their text was not reachable here, so we use this conservative reduction, stated in the docs.)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from protocols.accountant import survey
from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee, certified
from protocols.catalogue.inputs import ones_in
from protocols.counting.cnt_rr import rr_bits, rr_count_estimate, rr_count_variance
from protocols.sums.rounding import check_unit_values, randomized_rounding, rounding_variance


def group_split(eps: float, delta: float, p: int) -> tuple[float, float]:
    """Per-bit (eps1, delta1) whose group privacy over p bits gives (eps, delta)."""
    e1 = eps / p
    return e1, delta / (p * math.exp((p - 1) * e1))


class RSumRR(CatalogueProtocol):
    """p unary bits per user through Boolean RR, one batch ``bits``."""

    name = "rsum_rr"
    release_what = "sum of values in [0, 1]"

    def __init__(self, n: int, eps_c: float, delta: float, precision: int = 10) -> None:
        if int(n) != n or n < 2 or int(precision) != precision or precision < 1:
            raise ValueError(f"RSum_RR: need n >= 2 and precision >= 1, got {n}, {precision}")
        self.n, self.eps_c, self.delta, self.p = int(n), float(eps_c), float(delta), int(precision)
        self.eps1, self.delta1 = group_split(self.eps_c, self.delta, self.p)
        b = survey.theorem3_inverse(self.eps1, self.n * self.p, self.delta1)
        if not b.valid or b.blanket is None:
            raise ValueError(f"RSum_RR: Theorem 3 for {self.n * self.p} bits: {b.reason}")
        self.lam, self.eps_l_bit = float(b.blanket), float(b.value)

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("bits", 1, 2)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        x = check_unit_values(records, "RSum_RR.encode")
        z = randomized_rounding(x, self.p, rng)
        unary = (np.arange(self.p)[None, :] < z[:, None]).astype(np.int64)
        return {"bits": rr_bits(unary, self.lam, rng).reshape(-1, 1)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        ones, m, bad = ones_in(shuffled, "bits", "RSum_RR analyzer")
        return {
            "sum": rr_count_estimate(ones, m, self.lam) / self.p,
            "messages": m,
            "invalid": bad,
        }

    def variance(self, x: np.ndarray) -> float:
        """Exact variance of the sum estimate for the values x (RR noise + rounding)."""
        return rr_count_variance(x.size * self.p, self.lam) / self.p**2 + rounding_variance(
            x, self.p
        )

    def messages_per_user(self) -> float:
        return float(self.p)

    def bits_per_user(self) -> float:
        return float(self.p)

    def max_messages(self) -> dict[str, int]:
        return {"bits": self.p}

    def mechanism(self) -> str:
        return f"unary({self.p}) + boolean RR (lambda={self.lam:.4g}) + uniform shuffle"

    def guarantee(self, users: int) -> Guarantee:
        e1 = certified(survey.theorem3(self.eps_l_bit, users * self.p, self.delta1))
        eps = self.p * e1
        delta = self.p * math.exp((self.p - 1) * e1) * self.delta1
        return Guarantee(eps, delta, "survey-theorem3 + group privacy (p bits)")

    def privacy(self) -> dict[str, Any]:
        own = {"eps_local_per_bit": self.eps_l_bit, "lambda": self.lam, "precision": self.p}
        return self.statement(own, local_epsilon=self.p * self.eps_l_bit)
