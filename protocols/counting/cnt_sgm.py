"""Cnt_SGM: robust pure counting with distributed symmetric geometric noise (survey section 6.1,
after Balcer, Cheu, Joseph & Mao, SODA 2021; construction: survey Theorems 8 and 9).

Each user adds a Polya(1/m0, e^-eps) difference to its bit and splits the result into s additive
shares mod q (:mod:`protocols.distributed_noise.robust_splitmix`), m0 = ceil(gamma N). With at
least m0 honest users the ideal noisy count is eps-DP (pure; the noise is the discrete Laplace
of the geometric mechanism, or more), and the shuffled shares are 2^-sigma-close to it, so the
protocol is (eps, (1 + e^eps) 2^-sigma, gamma)-robustly shuffle private (Theorem 9; sigma from
``delta_split``, default 1e-12). The estimate is unbiased with variance 2 R alpha/(1 - alpha)^2,
R = users/m0, alpha = e^-eps (about 2.3 at eps = 0.9, gamma = 1): central-DP accuracy.

The seed does not describe Cnt_SGM (only its name, its robust pure guarantee and that it has the
lowest error); the SODA 2021 paper's text was not reachable here. This is our construction from
the survey's own building blocks; docs/survey.md says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.base import Batches
from protocols.catalogue.inputs import check_bits
from protocols.distributed_noise.robust_splitmix import (
    decode_sum,
    encode_values,
    robust_splitmix_parameters,
)
from protocols.distributed_noise.split_mix_protocol import RobustSplitMixProtocol


class CntSGM(RobustSplitMixProtocol):
    """s Split-Mix shares per user in batch ``shares``; analyzer = noisy count."""

    name = "cnt_sgm"
    release_what = "count of ones"

    def __init__(
        self, n: int, eps_c: float, gamma: float = 1.0, delta_split: float = 1e-12
    ) -> None:
        self.params = robust_splitmix_parameters(
            int(n), float(eps_c), gamma=gamma, delta_split=delta_split
        )
        self.n, self.eps_c, self.gamma = self.params.n, float(eps_c), float(gamma)

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        x = check_bits(records, "Cnt_SGM.encode")
        return {"shares": encode_values(x, self.params, rng)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        sh = shuffled.get("shares")
        if sh is None:
            raise ValueError("Cnt_SGM analyzer: no 'shares' batch received")
        total, bad = decode_sum(sh, self.params)
        return {"count": float(total), "messages": int(np.asarray(sh).shape[0]), "invalid": bad}

    def noise_variance(self, users: int | None = None) -> float:
        return self.params.noise_variance(users)

    def mechanism(self) -> str:
        p = self.params
        return (
            f"split-mix (s={p.shares}, q={p.modulus}) + Polya(1/{p.min_users}) noise, "
            f"alpha={p.alpha:.4g}"
        )

    def privacy(self) -> dict[str, Any]:
        p = self.params
        sizes = {k: v for k, v in p.as_dict().items() if k in ("sigma", "shares", "modulus")}
        note = "pure eps for the ideal noisy sum; delta only from the split-mix distance"
        return self.split_mix_statement(p, sizes, note)
