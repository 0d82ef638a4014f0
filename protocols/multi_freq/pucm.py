"""PUCM: the public-coin count-min protocol of Ghazi, Golowich, Kumar, Pagh, Velingker ("On the
Power of Multiple Anonymous Messages", EUROCRYPT 2021, arXiv 1908.11358, Section 4: the
public-coin multi-message frequency-estimation protocol).

Public coins: tau hash functions h_j : [d] -> [s] (a uniform table drawn from the public
``hash_seed``). A user holding v sends the tau messages (j, h_j(v)), and for every row j and
bucket l independently the message (j, l) with probability gamma (each message is the label
j s + l). Bucket (j, l) then holds the users of the values hashed there plus Bin(users, gamma)
noise. Analyzer (count-min): f_v = max(0, min_j C[j, h_j(v)] - users gamma), users estimated from
the M messages received as M/(tau (1 + s gamma)). The minimum removes hash collisions but is
biased low by the minimum of tau noise draws (about -1.16 sd for tau = 5).

Parameters as the survey authors' group implemented the paper's theorem (DUMP code,
``noname-w/DUMP`` public_coin.py; the paper's body was not reachable here): tau = ceil(ln 2d),
s = 2n buckets, gamma = 90 tau^2 ln(2 tau/delta)/(n eps^2) (``gamma="paper"``; needs gamma <= 1,
i.e. n >= 90 tau^2 ln(2 tau/delta)/eps^2, about 45,000 at eps = 0.9, delta = 1e-6, d = 64), or
``gamma="exact"``: the least gamma our accounting certifies. A user sends tau (1 + s gamma)
messages on average: 2 * 90 tau^3 ln(2 tau/delta)/eps^2 + tau with the paper's constants, whatever
n (about 4.5e5 at the survey's defaults): the protocol targets d > n, where s = 2n < d buckets
compress the domain (the survey excluded it from Fig. 7(b) as "designed for n < d").

Privacy (our accounting, used for every release): neighbours move one unit in each row, from
bucket h_j(x) to h_j(x'); at worst 2 tau distinct buckets change by one, each with independent
Bin(users, gamma) noise: exact binomial divergence per bucket
(:func:`protocols.distributed_noise.binomial.binomial_epsilon` at delta/(2 tau)) and basic
composition over the 2 tau buckets.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee
from protocols.catalogue.inputs import check_values
from protocols.distributed_noise.binomial import binomial_epsilon
from protocols.histograms.hist_mm import one_hot_two_message
from protocols.multi_freq._checks import blanket_privacy, certified, check_setting
from protocols.rng import experiment_rng

GAMMA_MODES = ("paper", "exact")


def paper_gamma(eps: float, delta: float, n: int, tau: int) -> float:
    """gamma = 90 tau^2 ln(2 tau/delta)/(n eps^2) (module docstring)."""
    return 90.0 * tau**2 * math.log(2 * tau / delta) / (n * eps**2)


def pucm_epsilon(delta: float, users: int, gamma: float, tau: int) -> float | None:
    """eps of the 2 tau moved buckets: 2 tau x the binomial epsilon at delta/(2 tau)."""
    e = binomial_epsilon(delta / (2 * tau), int(users), float(gamma))
    return None if e is None else 2 * tau * e


@lru_cache(maxsize=128)
def exact_gamma(eps: float, delta: float, n: int, tau: int) -> float:
    """The least gamma in (0, 1/2] (to 0.1%) that :func:`pucm_epsilon` certifies at n users."""

    def ok(g: float) -> bool:
        e = pucm_epsilon(delta, n, g, tau)
        return e is not None and e <= eps

    if not ok(0.5):
        raise ValueError(f"PUCM: no gamma <= 1/2 certifies eps = {eps} at n = {n}")
    lo, hi = 0.0, 0.5
    while hi - lo > 1e-3 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


class PUCM(CatalogueProtocol):
    """Labels j s + l in batch ``buckets``: tau + Bin(tau s, gamma) messages per user."""

    name = "pucm"
    release_what = "histogram of [d]"
    fixed_messages = False

    def __init__(
        self,
        d: int,
        n: int,
        eps_c: float,
        delta: float,
        gamma: str | float = "paper",
        buckets: int | None = None,
        hash_seed: int = 0,
    ) -> None:
        check_setting("PUCM", d, n, eps_c, delta)
        self.d, self.n, self.eps_c, self.delta = int(d), int(n), float(eps_c), float(delta)
        self.tau = max(1, math.ceil(math.log(2 * self.d)))
        self.s = int(buckets) if buckets is not None else 2 * self.n
        if self.s < 1 or self.tau * self.s >= 2**31 - 1:
            raise ValueError(f"PUCM: buckets must be >= 1 with tau*s < 2^31 - 1, got s={self.s}")
        if gamma == "paper":
            g = paper_gamma(self.eps_c, self.delta, self.n, self.tau)
            if g > 1:
                need = math.ceil(g * self.n)
                raise ValueError(
                    f"PUCM: the paper's gamma = {g:.3g} > 1 at n = {n} (needs n >= {need})"
                )
        elif gamma == "exact":
            g = exact_gamma(self.eps_c, self.delta, self.n, self.tau)
        elif isinstance(gamma, (int, float)) and not isinstance(gamma, bool) and 0 < gamma <= 1:
            g = float(gamma)
        else:
            raise ValueError(
                f"PUCM: gamma must be one of {GAMMA_MODES} or in (0, 1], got {gamma!r}"
            )
        self.gamma, self.gamma_mode = float(g), gamma if isinstance(gamma, str) else "given"
        self.hash_seed = int(hash_seed)
        rng = experiment_rng(self.hash_seed, "pucm-public-hashes", self.d, self.s, self.tau)
        self.hashes = rng.integers(0, self.s, size=(self.tau, self.d), dtype=np.int64)

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("buckets", 1, self.tau * self.s)]

    def signal_labels(self, values: np.ndarray) -> np.ndarray:
        """(n, tau) labels j s + h_j(v) of the users' own messages."""
        return self.hashes[:, values].T + np.arange(self.tau, dtype=np.int64) * self.s

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        v = check_values(records, self.d, "PUCM.encode")
        own = self.signal_labels(v)
        # label j s + l w.p. gamma for every user and label, plus the user's first own label
        first_and_noise = one_hot_two_message(own[:, 0], self.tau * self.s, self.gamma, rng)
        labels = np.concatenate([first_and_noise, own[:, 1:].reshape(-1)])
        return {"buckets": labels.reshape(-1, 1)}

    def estimate(self, bucket_counts: np.ndarray, messages: int) -> np.ndarray:
        """Count-min estimate from the (tau, s) bucket counts and the messages received."""
        c = np.asarray(bucket_counts, dtype=np.float64).reshape(self.tau, self.s)
        users = messages / (self.tau * (1.0 + self.s * self.gamma))
        rows = c[np.arange(self.tau)[:, None], self.hashes]  # (tau, d)
        return np.maximum(rows.min(axis=0) - users * self.gamma, 0.0)

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        m = shuffled.get("buckets")
        if m is None:
            raise ValueError("PUCM analyzer: no 'buckets' batch received")
        v = np.asarray(m).reshape(-1)
        ok = (v >= 0) & (v < self.tau * self.s)
        c = np.bincount(v[ok], minlength=self.tau * self.s)
        good = int(ok.sum())
        if good == 0:
            raise ValueError("PUCM analyzer: no well-formed message")
        return {
            "counts": self.estimate(c, good).tolist(),
            "messages": good,
            "invalid": int((~ok).sum()),
        }

    def simulate_counts(
        self, values: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, int]:
        """(bucket counts, messages) distributed as the histogram of the shuffled messages: the
        users' own labels counted plus Bin(n, gamma) per bucket (for sizes where the messages
        themselves, tau (1 + s gamma) per user, cannot be materialized)."""
        v = check_values(values, self.d, "PUCM.simulate_counts")
        own = self.signal_labels(v).reshape(-1)
        counts = np.bincount(own, minlength=self.tau * self.s)
        counts = counts + rng.binomial(v.size, self.gamma, size=self.tau * self.s)
        return counts, int(counts.sum())

    def messages_per_user(self) -> float:
        return self.tau * (1.0 + self.s * self.gamma)

    def bits_per_user(self) -> float:
        return self.messages_per_user() * math.ceil(math.log2(self.tau * self.s))

    def max_messages(self) -> dict[str, int]:
        return {"buckets": self.tau * (1 + self.s)}

    def mechanism(self) -> str:
        return (
            f"count-min: {self.tau} public hash rows of {self.s} buckets, each blanketed by "
            f"Bernoulli({self.gamma:.4g}) messages of every user"
        )

    def guarantee(self, users: int) -> Guarantee:
        e = pucm_epsilon(self.delta, users, self.gamma, self.tau)
        theorem = "pucm exact binomial x 2 tau (basic composition)"
        return certified(e, self.delta, users, "bucket noise", theorem)

    def privacy(self) -> dict[str, Any]:
        return blanket_privacy(
            self,
            "exact binomial divergence per moved bucket, basic composition over 2 tau",
            gamma=self.gamma,
            gamma_mode=self.gamma_mode,
            tau=self.tau,
            buckets=self.s,
        )
