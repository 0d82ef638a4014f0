"""Split-Mix (IKOS "split and mix") private summation in the shuffle model, and its baselines.

Each user holds x in [0, 1]. The encoder
1. rounds p*x to an integer without bias (randomized rounding, precision p);
2. adds its share of distributed discrete noise, z = Polya(1/n_min, a) - Polya(1/n_min, a) with
   a = exp(-eps/p) and n_min = ``min_users`` (default n): the sum over any n' >= n_min users is
   discrete Laplace (two-sided geometric) with parameter a plus independent Polya noise of shape
   (n' - n_min)/n_min (Polya shapes add), so the ideal "noisy sum" is eps-DP for the integer sum
   of sensitivity p whenever at least n_min users' shares arrive whole; below n_min the noise
   actually contributed is smaller and the protocol refuses to publish (it cannot re-account).
   Calibrating for n_min < n costs noise: the total noise variance grows by n/n_min (stated in
   ``privacy()``). The shares are drawn exactly up to a stated total variation
   (:mod:`protocols.summation.polya`), which is added to delta;
3. splits v = round(p x) + z mod q into s uniform additive shares mod q (s messages).
The shuffler mixes all n*s shares (single batch); the analyzer sums them mod q, maps the result
to the signed range [-B, n p + B] and divides by p.

Parameters (``splitmix_parameters``), for n users, target (eps, delta), statistical parameter
sigma:
- sigma = ceil(log2((1 + e^eps) / delta)) unless given. By the survey's Theorem 9 (Balle et al.
  2019), a protocol at statistical distance 2^-sigma from the eps-DP ideal noisy sum is
  (eps, (1 + e^eps) 2^-sigma)-DP, so this sigma gives (eps, delta)-DP.
- precision p = ceil(4 eps sqrt(n)) unless given (rounding std sqrt(n)/(2p) is then at most 10%
  of the noise std sqrt(2)/eps), lowered if needed so that q fits ``q_max``.
- B = smallest integer with P(|Z| > B) = 2 a^(B+1) / (1 + a) <= 2^-sigma (decoding failure
  only affects accuracy, never privacy); q = n p + 2 B + 1, so the noisy sum never wraps
  except with probability 2^-sigma.
- s = ceil((2 sigma + log2 q) / (log2 n_min - log2 e) + 1), at least 2: the number of shares
  for which the shuffled shares of n_min or more users are 2^-sigma-close to a function of the
  sum (Balle, Bell, Gascon, Nissim, "Improved summation from shuffling", arXiv 1909.11225, Thm
  1; s decreases with the number of users, so s at n_min covers every n' >= n_min). It
  reproduces their data point: 32-bit inputs (q = n 2^32), n = 10^4, sigma = 40 -> 12 messages.
- delta = (1 + e^eps) 2^-sigma + (1 + e^eps) 2 n tv (the Polya sampler's distance, ~1e-25);
  sigma is chosen so that the sum stays below the target delta.
Share randomness comes from the OS CSPRNG (the shares' uniformity is the security); the noise
and rounding use the client's generator (CSPRNG-seeded in networked runs,
:func:`protocols.rng.secure_rng`; a seeded generator makes a simulation).

Baselines in the same code path (``ShuffleProtocol`` subclasses or the curator function):
- ``SingleMessageSum``: randomized rounding to k = ceil(n^(1/3)) levels, then k-RR on the
  k+1 values with the largest local eps the accountant certifies for (eps, delta);
- ``central_laplace_sum``: the trusted-curator Laplace mechanism (sensitivity 1).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec, ShuffleProtocol
from protocols.oracles.central import laplace_mechanism
from protocols.privacy.ledger import USERS, Release
from protocols.privacy.record import PrivacyStatement
from protocols.privacy.statements import refuse_below, shuffled_release
from protocols.summation.polya import polya_difference_shares, polya_table

Q_MAX = (1 << 31) - 2  # shares must be valid messages of every shuffler (MPC field 2^31 - 1)


@dataclass(frozen=True)
class SplitMixParams:
    """Public parameters of a Split-Mix run."""

    n: int
    epsilon: float
    delta: float  # the target delta
    sigma: int  # statistical security parameter
    precision: int  # p
    tail_bound: int  # B
    modulus: int  # q
    shares: int  # s, messages per user
    delta_split: float  # (1 + e^eps) 2^-sigma
    min_users: int = 0  # n_min: the noise shape 1/n_min and s are calibrated for it (0: n)
    delta_sampler: float = 0.0  # (1 + e^eps) 2 n tv(Polya sampler)

    @property
    def n_min(self) -> int:
        return self.min_users or self.n

    @property
    def delta_total(self) -> float:
        """The delta stated: split-and-mix closeness plus the noise sampler's distance."""
        return self.delta_split + self.delta_sampler

    @property
    def noise_ratio(self) -> float:
        """a = exp(-eps / p): the discrete Laplace parameter of the total noise."""
        return math.exp(-self.epsilon / self.precision)


