"""FE1 exactly as its authors implement it (Luo, Wang, Yi, "Frequency Estimation in the Shuffle
Model with Almost a Single Message", CCS 2022; code ``hkustDB/SDPFE`` ``FE/fe.cpp``; extract in
``../shared/papers/luo-wang-yi-fe1.md``). ``hist_lwy`` (:mod:`protocols.almost_single.lwy`) is our
earlier construction from the abstract, kept as a variant (identity below the hash range, our
accountant's blanket, c = 2).

Public parameters: n users, domain [B] (our values 0..B-1 are the authors' ids 1..B), the
utility exponent c, b = floor(n / ln(n)^c), q the smallest prime above max(B, b), the blanket
mass mu (the authors' binomial condition, :func:`protocols.almost_single.binomial_mu.authors_mu`,
or with ``blanket="exact"`` the smallest mu our exact accountant accepts) and the dummy rate
rho = mu b / n.

Randomizer: (u, v, h_{u,v}(x)) with u uniform in [1, q), v uniform in Z_q (the authors draw v in
[1, q], the same residues), plus floor(rho) + Bernoulli(rho - floor(rho)) dummies (u, v, w) with
w uniform in [0, b).

Analyzer: c_y for every id y at once (:func:`protocols.almost_single.modhash.decode_range`) when
B <= 2^24, else for a public candidate list; f_y = (c_y - mu - n p_col) / (1 - p_col). (The
authors' loop also votes for ids with w + j b >= q, a vote outside the message's residue class,
adding about 0.03 to every c=1 count; ours does not.)

Privacy: our exact blanket accountant (:func:`protocols.almost_single.blanket.blanket_epsilon`,
the target's message among the blanket; an upper bound with hashing) gives the stated epsilon at
delta; :meth:`FE1.privacy` reports it beside the authors' condition and both blanket masses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from protocols.accountant.survey import robust_users
from protocols.almost_single.binomial_mu import authors_mu, binomial_condition
from protocols.almost_single.blanket import blanket_delta, blanket_epsilon, blanket_rate
from protocols.almost_single.frontier import FrontierProtocol
from protocols.almost_single.modhash import (
    collision_probability,
    count_candidates,
    decode_range,
    fe1_hash,
)
from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import Guarantee
from protocols.oracles.olh import next_prime
from protocols.privacy.record import FRONTIER

BATCH = "reports"
FULL_DECODE_MAX = 1 << 24  # domains up to this size are estimated in full
BLANKETS = ("authors", "exact")


# the accountant's searches, cached: the gate, the report and privacy() ask the same question
_epsilon = lru_cache(maxsize=64)(blanket_epsilon)
_rate = lru_cache(maxsize=64)(blanket_rate)
_authors_mu = lru_cache(maxsize=64)(authors_mu)


@dataclass(frozen=True)
class FE1Parameters:
    """FE1's public parameters (module docstring)."""

    n: int
    B: int
    c: float
    b: int
    q: int
    mu: float
    pcol: float
    blanket: str

    @property
    def rho(self) -> float:
        return self.mu * self.b / self.n


@lru_cache(maxsize=32)
def fe1_parameters(
    n: int, B: int, eps: float, delta: float, c: float, blanket: str = "authors", gamma: float = 1.0
) -> FE1Parameters:
    """b, q, mu, p_col for n users, domain [B], (eps, delta) and exponent c."""
    if int(n) != n or n < 3 or int(B) != B or B < 2:
        raise ValueError(f"FE1: need users >= 3 and domain >= 2, got n={n}, B={B}")
    if not (eps > 0 and math.isfinite(eps)) or not 0 < delta < 1:
        raise ValueError(f"FE1: need eps > 0 and delta in (0, 1), got {eps}, {delta}")
    if not c > 0:
        raise ValueError(f"FE1: the hash exponent c must be > 0, got {c}")
    if blanket not in BLANKETS:
        raise ValueError(f"FE1: blanket must be one of {BLANKETS}, got {blanket!r}")
    b = max(2, int(n / math.log(n) ** c))
    q = next_prime(max(B, b) + 1)
    if q >= 1 << 31:
        raise ValueError(f"FE1: domain {B} too large (the prime {q} must stay below 2^31)")
    pcol = collision_probability(q, b)
    if blanket == "authors":
        mu = _authors_mu(eps, delta, n)
    else:
        mu = _rate(eps, delta, robust_users(n, gamma), b, pcol) * n / b
    return FE1Parameters(int(n), int(B), float(c), b, q, float(mu), pcol, blanket)


