"""Robust Split-Mix: an integer sum with distributed Polya noise over additive shares mod q.

Each user holds an integer v in [0, v_max], adds G+ - G- with G+-, G- ~ Polya(1/m0, alpha),
alpha = exp(-eps/Delta) (Delta = the sum's L1 sensitivity), m0 = ceil(gamma N) the honest users
the guarantee assumes, and splits (v + G+ - G-) mod q into s uniform additive shares (IKOS
"split and mix"). The shuffler mixes all shares; the analyzer adds them mod q and maps the
result to the signed range [-B, N v_max + B].

Guarantee (with m >= m0 honest users contributing): the ideal "sum + NB(m/m0) - NB(m/m0)" is
eps-DP (:mod:`protocols.distributed_noise.polya`); the shuffled shares are at statistical
distance <= 2^-sigma from a function of the sum when
s >= (2 sigma + log2 q)/(log2 m - log2 e) + 1 (Balle, Bell, Gascon, Nissim 2019, "Improved
summation from shuffling", Thm 1; :func:`protocols.summation.split_mix.num_shares`); by the
survey's Theorem 9 the protocol is (eps, (1 + e^eps) 2^-sigma)-DP. We size s for m0 (the robust
crowd), so the statistical guarantee also holds with only m0 honest users mixing.

Re-accounting at m users received: eps from the noise NB(m/m0) - NB(m/m0) (pure, computed
exactly when m < m0) and sigma_eff = floor(((s - 1)(log2 m - log2 e) - log2 q)/2) from the same
theorem; refused when sigma_eff < 1 or m exceeds the planned N (the decoding range).

Parameters: B is the smallest bound with Pr[|noise of N users| > B] <= 2^-sigma (decoding only,
never privacy), q = N v_max + 2B + 1 (no wrap-around except with probability 2^-sigma).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from protocols.accountant.survey import robust_users, theorem9, theorem9_sigma
from protocols.distributed_noise.polya import nb_difference_epsilon, nb_tail_bound, sg_variance
from protocols.summation.split_mix import (
    Q_MAX,
    num_shares,
    polya_noise_shares,
    split_additive,
)


@dataclass(frozen=True)
class RobustSplitMixParams:
    """Public parameters of one robust Split-Mix sum."""

    n: int  # planned users N
    gamma: float  # fraction of honest users the guarantee assumes
    min_users: int  # m0 = ceil(gamma N)
    epsilon: float  # pure eps of the ideal noisy sum with >= m0 honest users
    sensitivity: int  # Delta: L1 sensitivity of the integer sum
    value_max: int  # each user's integer lies in [0, value_max]
    sigma: int
    tail_bound: int  # B
    modulus: int  # q
    shares: int  # s, messages per user
    delta_split: float  # (1 + e^eps) 2^-sigma

    @property
    def alpha(self) -> float:
        """The per-unit noise ratio exp(-eps/Delta)."""
        return math.exp(-self.epsilon / self.sensitivity)

    def noise_variance(self, users: int | None = None) -> float:
        """Variance of the total noise of ``users`` (default N) contributing users."""
        m = self.n if users is None else users
        return sg_variance(self.alpha, m / self.min_users)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"alpha": self.alpha}


def robust_splitmix_parameters(
    n: int,
    epsilon: float,
    *,
    sensitivity: int = 1,
    value_max: int = 1,
    gamma: float = 1.0,
    delta_split: float = 1e-12,
    sigma: int | None = None,
    q_max: int = Q_MAX,
) -> RobustSplitMixParams:
    """Parameters for N users; sigma from ``delta_split`` by Theorem 9 unless given."""
    if int(n) != n or n < 3:
        raise ValueError(f"robust split-mix: n must be an integer >= 3, got {n}")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"robust split-mix: epsilon must be finite and > 0, got {epsilon}")
    if int(sensitivity) != sensitivity or sensitivity < 1 or int(value_max) != value_max:
        raise ValueError("robust split-mix: sensitivity and value_max must be positive integers")
    m0 = robust_users(int(n), gamma)
    if m0 < 3:
        raise ValueError(f"robust split-mix: ceil(gamma N) = {m0} < 3 honest users")
    if sigma is None:
        sigma = theorem9_sigma(epsilon, delta_split)
    alpha = math.exp(-epsilon / sensitivity)
    b = nb_tail_bound(n / m0, alpha, sigma)
    q = int(n) * int(value_max) + 2 * b + 1
    if q > q_max:
        raise ValueError(
            f"robust split-mix: modulus q = {q} exceeds {q_max} (n = {n}, value_max = "
            f"{value_max}, B = {b}); lower the precision or n"
        )
    return RobustSplitMixParams(
        n=int(n),
        gamma=float(gamma),
        min_users=m0,
        epsilon=float(epsilon),
        sensitivity=int(sensitivity),
        value_max=int(value_max),
        sigma=int(sigma),
        tail_bound=b,
        modulus=q,
        shares=num_shares(m0, q, sigma),
        delta_split=theorem9(epsilon, 0.0, 2.0 ** (-sigma))[1],
    )


def encode_values(
    values: np.ndarray, params: RobustSplitMixParams, rng: np.random.Generator
) -> np.ndarray:
    """(n * s, 1) shares of v + Polya(1/m0) difference mod q for every user (vectorized)."""
    v = np.asarray(values, dtype=np.int64).reshape(-1)
    if v.size and (v.min() < 0 or v.max() > params.value_max):
        raise ValueError(f"robust split-mix: values must lie in [0, {params.value_max}]")
    # polya_noise_shares(n_total, ...) draws Polya(1/n_total, exp(-eps/precision)) differences
    z = polya_noise_shares(params.min_users, v.size, params.epsilon, params.sensitivity, rng)
    return split_additive(v + z, params.shares, params.modulus).reshape(-1, 1)


def decode_sum(shares: np.ndarray, params: RobustSplitMixParams) -> tuple[int, int]:
    """(signed noisy integer sum, invalid shares) from the shuffled shares."""
    sh = np.asarray(shares).reshape(-1)
    ok = (sh >= 0) & (sh < params.modulus)
    if sh.size >= 1 << 32:
        raise ValueError("robust split-mix: more than 2^32 shares (int64 sum could overflow)")
    total = int(sh[ok].astype(np.int64).sum() % params.modulus)
    top = params.n * params.value_max + params.tail_bound
    return (total if total <= top else total - params.modulus), int((~ok).sum())


def guarantee_at(params: RobustSplitMixParams, users: int) -> tuple[float, float, str]:
    """(eps, delta, note) of the sum when ``users`` users contributed; ValueError if none holds."""
    if users > params.n:
        raise ValueError(f"{users} users received, more than the planned N = {params.n}")
    if users < 3:
        raise ValueError(f"only {users} users received")
    r = users / params.min_users
    eps = params.sensitivity * nb_difference_epsilon(r, params.alpha)
    sigma = math.floor(
        ((params.shares - 1) * (math.log2(users) - math.log2(math.e)) - math.log2(params.modulus))
        / 2
    )
    if sigma < 1:
        raise ValueError(f"{users} users: {params.shares} shares give no statistical security")
    sigma = min(sigma, params.sigma)
    _, delta = theorem9(eps, 0.0, 2.0 ** (-sigma))
    note = (
        f"noise of {users} users = NB({r:.4g}) - NB({r:.4g}); split-mix sigma {sigma} "
        f"(Theorem 9: delta = (1 + e^eps) 2^-sigma)"
    )
    if delta >= 1:
        raise ValueError(f"{users} users: delta {delta:.3g} >= 1")
    return eps, delta, note
