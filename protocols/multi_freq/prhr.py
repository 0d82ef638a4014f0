"""PRHR: the private-randomness Hadamard-response protocol of Ghazi, Golowich, Kumar, Pagh,
Velingker ("On the Power of Multiple Anonymous Messages", EUROCRYPT 2021, arXiv 1908.11358,
Section 4: the private-coin multi-message frequency-estimation protocol).

Randomizer. Value v in [d] has the Hadamard codeword C_v (half of [2^L], 2^L >= d + 1,
:mod:`protocols.multi_freq.hadamard`). A user holding v sends one tuple of tau independent
uniform elements of C_v, and rho tuples uniform on [2^L]^tau (the blanket): 1 + rho messages of
tau L bits. Analyzer: count_v = how many received tuples lie in C_v^tau. A tuple of a user with a
value other than v lies there with probability 2^-tau (a uniform element of C_x is in C_v with
probability 1/2), a noise tuple also, so with M tuples received the unbiased estimate is

    f_v = (count_v - M 2^-tau)/(1 - 2^-tau),  Var = (M - f_v) 2^-tau/(1 - 2^-tau)
    (count_v - f_v is Bin(M - f_v, 2^-tau)).

Parameters. tau = ceil(log2 n) (so each codeword catches about rho noise tuples) and
rho = ceil(36 ln(1/delta)/eps^2) (``rho="paper"``, the constants of the private-coin theorem as
the survey authors' group implemented it in the DUMP code, ``noname-w/DUMP`` private_coin.py; the
paper's body was not reachable here, see docs/survey.md), or ``rho="exact"``: the least rho whose
exact blanket accounting (:mod:`protocols.multi_freq.prhr_privacy`) certifies (eps_c, delta).
Releases are always accounted by that exact analysis at the users received, never by the
asymptotic theorem.

Cost. Every user's encoder is O((1 + rho) tau) bit operations; the analyzer ANDs one table row
of ceil(d/64) words per coordinate and drops a tuple as soon as no codeword can hold it, so a
noise tuple costs about log2(2^L) + 1 columns. The survey's C10 (5 h and 22 GB to encode 30% of
the users at Fig. 7(b)) is measured against this in scripts/bench_prhr.py.
"""

from __future__ import annotations

import math
import time
from functools import lru_cache
from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee
from protocols.catalogue.inputs import check_values
from protocols.multi_freq._checks import blanket_privacy, certified, check_setting
from protocols.multi_freq.hadamard import (
    count_members,
    hadamard_order,
    membership_masks,
    to_codeword,
    uniform_columns,
)
from protocols.multi_freq.prhr_privacy import prhr_epsilon

RHO_MODES = ("paper", "exact")
BLOCK_MESSAGES = 1 << 22  # tuples encoded and counted at once by ``simulate_blocks``


def paper_rho(eps: float, delta: float) -> int:
    """rho = ceil(36 ln(1/delta)/eps^2) (module docstring)."""
    return math.ceil(36.0 * math.log(1.0 / delta) / eps**2)


@lru_cache(maxsize=128)
def exact_rho(eps: float, delta: float, n: int, tau: int, rho_max: int) -> int:
    """The least rho <= rho_max whose exact accounting gives eps <= eps_c at n users."""

    def ok(r: int) -> bool:
        e = prhr_epsilon(delta, n, r, tau)
        return e is not None and e <= eps

    # twice the Gaussian guess (a - b of variance 2 lambda, lambda = n rho 2^-tau noise tuples
    # per region, eps ~ sqrt(2 ln(1/delta)) sqrt(2/lambda)) brackets it in practice
    guess = math.ceil(2 * 4 * math.log(1 / delta) * 2.0**tau / (n * eps**2))
    hi = min(rho_max, max(1, guess))
    if not ok(hi):
        hi = rho_max
        if not ok(hi):
            raise ValueError(f"PRHR: even rho = {rho_max} does not certify eps = {eps} at n = {n}")
    lo = 0  # ok(hi), not ok(lo) (rho = 0 has no blanket)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