class FE1(FrontierProtocol):
    """1 + K messages (u, v, w) per user in batch ``reports`` (module docstring)."""

    name = "fe1"
    fixed_messages = False
    release_what = "frequency of every item of [B] (or of the candidates)"
    candidates: np.ndarray | None = None  # from_parameters: every item of [B]

    def __init__(
        self,
        B: int,
        n: int,
        eps_c: float,
        delta: float,
        c: float = 1.0,
        blanket: str = "authors",
        gamma: float = 1.0,
        candidates: np.ndarray | None = None,
    ) -> None:
        p = fe1_parameters(int(n), int(B), float(eps_c), float(delta), float(c), blanket, gamma)
        self.set_parameters(p, eps_c, delta, gamma)
        self.candidates = None if candidates is None else np.asarray(candidates, dtype=np.int64)
        if self.candidates is None and self.B > FULL_DECODE_MAX:
            raise ValueError(
                f"FE1: a domain of {self.B} > 2^24 items is estimated through a candidate list"
            )
        if self.candidates is not None and (
            self.candidates.ndim != 1
            or (self.candidates < 0).any()
            or (self.candidates >= self.B).any()
        ):
            raise ValueError(f"FE1: candidates must be a list of items in [0, {self.B})")

    @property
    def rho(self) -> float:
        return self.p.rho

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec(BATCH, 3, self.p.q)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        x = np.asarray(records, dtype=np.int64).reshape(-1)
        if x.size and (x.min() < 0 or x.max() >= self.B):
            raise ValueError(f"FE1.encode: values must lie in [0, {self.B})")
        q, b, rho = self.p.q, self.p.b, self.rho
        whole = math.floor(rho)
        dummies = int(whole * x.size + (rng.random(x.size) < rho - whole).sum())
        u = rng.integers(1, q, x.size + dummies, dtype=np.int64)
        v = rng.integers(0, q, x.size + dummies, dtype=np.int64)
        w = np.concatenate(
            [fe1_hash(u[: x.size], v[: x.size], x + 1, q, b), rng.integers(0, b, dummies)]
        )
        return {BATCH: np.stack([u, v, w], axis=1)}

    def _messages(self, shuffled: Batches) -> tuple[np.ndarray, int]:
        m = shuffled.get(BATCH)
        if m is None:
            raise ValueError(f"FE1 analyzer: no {BATCH!r} batch received")
        r = np.asarray(m, dtype=np.int64).reshape(-1, 3)
        q, b = self.p.q, self.p.b
        ok = (r[:, 0] >= 1) & (r[:, 0] < q) & (r[:, 1] >= 0) & (r[:, 1] < q)
        ok &= (r[:, 2] >= 0) & (r[:, 2] < b)
        return r[ok], int((~ok).sum())

    def supports(self, shuffled: Batches) -> tuple[np.ndarray, int]:
        """(c_y for every item, or every candidate; malformed messages)."""
        r, bad = self._messages(shuffled)
        q, b = self.p.q, self.p.b
        if self.candidates is None:
            return decode_range(r[:, 0], r[:, 1], r[:, 2], q, b, 1, self.B + 1), bad
        return count_candidates(r[:, 0], r[:, 1], r[:, 2], q, b, self.candidates + 1), bad

    def estimate(self, support: np.ndarray) -> np.ndarray:
        """f_y = (c_y - mu - n p_col) / (1 - p_col) (the authors' estimator)."""
        p = self.p
        return (np.asarray(support, dtype=np.float64) - p.mu - p.n * p.pcol) / (1 - p.pcol)

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        support, bad = self.supports(shuffled)
        out: dict[str, Any] = {"counts": self.estimate(support).tolist(), "invalid": bad}
        if self.candidates is not None:
            out["candidates"] = self.candidates.tolist()
        return out

    def count_variance(self, true_counts: np.ndarray) -> np.ndarray:
        """Variance of each estimate given the true counts (blanket hits + collisions)."""
        c = np.asarray(true_counts, dtype=np.float64)
        p = self.p
        whole, frac, g = math.floor(self.rho), self.rho - math.floor(self.rho), 1 / p.b
        hits = p.n * whole * g * (1 - g) + p.n * frac * g * (1 - frac * g)
        return (hits + (p.n - c) * p.pcol * (1 - p.pcol)) / (1 - p.pcol) ** 2

    def messages_per_user(self) -> float:
        return 1.0 + self.rho

    def bits_per_user(self) -> float:
        per = 2 * math.ceil(math.log2(self.p.q)) + math.ceil(math.log2(self.p.b))
        return self.messages_per_user() * per

    def max_messages(self) -> dict[str, int]:
        return {BATCH: 1 + math.ceil(self.rho)}

    def mechanism(self) -> str:
        p = self.p
        return (
            f"FE1 (Luo-Wang-Yi): hash ((u x + v) mod {p.q}) mod {p.b}, c={p.c:g}, "
            f"{p.blanket} blanket mu={p.mu:.4g}, rho={self.rho:.4g} per user"
        )

    def _blanket_users(self) -> int:
        return robust_users(self.n, self.gamma)

    def guarantee(self, users: int) -> Guarantee:
        m = min(int(users), self._blanket_users())
        eps = _epsilon(self.delta, m, self.rho, self.p.b, self.p.pcol)
        return Guarantee(eps, self.delta, "exact blanket accountant (FE1)", note=f"{m} users")

    def privacy(self) -> dict[str, Any]:
        """Our exact accountant's statement beside the authors' binomial condition."""
        p, m = self.p, self._blanket_users()
        exact_mu = _rate(self.eps_c, self.delta, m, p.b, p.pcol) * p.n / p.b
        authors = _authors_mu(self.eps_c, self.delta, p.n)
        eps_exact = _epsilon(self.delta, m, self.rho, p.b, p.pcol)
        return self.statement(
            {"gamma": self.gamma, "b": p.b, "q": p.q, "collision": p.pcol, "mu": p.mu,
             "rho": self.rho, "blanket": p.blanket,
             "exact_delta_at_target": blanket_delta(self.eps_c, m, self.rho, p.b, p.pcol),
             "authors_condition_at_mu": binomial_condition(p.mu / p.n, p.n, self.eps_c),
             "mu_authors": authors, "mu_exact": exact_mu,
             "smaller_mu": "exact accountant" if exact_mu < authors else "authors' condition"},
            certified_epsilon=eps_exact, target_epsilon=self.eps_c, local_epsilon=None,
            names=FRONTIER,
        )  # fmt: skip
