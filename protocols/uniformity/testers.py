"""PUT and AUT: robust shuffle-private uniformity testers on noisy bin counts.

Encoding (the survey: "encodes the data and applies Cnt_SGM / Cnt_BN to every encoded bit"): a
user's value v in [k] goes to bin b(v) of a public balanced partition of [k] into B bins (B = k
by default; B must divide k, so the uniform distribution on [k] is uniform on the bins), one-hot.
Each bin's count is released by a robust counter: PUT runs Cnt_SGM's robust Split-Mix per bin
(batches ``bin{j}``, pure eps/2 per bin), AUT sends Cnt_BN's binomial noise per bin as labels
(one batch ``labels``: the user's bin plus B t noise slots, each the bin's label with probability
p or the dummy label B, so every user sends exactly 1 + B t messages). Replace-one neighbours
change two bins by one, so the bins at eps/2 (and delta/2 for AUT) compose to (eps, delta); the
guarantees are robust for a fraction gamma of honest users like the counters'.

Test: with noisy counts c^_j (noise of known variance v), T = sum_j (c^_j - n/B)^2 - n (1 - 1/B) -
B v has mean 0 under uniformity and mean (n^2 - n) ||pi - u||^2 otherwise. The tester rejects
uniformity when T exceeds tau, the (1 - size) quantile of T under the null, estimated at
construction by simulating the exact law of the counts (multinomial + the protocol's noise) with a
fixed public seed, so the analyzer is deterministic. (The SODA 2021 text was not reachable; this
is the standard collision/chi-square tester of the pan-private line of work, on the survey's
encoding; docs/survey.md says so.)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from protocols.accountant.survey import robust_users, theorem9
from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee
from protocols.catalogue.inputs import check_values, label_counts
from protocols.counting.cnt_bn import binomial_noise_rate
from protocols.distributed_noise.binomial import binomial_epsilon
from protocols.distributed_noise.robust_splitmix import (
    decode_sum,
    encode_values,
    guarantee_at,
    robust_splitmix_parameters,
)

NULL_DRAWS = 4000
NULL_SEED = 20040


def balanced_partition(k: int, bins: int, seed: int = 0) -> np.ndarray:
    """Public map [k] -> [bins], each bin receiving k/bins values (a seeded permutation)."""
    if int(bins) != bins or bins < 2 or k % bins:
        raise ValueError(f"uniformity: bins must be >= 2 and divide k = {k}, got {bins}")
    perm = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(7,))).permutation(k)
    return (perm // (k // bins)).astype(np.int64)


def collision_statistic(counts: np.ndarray, n: int, noise_var: float) -> float:
    """T = sum (c_j - n/B)^2 - n (1 - 1/B) - B v (mean 0 under uniformity)."""
    c = np.asarray(counts, dtype=np.float64)
    b = c.size
    return float(np.sum((c - n / b) ** 2) - n * (1 - 1 / b) - b * noise_var)


class _Tester(CatalogueProtocol):
    """Shared test logic; subclasses provide the per-bin counter."""

    release_what = "noisy bin counts and the uniformity decision"

    def _setup(self, k: int, n: int, eps: float, bins: int | None, gamma: float, size: float):
        if int(n) != n or n < 3:
            raise ValueError(f"uniformity: n must be an integer >= 3, got {n}")
        if not 0 < size < 1:
            raise ValueError(f"uniformity: size must lie in (0, 1), got {size}")
        self.k, self.n, self.eps_c, self.gamma, self.size = int(k), int(n), float(eps), gamma, size
        self.bins = int(bins or k)
        self.partition = balanced_partition(self.k, self.bins)
        self.min_users = robust_users(self.n, gamma)

    def sample_noise(
        self, rng: np.random.Generator, shape: tuple[int, ...], users: int
    ) -> np.ndarray:
        raise NotImplementedError

    def noise_variance(self, users: int) -> float:
        raise NotImplementedError

    def sample_statistic(
        self, pi: np.ndarray, n: int, rng: np.random.Generator, draws: int
    ) -> np.ndarray:
        """``draws`` values of T with n users drawn from ``pi`` over the bins (exact law)."""
        counts = rng.multinomial(n, pi, size=draws).astype(np.float64)
        noisy = counts + self.sample_noise(rng, counts.shape, n)
        v = self.noise_variance(n)
        b = self.bins
        return np.sum((noisy - n / b) ** 2, axis=1) - n * (1 - 1 / b) - b * v

    def _threshold(self) -> float:
        rng = np.random.default_rng(NULL_SEED)
        t = self.sample_statistic(np.full(self.bins, 1 / self.bins), self.n, rng, NULL_DRAWS)
        return float(np.quantile(t, 1 - self.size))

    def decide(self, noisy_counts: np.ndarray, users: int) -> dict[str, Any]:
        t = collision_statistic(noisy_counts, users, self.noise_variance(users))
        return {
            "bin_counts": np.asarray(noisy_counts, dtype=np.float64).tolist(),
            "statistic": t,
            "threshold": self.threshold,
            "reject_uniform": bool(t > self.threshold),
            "users": users,
        }


class PUT(_Tester):
    """Robust pure tester: one robust Split-Mix count per bin (batches ``bin0``..)."""

    name = "put"

    def __init__(
        self,
        k: int,
        n: int,
        eps: float,
        bins: int | None = None,
        gamma: float = 1.0,
        size: float = 0.1,
        delta_split: float = 1e-12,
    ) -> None:
        self._setup(k, n, eps, bins, gamma, size)
        self.params = robust_splitmix_parameters(
            self.n, self.eps_c / 2, gamma=gamma, delta_split=delta_split / self.bins
        )
        self.threshold = self._threshold()

    def sample_noise(
        self, rng: np.random.Generator, shape: tuple[int, ...], users: int
    ) -> np.ndarray:
        r, a = users / self.params.min_users, self.params.alpha
        return (
            rng.negative_binomial(r, 1 - a, shape) - rng.negative_binomial(r, 1 - a, shape)
        ).astype(np.float64)

    def noise_variance(self, users: int) -> float:
        return self.params.noise_variance(users)

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec(f"bin{j}", 1, self.params.modulus) for j in range(self.bins)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        v = check_values(records, self.k, "PUT.encode")
        b = self.partition[v]
        return {
            f"bin{j}": encode_values((b == j).astype(np.int64), self.params, rng)
            for j in range(self.bins)
        }

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        counts, rows = [], []
        for j in range(self.bins):
            sh = shuffled.get(f"bin{j}")
            if sh is None:
                raise ValueError(f"PUT analyzer: no 'bin{j}' batch received")
            counts.append(decode_sum(sh, self.params)[0])
            rows.append(np.asarray(sh).shape[0])
        users = min(rows) // self.params.shares
        return self.decide(np.asarray(counts, dtype=np.float64), users)

    def messages_per_user(self) -> float:
        return float(self.bins * self.params.shares)

    def bits_per_user(self) -> float:
        return self.messages_per_user() * math.ceil(math.log2(self.params.modulus))

    def max_messages(self) -> dict[str, int]:
        return {f"bin{j}": self.params.shares for j in range(self.bins)}

    def mechanism(self) -> str:
        p = self.params
        return f"{self.bins} bins x robust split-mix (s={p.shares}, alpha={p.alpha:.4g})"

    def guarantee(self, users: int) -> Guarantee:
        eps_b, _, note = guarantee_at(self.params, users)
        sigma = math.floor(
            (
                (self.params.shares - 1) * (math.log2(users) - math.log2(math.e))
                - math.log2(self.params.modulus)
            )
            / 2
        )
        sigma = min(sigma, self.params.sigma)
        eps, delta = theorem9(2 * eps_b, 0.0, self.bins * 2.0 ** (-sigma))
        return Guarantee(eps, delta, "2 bins x (Thm 8 pure) + Thm 9 over all bins", "upper", note)

    def privacy(self) -> dict[str, Any]:
        g = self.guarantee(self.n)
        own = {"gamma": self.gamma, "bins": self.bins, "shares_per_bin": self.params.shares}
        return self.statement(own, certified_epsilon=g.eps, delta=g.delta, local_epsilon=None)


class AUT(_Tester):
    """Robust approximate tester: binomial noise labels per bin (batch ``labels``)."""

    name = "aut"

    def __init__(
        self,
        k: int,
        n: int,
        eps: float,
        delta: float,
        bins: int | None = None,
        gamma: float = 1.0,
        size: float = 0.1,
        accounting: str = "exact",
    ) -> None:
        self._setup(k, n, eps, bins, gamma, size)
        self.delta, self.accounting = float(delta), accounting
        self.t, self.p = binomial_noise_rate(
            self.eps_c / 2, self.delta / 2, self.min_users, accounting
        )
        self.threshold = self._threshold()

    def sample_noise(
        self, rng: np.random.Generator, shape: tuple[int, ...], users: int
    ) -> np.ndarray:
        m = users * self.t
        return rng.binomial(m, self.p, shape) - m * self.p

    def noise_variance(self, users: int) -> float:
        return users * self.t * self.p * (1 - self.p)

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("labels", 1, self.bins + 1)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        v = check_values(records, self.k, "AUT.encode")
        own = self.partition[v]
        noise = rng.random((v.size, self.bins, self.t)) < self.p
        labels = np.where(noise, np.arange(self.bins)[None, :, None], self.bins).reshape(v.size, -1)
        return {"labels": np.concatenate([own[:, None], labels], axis=1).reshape(-1, 1)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        c, bad = label_counts(shuffled, "labels", self.bins + 1, "AUT analyzer")
        users = int(c.sum()) // (1 + self.bins * self.t)
        noisy = c[: self.bins] - users * self.t * self.p
        return self.decide(noisy, users) | {"invalid": bad}

    def messages_per_user(self) -> float:
        return float(1 + self.bins * self.t)

    def bits_per_user(self) -> float:
        return self.messages_per_user() * math.ceil(math.log2(self.bins + 1))

    def max_messages(self) -> dict[str, int]:
        return {"labels": 1 + self.bins * self.t}

    def mechanism(self) -> str:
        return f"{self.bins} bins x {self.t} Bernoulli({self.p:.4g}) noise labels"

    def guarantee(self, users: int) -> Guarantee:
        if users >= self.min_users:
            return Guarantee(self.eps_c, self.delta, f"2 bins x {self.accounting} binomial")
        e = binomial_epsilon(self.delta / 2, users * self.t, self.p)
        if e is None:
            raise ValueError(f"binomial noise of {users} users gives no finite epsilon")
        return Guarantee(
            2 * e, self.delta, "2 bins x exact binomial", note=f"re-accounted at {users}"
        )

    def privacy(self) -> dict[str, Any]:
        own = {"gamma": self.gamma, "bins": self.bins, "noise_slots": self.t, "p": self.p}
        return self.statement(own, local_epsilon=None)