class PRHR(CatalogueProtocol):
    """1 + rho tuples of tau Hadamard columns per user in batch ``tuples`` (module docstring)."""

    name = "prhr"
    release_what = "histogram of [d]"

    def __init__(
        self,
        d: int,
        n: int,
        eps_c: float,
        delta: float,
        rho: str | int = "paper",
        tau: int | None = None,
    ) -> None:
        check_setting("PRHR", d, n, eps_c, delta)
        self.d, self.n, self.eps_c, self.delta = int(d), int(n), float(eps_c), float(delta)
        self.order = hadamard_order(self.d)
        self.tau = int(tau) if tau is not None else max(1, math.ceil(math.log2(self.n)))
        if self.tau < 1:
            raise ValueError(f"PRHR: tau must be >= 1, got {tau}")
        if rho == "paper":
            self.rho = paper_rho(self.eps_c, self.delta)
        elif rho == "exact":
            self.rho = exact_rho(
                self.eps_c, self.delta, self.n, self.tau, paper_rho(self.eps_c, self.delta)
            )
        elif isinstance(rho, (int, np.integer)) and not isinstance(rho, bool) and rho >= 1:
            self.rho = int(rho)
        else:
            raise ValueError(
                f"PRHR: rho must be one of {RHO_MODES} or an integer >= 1, got {rho!r}"
            )
        self.rho_mode = rho if isinstance(rho, str) else "given"
        self._masks: np.ndarray | None = None

    # -- encoder and analyzer (shared by the simulation and the networked run) -------------
    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("tuples", self.tau, 1 << self.order)]

    def encode_compact(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The users' 1 + rho tuples each, as (n (1 + rho), tau) columns of a compact dtype."""
        v = check_values(values, self.d, "PRHR.encode")
        t = uniform_columns((v.size * (1 + self.rho), self.tau), self.order, rng)
        to_codeword(t[: v.size], v)  # the users' own tuples first, in place: one array in all
        return t

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        return {"tuples": self.encode_compact(records, rng).astype(np.int64)}

    def masks(self) -> np.ndarray:
        """The analyzer's table: per column, the values whose codeword holds it."""
        if self._masks is None:
            self._masks = membership_masks(self.d, self.order)
        return self._masks

    def codeword_counts(self, tuples: np.ndarray) -> tuple[np.ndarray, int, int]:
        """(count_v per value, well-formed tuples, malformed rows) of a batch of tuples."""
        t = np.asarray(tuples)
        if t.ndim != 2 or t.shape[1] != self.tau:
            raise ValueError(
                f"PRHR analyzer: tuples must have shape (M, {self.tau}), got {t.shape}"
            )
        bound, bad = 1 << self.order, 0
        if t.size and (t.min() < 0 or t.max() >= bound):  # reductions first: no M x tau masks
            ok = ((t >= 0) & (t < bound)).all(axis=1)
            t, bad = t[ok], int((~ok).sum())
        return count_members(t, self.masks(), self.d), int(t.shape[0]), bad

    def estimate(self, counts: np.ndarray, tuples: int) -> np.ndarray:
        """Unbiased counts (count_v - M 2^-tau)/(1 - 2^-tau) from M well-formed tuples."""
        h = 2.0**-self.tau
        return (np.asarray(counts, dtype=np.float64) - tuples * h) / (1.0 - h)

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        t = shuffled.get("tuples")
        if t is None:
            raise ValueError("PRHR analyzer: no 'tuples' batch received")
        counts, m, bad = self.codeword_counts(t)
        if m == 0:
            raise ValueError("PRHR analyzer: no well-formed tuple")
        return {"counts": self.estimate(counts, m).tolist(), "tuples": m, "invalid": bad}

    def simulate_blocks(
        self,
        values: np.ndarray,
        rng: np.random.Generator,
        block: int = BLOCK_MESSAGES,
        clock: Any = time.process_time,
    ) -> tuple[np.ndarray, float, int]:
        """The encoder and analyzer over blocks of users (the tuples of all users never sit in
        memory at once; counting is additive, so the estimate is that of one analyzer call).
        Returns (estimate, analyzer seconds by ``clock``, tuples)."""
        v = check_values(values, self.d, "PRHR.simulate_blocks")
        per = max(1, block // (1 + self.rho))
        counts = np.zeros(self.d, dtype=np.int64)
        rows, spent = 0, 0.0
        for s in range(0, v.size, per):
            t = self.encode_compact(v[s : s + per], rng)
            t0 = clock()
            c, m, _ = self.codeword_counts(t)
            counts += c
            spent += clock() - t0
            rows += m
        t0 = clock()
        est = self.estimate(counts, rows)
        return est, spent + clock() - t0, rows

    def count_variance(self, true_counts: np.ndarray) -> np.ndarray:
        """Exact variance of each estimate: (M - f_v) h (1 - h)/(1 - h)^2, h = 2^-tau."""
        f = np.asarray(true_counts, dtype=np.float64)
        m = int(f.sum()) * (1 + self.rho)
        h = 2.0**-self.tau
        return (m - f) * h / (1.0 - h)

    # -- costs and privacy ------------------------------------------------------------------
    def messages_per_user(self) -> float:
        return float(1 + self.rho)

    def bits_per_user(self) -> float:
        return float((1 + self.rho) * self.tau * self.order)

    def max_messages(self) -> dict[str, int]:
        return {"tuples": 1 + self.rho}

    def mechanism(self) -> str:
        return (
            f"Hadamard response: 1 codeword tuple + {self.rho} uniform tuples of tau={self.tau} "
            f"columns of [2^{self.order}]"
        )

    def guarantee(self, users: int) -> Guarantee:
        e = prhr_epsilon(self.delta, users, self.rho, self.tau)
        return certified(e, self.delta, users, "noise", "prhr exact blanket (noise tuples)")

    def privacy(self) -> dict[str, Any]:
        return blanket_privacy(
            self,
            "exact blanket accounting of the noise tuples (prhr_privacy)",
            rho=self.rho,
            rho_mode=self.rho_mode,
            tau=self.tau,
            hadamard_order=self.order,
        )
