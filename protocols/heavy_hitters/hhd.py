"""HHD: heavy hitters over huge domains with o(1) messages per user (Luo, Wang, Yi, CCS 2022;
code ``hkustDB/SDPFE`` ``HHD/hhd.cpp``; extract in ``../shared/papers/luo-wang-yi-fe1.md``).

Public parameters (the authors' settings): threshold phi (report items of frequency >= phi n),
t = ceil(log2 B), s = min(ceil(log2(n / (phi log2 n))), t - 1), hash range
b = ceil(n / (log2 n)^2), filter probability
p_f = min(8 (t-s)/(phi n) ln((t-s)/(0.1 phi)), 30 (t-s)/(phi n) ln(phi B)) (capped at 1), FE1
per level with n' = floor(n / (2 (t - s))) users and (eps, delta/2): mu from the authors'
condition at n' (:func:`protocols.almost_single.binomial_mu.authors_mu`, HHD variant),
rho = mu b / n', q_l the smallest prime above 2^l; count threshold Delta = ceil(p_f phi n').

Randomizer: a uniform level l in s..t-1; FE1 on the prefix x >> (t - l) modulo q_l (the real
message and rho dummies in expectation); every message is sent independently with probability
p_f. A message is (l, u_hi, u_lo, v_hi, v_lo, w): u and v (below 2^48) in two 24-bit limbs, so
every component fits the MPC shuffler's field. Expected messages per user: (1 + rho) p_f (the
authors print rho p_f, their "filter messages" 0.401 at n = 10^7).

Analyzer (prefix tree): count every prefix of level s (FE1's full decoding) and keep those with
count >= Delta; at each level l = s+1..t-1 keep the children 2i, 2i+1 of the survivors whose
level-l count is >= Delta; output both children of every survivor of level t-1.

Privacy: the target's level is public and data-independent; its other users' blankets at that
level number M ~ Bin(n - 1, 1/(t - s)). Filtering is post-processing. The exact blanket
accountant (:func:`protocols.almost_single.blanket.blanket_epsilon`) at n' users and delta/2,
checked at every level's collision probability, plus P[M < n'] <= delta/2 (computed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.stats import binom

from protocols.almost_single.binomial_mu import authors_mu
from protocols.almost_single.blanket import blanket_delta, blanket_epsilon
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
from protocols.privacy.ledger import PrivacyRefusal
from protocols.privacy.record import FRONTIER

BATCH = "reports"
LIMB = 24
MASK = (1 << LIMB) - 1
CHUNK = 1 << 20  # users encoded at once


@dataclass(frozen=True)
class HHDParameters:
    """HHD's public parameters (module docstring)."""

    n: int
    B: int
    phi: float
    s: int
    t: int
    b: int
    pf: float
    fen: int
    mu: float
    Delta: int
    primes: tuple[int, ...]  # q_l for l = s..t-1

    @property
    def rho(self) -> float:
        return self.mu * self.b / self.fen

    def q(self, level: int) -> int:
        return self.primes[level - self.s]


@lru_cache(maxsize=16)
def hhd_parameters(n: int, B: int, phi: float, eps: float, delta: float) -> HHDParameters:
    """The authors' settings (module docstring) for n users, domain [0, B), threshold phi."""
    if int(n) != n or n < 16 or int(B) != B or B < 4:
        raise ValueError(f"HHD: need users >= 16 and domain >= 4, got n={n}, B={B}")
    if not 0 < phi < 1:
        raise ValueError(f"HHD: the threshold phi must lie in (0, 1), got {phi}")
    if not (eps > 0 and math.isfinite(eps)) or not 0 < delta < 1:
        raise ValueError(f"HHD: need eps > 0 and delta in (0, 1), got {eps}, {delta}")
    if B > 1 << 48:
        raise ValueError(f"HHD: domain {B} above 2^48 (the primes q_l must stay below 2^48)")
    t = math.ceil(math.log2(B))
    s = min(math.ceil(math.log2(n / (phi * math.log2(n)))), t - 1)
    if s > 30:
        raise ValueError(f"HHD: first level s={s} > 30 (its prefixes are counted in full)")
    s = max(s, 1)
    b = math.ceil(n / math.log2(n) ** 2)
    lv = t - s
    pf = min(
        1.0,
        8.0 * lv / (phi * n) * math.log(lv / (phi * 0.1)),
        30.0 * lv / (phi * n) * math.log(phi * B) if phi * B > 1 else math.inf,
    )
    fen = n // (2 * lv)
    if fen < 2 or b < 2:
        raise ValueError(f"HHD: {n} users are too few for {lv} levels (n' = {fen}, b = {b})")
    mu = authors_mu(eps, delta / 2, fen, "hhd")
    Delta = math.ceil(pf * phi * fen)
    primes = tuple(next_prime((1 << level) + 1) for level in range(s, t))
    return HHDParameters(int(n), int(B), float(phi), s, t, b, pf, fen, mu, Delta, primes)


