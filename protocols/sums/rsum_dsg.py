"""RSum_DSG: Split-Mix summation with distributed symmetric geometric noise (survey section 6.3;
the survey's "MSE independent of n, but communication too large" method).

Each user rounds p x without bias to an integer in [0, p], adds a Polya(1/m0, e^(-eps/p))
difference (m0 = ceil(gamma N): robust to a fraction 1 - gamma of users dropping out or
colluding) and splits the result into s additive shares mod q
(:mod:`protocols.distributed_noise.robust_splitmix`, built on
:mod:`protocols.summation.split_mix`'s rounding, share splitting and message count). The sum has
sensitivity p, so the ideal noisy sum is eps-DP and the protocol is
(eps, (1 + e^eps) 2^-sigma, gamma)-robustly shuffle private (Theorems 8 and 9). Precision
p = ceil(4 eps sqrt(n)) (Split-Mix's rule: rounding std <= 10% of the noise std), lowered until
q = n p + 2B + 1 fits the shufflers' 31-bit messages. MSE = 2 R alpha/((1-alpha)^2 p^2) +
rounding, independent of n for p ~ sqrt(n).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from protocols.base import Batches
from protocols.distributed_noise.robust_splitmix import (
    RobustSplitMixParams,
    decode_sum,
    encode_values,
    robust_splitmix_parameters,
)
from protocols.distributed_noise.split_mix_protocol import RobustSplitMixProtocol
from protocols.sums.rounding import check_unit_values, randomized_rounding, rounding_variance


def dsg_parameters(
    n: int, eps: float, gamma: float, delta_split: float, precision: int | None
) -> RobustSplitMixParams:
    """Robust Split-Mix parameters with the largest precision that fits q <= Q_MAX."""
    p = precision if precision is not None else max(1, math.ceil(4 * eps * math.sqrt(n)))
    while True:
        try:
            return robust_splitmix_parameters(
                n, eps, sensitivity=p, value_max=p, gamma=gamma, delta_split=delta_split
            )
        except ValueError:
            if precision is not None or p == 1:
                raise
            p = max(1, int(p * 0.9))


class RSumDSG(RobustSplitMixProtocol):
    """s Split-Mix shares per user in batch ``shares``; analyzer = noisy sum / p."""

    name = "rsum_dsg"
    release_what = "sum of values in [0, 1]"

    def __init__(
        self,
        n: int,
        eps_c: float,
        gamma: float = 1.0,
        delta_split: float = 1e-12,
        precision: int | None = None,
    ) -> None:
        self.params = dsg_parameters(int(n), float(eps_c), gamma, delta_split, precision)
        self.n, self.eps_c, self.gamma = self.params.n, float(eps_c), float(gamma)
        self.p = self.params.value_max

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        x = check_unit_values(records, "RSum_DSG.encode")
        return {"shares": encode_values(randomized_rounding(x, self.p, rng), self.params, rng)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        sh = shuffled.get("shares")
        if sh is None:
            raise ValueError("RSum_DSG analyzer: no 'shares' batch received")
        total, bad = decode_sum(sh, self.params)
        return {"sum": total / self.p, "messages": int(np.asarray(sh).shape[0]), "invalid": bad}

    def variance(self, x: np.ndarray) -> float:
        """Exact variance of the estimate for the values x (noise of N users + rounding)."""
        return self.params.noise_variance() / self.p**2 + rounding_variance(x, self.p)

    def mechanism(self) -> str:
        p = self.params
        return (
            f"rounding({self.p}) + split-mix (s={p.shares}, q={p.modulus}) + Polya(1/{p.min_users})"
        )

    def privacy(self) -> dict[str, Any]:
        p = self.params
        sizes = {"precision": self.p, "shares": p.shares, "modulus": p.modulus}
        return self.split_mix_statement(p, sizes)