def num_shares(n: int, q: int, sigma: int) -> int:
    """Balle et al.'s message count: ceil((2 sigma + log2 q) / (log2 n - log2 e) + 1), >= 2."""
    if n < 3:
        raise ValueError(f"num_shares: need n >= 3 users (log2 n > log2 e), got {n}")
    s = math.ceil((2 * sigma + math.log2(q)) / (math.log2(n) - math.log2(math.e)) + 1)
    return max(2, s)


def tail_bound(epsilon: float, precision: int, sigma: int) -> int:
    """Smallest B with P(|Z| > B) <= 2^-sigma for Z discrete Laplace with a = exp(-eps/p)."""
    a_log = -epsilon / precision  # ln a
    # 2 a^(B+1) / (1 + a) <= 2^-sigma  <=>  (B+1) ln a <= ln((1 + a) 2^-sigma / 2)
    rhs = math.log1p(math.exp(a_log)) - (sigma + 1) * math.log(2)
    return max(0, math.ceil(rhs / a_log) - 1)


def splitmix_parameters(
    n: int,
    epsilon: float,
    delta: float,
    *,
    sigma: int | None = None,
    precision: int | None = None,
    q_max: int = Q_MAX,
    min_users: int | None = None,
) -> SplitMixParams:
    """Choose sigma, p, B, q and s for n users at (eps, delta), calibrated so that the guarantee
    holds whenever at least ``min_users`` (default n) users' shares arrive (module doc)."""
    if int(n) != n or n < 3:
        raise ValueError(f"splitmix_parameters: n must be an integer >= 3, got {n}")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"splitmix_parameters: epsilon must be finite and > 0, got {epsilon}")
    if not 0 < delta < 1:
        raise ValueError(f"splitmix_parameters: delta must lie in (0, 1), got {delta}")
    n_min = int(n) if min_users is None else int(min_users)
    if not 3 <= n_min <= n:
        raise ValueError(f"splitmix_parameters: min_users must lie in [3, {n}], got {n_min}")
    if sigma is not None and sigma < 1:
        raise ValueError(f"splitmix_parameters: sigma must be >= 1, got {sigma}")
    p = precision if precision is not None else max(1, math.ceil(4 * epsilon * math.sqrt(n)))
    if p < 1:
        raise ValueError(f"splitmix_parameters: precision must be >= 1, got {p}")
    e1 = 1 + math.exp(epsilon)
    while True:
        d_sampler = e1 * 2 * n * polya_table(n_min, float(epsilon), p).tv_bound
        if sigma is None:
            if d_sampler >= delta:
                raise ValueError(f"splitmix_parameters: delta {delta:g} is below the sampler's")
            sig = math.ceil(math.log2(e1 / (delta - d_sampler)))
        else:
            sig = int(sigma)
        # more noise than one discrete Laplace when n > n_min: widen the decoding window
        b = tail_bound(epsilon, p, sig) * math.ceil(n / n_min)
        q = n * p + 2 * b + 1
        if q <= q_max:
            break
        if precision is not None or p == 1:
            raise ValueError(
                f"splitmix_parameters: modulus q = {q} exceeds q_max = {q_max} for n = {n}, "
                f"precision {p}; lower the precision or n"
            )
        p = max(1, int(p * q_max / q * 0.99))
    return SplitMixParams(
        n=int(n),
        epsilon=float(epsilon),
        delta=float(delta),
        sigma=int(sig),
        precision=p,
        tail_bound=b,
        modulus=q,
        shares=num_shares(n_min, q, sig),
        delta_split=e1 * 2.0 ** (-sig),
        min_users=n_min,
        delta_sampler=d_sampler,
    )