@lru_cache(maxsize=64)
def level_epsilon(delta: float, users: int, rho: float, b: int, pcols: tuple[float, ...]) -> float:
    """Smallest eps (to 1e-3 above the accountant's) whose exact blanket delta is <= delta at
    every level's collision probability ``pcols``."""
    eps = blanket_epsilon(delta, users, rho, b, max(pcols))
    while max(blanket_delta(eps, users, rho, b, c) for c in pcols) > delta:
        eps += 1e-3  # a level whose collision probability needs a little more
    return eps


def split_limbs(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(high, low) 24-bit limbs of values below 2^48."""
    return a >> LIMB, a & MASK


class HHD(FrontierProtocol):
    """Filtered FE1 messages of one level per user in batch ``reports`` (module docstring)."""

    name = "hhd"
    fixed_messages = False
    release_what = "heavy-hitter candidates (items of frequency >= phi n)"

    def __init__(
        self, B: int, n: int, eps_c: float, delta: float, phi: float, gamma: float = 1.0
    ) -> None:
        p = hhd_parameters(int(n), int(B), float(phi), float(eps_c), float(delta))
        self.set_parameters(p, eps_c, delta, gamma)
        if not 0 < gamma <= 1:
            raise ValueError(f"HHD: gamma must lie in (0, 1], got {gamma}")

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec(BATCH, 6, 1 << LIMB)]

    def _encode_chunk(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        p = self.p
        level = rng.integers(p.s, p.t, x.size)
        whole = math.floor(p.rho)
        k = whole + (rng.random(x.size) < p.rho - whole)
        real = rng.random(x.size) < p.pf
        dummies = rng.binomial(k, p.pf)
        rows = []
        for lv in range(p.s, p.t):
            q = p.q(lv)
            at = level == lv
            prefix = x[at & real] >> (p.t - lv)
            nd = int(dummies[at].sum())
            m = prefix.size + nd
            u = rng.integers(1, q, m, dtype=np.int64)
            v = rng.integers(0, q, m, dtype=np.int64)
            w = np.concatenate(
                [
                    fe1_hash(u[: prefix.size], v[: prefix.size], prefix, q, p.b),
                    rng.integers(0, p.b, nd),
                ]
            )
            rows.append(np.stack([np.full(m, lv), *split_limbs(u), *split_limbs(v), w], axis=1))
        return np.concatenate(rows) if rows else np.zeros((0, 6), dtype=np.int64)

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        x = np.asarray(records, dtype=np.int64).reshape(-1)
        if x.size and (x.min() < 0 or x.max() >= self.B):
            raise ValueError(f"HHD.encode: values must lie in [0, {self.B})")
        parts = [self._encode_chunk(x[i : i + CHUNK], rng) for i in range(0, x.size, CHUNK)]
        out = np.concatenate(parts) if parts else np.zeros((0, 6), dtype=np.int64)
        return {BATCH: out[rng.permutation(out.shape[0])]}  # the order says nothing

    def _levels(self, shuffled: Batches) -> tuple[dict[int, np.ndarray], int]:
        m = shuffled.get(BATCH)
        if m is None:
            raise ValueError(f"HHD analyzer: no {BATCH!r} batch received")
        r = np.asarray(m, dtype=np.int64).reshape(-1, 6)
        p = self.p
        lv = r[:, 0]
        u = (r[:, 1] << LIMB) | r[:, 2]
        v = (r[:, 3] << LIMB) | r[:, 4]
        ok = (r >= 0).all(axis=1) & (r[:, 1:5] <= MASK).all(axis=1) & (lv >= p.s) & (lv < p.t)
        q = np.array(p.primes + (0,), dtype=np.int64)[np.where(ok, lv - p.s, -1)]
        ok &= (u >= 1) & (u < q) & (v < q) & (r[:, 5] < p.b)
        msgs = np.stack([u, v, r[:, 5]], axis=1)
        return {level: msgs[ok & (lv == level)] for level in range(p.s, p.t)}, int((~ok).sum())

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        p = self.p
        levels, bad = self._levels(shuffled)
        m = levels[p.s]
        counts = decode_range(m[:, 0], m[:, 1], m[:, 2], p.q(p.s), p.b, 0, 1 << p.s)
        alive = np.flatnonzero(counts >= p.Delta).astype(np.int64)
        survivors = [int(alive.size)]
        for lv in range(p.s + 1, p.t):
            kids = np.stack([2 * alive, 2 * alive + 1], axis=1).ravel()
            m = levels[lv]
            c = count_candidates(m[:, 0], m[:, 1], m[:, 2], p.q(lv), p.b, kids)
            alive = kids[c >= p.Delta]
            survivors.append(int(alive.size))
        items = np.stack([2 * alive, 2 * alive + 1], axis=1).ravel()
        items = items[items < self.B]
        return {
            "heavy_hitters": sorted(int(i) for i in items),
            "survivors_per_level": survivors,
            "messages_per_level": [int(levels[lv].shape[0]) for lv in range(p.s, p.t)],
            "invalid": bad,
        }

    def absent_count(self) -> float:
        """Expected level count of an absent prefix: the blanket's and the collisions' hits
        among the ~2 n' users of a level, filtered (ours; the authors' threshold is raw)."""
        p = self.p
        return p.pf * 2 * p.fen * (1 + p.rho) / p.b

    def noise_warning(self) -> str | None:
        if self.p.Delta <= self.absent_count():
            return (
                f"HHD: the threshold {self.p.Delta} is below the {self.absent_count():.3g} hits an "
                "absent prefix gets on average: most prefixes survive every level (raise users "
                "or phi)"
            )
        return None

    def messages_per_user(self) -> float:
        return (1.0 + self.p.rho) * self.p.pf

    def bits_per_user(self) -> float:
        return self.messages_per_user() * 6 * LIMB

    def max_messages(self) -> dict[str, int]:
        return {BATCH: 1 + math.ceil(self.p.rho)}

    def mechanism(self) -> str:
        p = self.p
        return (
            f"HHD (Luo-Wang-Yi): levels {p.s}..{p.t - 1}, FE1 b={p.b} mu={p.mu:.4g} "
            f"rho={p.rho:.4g} on n'={p.fen}, filter p_f={p.pf:.4g}, threshold {p.Delta}"
        )

    def _level_users(self, users: int) -> tuple[int, float]:
        """(n' at ``users`` users received, P[fewer than n' others at the target's level])."""
        lv = self.p.t - self.p.s
        fen = max(1, math.floor(users * self.gamma) // (2 * lv))
        return fen, float(binom.cdf(fen - 1, max(0, users - 1), 1 / lv))

    def guarantee(self, users: int) -> Guarantee:
        p = self.p
        fen, short = self._level_users(min(int(users), self.n))
        rest = self.delta / 2 if short <= self.delta / 2 else self.delta - short
        if rest <= 0:
            raise PrivacyRefusal(f"HHD: P[fewer than {fen} users at a level] = {short:.3g}")
        pcols = tuple(sorted({collision_probability(q, p.b) for q in p.primes}))
        eps = level_epsilon(rest, fen, p.rho, p.b, pcols)
        return Guarantee(
            eps,
            self.delta,
            "exact blanket accountant per level (HHD)",
            note=f"{fen} users per level, P[short level] {short:.2g}",
        )

    def privacy(self) -> dict[str, Any]:
        g, p = self.guarantee(self.n), self.p
        return self.statement(
            {"levels": [p.s, p.t - 1], "b": p.b, "pf": p.pf, "n_per_level": p.fen,
             "mu_authors": p.mu, "rho": p.rho, "threshold": p.Delta},
            certified_epsilon=g.eps, target_epsilon=self.eps_c, note=g.note, names=FRONTIER,
        )  # fmt: skip