def check_unit_values(x: np.ndarray, where: str) -> np.ndarray:
    """Values as float64 (one per user) after checking they lie in [0, 1]."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim != 1:
        raise ValueError(f"{where}: records must be one value per user, got shape {a.shape}")
    if a.size and not (np.isfinite(a).all() and a.min() >= 0.0 and a.max() <= 1.0):
        raise ValueError(f"{where}: values must lie in [0, 1]")
    return a


def randomized_rounding(x: np.ndarray, precision: int, rng: np.random.Generator) -> np.ndarray:
    """Unbiased integer rounding of precision * x: E[result] = precision * x."""
    y = np.asarray(x, dtype=np.float64) * precision
    lo = np.floor(y)
    return (lo + (rng.random(y.shape) < (y - lo))).astype(np.int64)


def polya_noise_shares(
    n_total: int, count: int, epsilon: float, precision: int, rng: np.random.Generator
) -> np.ndarray:
    """``count`` users' noise shares Polya(1/n_total, a) - Polya(1/n_total, a), a =
    exp(-eps/precision), from the exact inversion table (:mod:`protocols.summation.polya`);
    n_total of them sum to a discrete Laplace with parameter a."""
    return polya_difference_shares(
        polya_table(int(n_total), float(epsilon), int(precision)), count, rng
    )


def uniform_mod(q: int, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform integers in [0, q) from the OS CSPRNG (64-bit words, exact rejection)."""
    count = int(np.prod(shape)) if shape else 1
    limit = (1 << 64) - ((1 << 64) % q)  # accept words below a multiple of q
    out = np.empty(0, dtype=np.uint64)
    while out.size < count:
        need = count - out.size
        w = np.frombuffer(os.urandom(8 * (need + need // 16 + 8)), dtype="<u8")
        out = (
            np.concatenate([out, w[w < np.uint64(limit)][:need]]) if limit < (1 << 64) else w[:need]
        )
    return (out % np.uint64(q)).astype(np.int64).reshape(shape)


def split_additive(v: np.ndarray, s: int, q: int) -> np.ndarray:
    """(n, s) shares: s - 1 uniform mod q and one making the row sum v mod q."""
    v = np.mod(np.asarray(v, dtype=np.int64), q)
    shares = np.empty((v.shape[0], s), dtype=np.int64)
    shares[:, : s - 1] = uniform_mod(q, (v.shape[0], s - 1))
    shares[:, s - 1] = np.mod(v - np.mod(shares[:, : s - 1].sum(axis=1), q), q)
    return shares


class SplitMixSum(ShuffleProtocol):
    """Split-Mix summation: s additive shares mod q per user, one shuffle batch ``shares``."""

    name = "splitmix-sum"

    def __init__(self, params: SplitMixParams) -> None:
        self.params = params

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("shares", 1, self.params.modulus)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        """Round, add the user's noise share, split into s shares mod q (all users at once)."""
        pr = self.params
        x = check_unit_values(records, "SplitMixSum.encode")
        v = randomized_rounding(x, pr.precision, rng)
        v = v + polya_noise_shares(pr.n_min, x.shape[0], pr.epsilon, pr.precision, rng)
        return {"shares": split_additive(v, pr.shares, pr.modulus).reshape(-1, 1)}

    def decode_sum(self, total_mod_q: int) -> int:
        """The signed noisy integer sum from the sum of all shares mod q."""
        pr = self.params
        t = int(total_mod_q) % pr.modulus
        return t if t <= pr.n * pr.precision + pr.tail_bound else t - pr.modulus

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        pr = self.params
        sh = np.asarray(shuffled["shares"]).reshape(-1)
        ok = (sh >= 0) & (sh < pr.modulus)
        total = int(np.mod(sh[ok], pr.modulus).sum() % pr.modulus)  # < 2^63 for n s < 2^32
        est_sum = self.decode_sum(total) / pr.precision
        return {
            "sum": est_sum,
            "mean": est_sum / pr.n,
            "messages": int(sh.size),
            "invalid_messages": int((~ok).sum()),
            "expected_messages": pr.n * pr.shares,
        }

    def privacy(self) -> dict[str, Any]:
        pr = self.params
        return PrivacyStatement(
            certified_epsilon=pr.epsilon,
            delta=pr.delta_total,
            mechanism="split-mix (IKOS) + distributed discrete Laplace (Polya differences)",
            note="Theorem 9: (eps, (1 + e^eps) 2^-sigma)-DP; s from Balle et al. 1909.11225; "
            "plus the Polya sampler's total variation; noise calibrated for min_users "
            f"({pr.n_min}): its variance is {pr.n / pr.n_min:.4g} x that of one discrete Laplace",
            extra={
                "delta_target": pr.delta,
                **{k: v for k, v in asdict(pr).items() if k not in ("epsilon", "delta")},
            },
        ).wire()

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """The noisy sum: holds when at least n_min users' shares arrived whole; refuses below
        (the distributed noise actually contributed is smaller than calibrated)."""
        pr = self.params
        got = int(counts.get("shares", 0))
        if USERS in counts:  # users whose submissions arrived; a short share count breaks some
            users = int(counts[USERS])
            complete = users - max(0, users * pr.shares - got)
        else:  # worst case: each missing share breaks a different user's sum
            complete = got - pr.n * (pr.shares - 1)
        complete = max(0, complete)
        refuse_below(
            f"{self.name}: users with all {pr.shares} shares", pr.n_min, complete,
            "the Polya noise shares are calibrated for at least min_users users",
        )  # fmt: skip
        return [
            Release(
                "noisy sum (and mean) of the values",
                f"split-mix, {pr.shares} additive shares mod {pr.modulus} per user, distributed "
                f"discrete Laplace (Polya shape 1/{pr.n_min}, a = exp(-eps/{pr.precision}))",
                pr.epsilon, pr.delta_total, pr.n_min, complete,
                "Balle et al. 1909.11225 Thm 1 (s shares) + survey Thm 9 + Polya sampler TV",
            )
        ]  # fmt: skip

    def messages_per_user(self) -> int:
        return self.params.shares


class SingleMessageSum(ShuffleProtocol):
    """Single-message baseline: rounding to k levels, then k-RR on {0..k} through the shuffle.

    The local epsilon is the largest the accountant certifies for (eps, delta) with n users and
    k + 1 values (``bound``, default the variation-ratio bound with GRR's parameters).
    """

    name = "single-message-sum"

    def __init__(
        self,
        n: int,
        epsilon: float,
        delta: float,
        *,
        levels: int | None = None,
        bound: str = "vr",
        min_users: int | None = None,
    ) -> None:
        from protocols.accountant import max_local_epsilon

        self.n, self.epsilon, self.delta, self.bound = int(n), float(epsilon), float(delta), bound
        self.min_users = self.n if min_users is None else int(min_users)
        self.levels = int(levels or max(1, math.ceil(n ** (1 / 3))))
        k = self.levels + 1
        eps_l = max_local_epsilon(epsilon, self.min_users, delta, bound=bound, mechanism="grr", k=k)
        if eps_l is None:
            raise ValueError(
                f"SingleMessageSum: the {bound} bound certifies no local epsilon for eps={epsilon}, "
                f"n={n}, delta={delta}, k={k}"
            )
        self.eps_local = float(eps_l)

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("reports", 1, self.levels + 1)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        from protocols.oracles.grr import grr_perturb

        x = check_unit_values(records, "SingleMessageSum.encode")
        v = randomized_rounding(x, self.levels, rng)
        return {"reports": grr_perturb(v, self.levels + 1, self.eps_local, rng).reshape(-1, 1)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        from protocols.oracles.grr import grr_estimate_from_counts

        k = self.levels + 1
        r = np.asarray(shuffled["reports"]).reshape(-1)
        ok = (r >= 0) & (r < k)
        counts = np.bincount(r[ok], minlength=k).astype(np.float64)
        freqs = grr_estimate_from_counts(counts, self.eps_local, n=self.n)
        est_sum = float(np.dot(freqs, np.arange(k)) * self.n / self.levels)
        return {
            "sum": est_sum,
            "mean": est_sum / self.n,
            "messages": int(r.size),
            "invalid_messages": int((~ok).sum()),
        }

    def privacy(self) -> dict[str, Any]:
        return PrivacyStatement(
            certified_epsilon=self.epsilon,
            delta=self.delta,
            local_epsilon=self.eps_local,
            mechanism=f"grr(k={self.levels + 1}) on rounded values",
            bound=self.bound,
            extra={"min_users": self.min_users},
        ).wire()

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """Shuffled k-RR of the rounded values: re-accounted below ``min_users``."""
        k = self.levels + 1
        return [
            shuffled_release(
                "noisy sum (and mean) of the values",
                f"randomized rounding to {self.levels} levels + {k}-RR, eps_l = "
                f"{self.eps_local:.4g}, uniform shuffle",
                eps_local=self.eps_local,
                eps_planned=self.epsilon,
                delta=self.delta,
                n_accounted=self.min_users,
                n_received=counts.get("reports", 0),
                bound=self.bound,
                accountant={"mechanism": "grr", "k": k},
            )
        ]

    def messages_per_user(self) -> int:
        return 1


def central_laplace_sum(x: np.ndarray, epsilon: float, rng: np.random.Generator) -> float:
    """Trusted-curator baseline: sum of x in [0, 1] plus Laplace(1/eps) noise (sensitivity 1),
    exact discrete noise on the grid 2^-10 (:func:`protocols.oracles.central.laplace_mechanism`)."""
    a = check_unit_values(x, "central_laplace_sum")
    if not epsilon > 0:
        raise ValueError(f"central_laplace_sum: epsilon must be > 0, got {epsilon}")
    return float(laplace_mechanism(np.array([a.sum()]), 1.0, epsilon, rng)[0])
