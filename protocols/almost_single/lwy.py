"""Hist_LWY: frequency estimation with 1 + rho messages per user, rho = o(1) (Luo, Wang & Yi,
CCS 2022, arXiv 2111.06833; the abstract: error omega(1) O(log n) with 1 + o(1) messages).

Randomizer. A user holding x in [d] sends one message ``(a, b, H_ab(x))`` with a fresh member of
the hash family H_ab(v) = ((a v + b) mod P) mod g (:mod:`protocols.oracles.olh`, P prime), and
K = floor(rho) + Bernoulli(rho - floor(rho)) blanket messages ``(a, b, y)`` uniform over
[1, P) x [0, P) x [0, g). The hash range is g = floor(n / ln(n)^c) (the paper's trade-off:
collisions add variance about n/g = ln(n)^c, the blanket costs rho = mu g/n messages; c = 2 gives
error O(log n) with rho = O(log(1/delta)/(eps^2 log^2 n)) = o(1)). When d <= g hashing only adds
collisions, so the message is the value itself and the blanket is uniform over [d] (g = d,
"identity"): the small-domain protocol LWY's generalises, and the seed-004 setting (d = 64).

Privacy. rho is the smallest blanket rate whose exact (eps, delta) accountant
(:func:`protocols.almost_single.blanket.blanket_delta`; exact for the identity, a stronger
adversary with hashing) meets the target with m0 = ceil(gamma N) honest users' blankets. LWY
state mu = 32 ln(2/delta)/eps^2 expected blanket hits per bucket; the exact accountant needs
about 50 at (0.9, 1e-6) instead of 570. Releases re-account eps at the planned delta with the
users received (fewer users, less blanket, larger eps).

Analyzer. S_x = number of messages supporting x (a bincount, or OLH's inverted voting for the
hashed messages), and c_x^ = (S_x - N rho/g - N pcol)/(1 - pcol) (LWY's debiasing for the planned
N users), unbiased; its variance (the blanket's hits on x plus the collisions of the other
users' messages) is given exactly by :meth:`HistLWY.count_variance`. The paper's text beyond the
abstract was not reachable (docs/survey.md); the protocol follows the abstract, the public
reimplementation's structure (``Whelsea/DefenseShuffleDP`` ``histogram/FE1.py``: message
(u, v, w), b = n/log^c n, debiasing) and our own accountant.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from protocols.accountant.survey import robust_users
from protocols.almost_single.blanket import blanket_delta, blanket_epsilon, blanket_rate
from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee
from protocols.catalogue.inputs import check_values, label_counts
from protocols.oracles.olh import OLHFamily, olh_family, olh_support

BATCH = "reports"


@lru_cache(maxsize=64)
def lwy_parameters(
    d: int, n: int, eps: float, delta: float, c: float, gamma: float
) -> tuple[int, float, float, bool]:
    """(g, pcol, rho, hashed) for d values, N users and the target (eps, delta)."""
    if int(d) != d or d < 2 or int(n) != n or n < 3:
        raise ValueError(f"Hist_LWY: need domain >= 2 and users >= 3, got d={d}, n={n}")
    if not (eps > 0 and math.isfinite(eps)) or not 0 < delta < 1:
        raise ValueError(f"Hist_LWY: need eps > 0 and delta in (0, 1), got {eps}, {delta}")
    if not c > 0:
        raise ValueError(f"Hist_LWY: the hash exponent c must be > 0, got {c}")
    g = max(2, int(n / math.log(n) ** c))
    hashed = d > g
    fam = olh_family(d, g) if hashed else None
    pcol = fam.collision if fam else 0.0
    g = g if hashed else d
    rho = blanket_rate(eps, delta, robust_users(n, gamma), g, pcol)
    return g, pcol, rho, hashed


class HistLWY(CatalogueProtocol):
    """1 + K messages per user in batch ``reports`` ((a, b, y) hashed, or a value of [d])."""

    name = "hist_lwy"
    fixed_messages = False
    release_what = "histogram of [d]"

    def __init__(
        self, d: int, n: int, eps_c: float, delta: float, c: float = 2.0, gamma: float = 1.0
    ) -> None:
        g, pcol, rho, hashed = lwy_parameters(
            int(d), int(n), float(eps_c), float(delta), float(c), float(gamma)
        )
        self.d, self.n, self.eps_c, self.delta = int(d), int(n), float(eps_c), float(delta)
        self.c, self.gamma, self.g, self.pcol, self.rho = float(c), float(gamma), g, pcol, rho
        self.family: OLHFamily | None = olh_family(self.d, g) if hashed else None

    @property
    def hashed(self) -> bool:
        return self.family is not None

    def batch_specs(self) -> list[BatchSpec]:
        if self.family is None:
            return [BatchSpec(BATCH, 1, self.d)]
        return [BatchSpec(BATCH, 3, self.family.P)]

    def _blanket_counts(self, n: int, rng: np.random.Generator) -> np.ndarray:
        whole = math.floor(self.rho)
        return whole + (rng.random(n) < self.rho - whole).astype(np.int64)

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        x = check_values(records, self.d, "Hist_LWY.encode")
        t = int(self._blanket_counts(x.size, rng).sum())
        if self.family is None:
            return {BATCH: np.concatenate([x, rng.integers(0, self.d, t)]).reshape(-1, 1)}
        f = self.family
        a = rng.integers(1, f.P, x.size + t, dtype=np.int64)
        b = rng.integers(0, f.P, x.size + t, dtype=np.int64)
        y = np.concatenate([f.hash(a[: x.size], b[: x.size], x), rng.integers(0, f.g, t)])
        return {BATCH: np.stack([a, b, y], axis=1)}

    def _support(self, shuffled: Batches) -> tuple[np.ndarray, int]:
        if self.family is None:
            counts, bad = label_counts(shuffled, BATCH, self.d, "Hist_LWY analyzer")
            return counts, bad
        m = shuffled.get(BATCH)
        if m is None:
            raise ValueError(f"Hist_LWY analyzer: no {BATCH!r} batch received")
        r = np.asarray(m, dtype=np.int64).reshape(-1, 3)
        f = self.family
        ok = (r[:, 0] >= 1) & (r[:, 0] < f.P) & (r[:, 1] >= 0) & (r[:, 1] < f.P)
        ok &= (r[:, 2] >= 0) & (r[:, 2] < f.g)
        return olh_support(r[ok], f), int((~ok).sum())

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        support, bad = self._support(shuffled)
        est = (support - self.n * self.rho / self.g - self.n * self.pcol) / (1 - self.pcol)
        return {"counts": est.tolist(), "invalid": bad, "hashed": self.hashed}

    def count_variance(self, true_counts: np.ndarray) -> np.ndarray:
        """Exact variance of every count estimate given the true counts (N users sending)."""
        c = np.asarray(true_counts, dtype=np.float64)
        whole, frac, q = math.floor(self.rho), self.rho - math.floor(self.rho), 1 / self.g
        hits = self.n * whole * q * (1 - q) + self.n * frac * q * (1 - frac * q)
        return (hits + (self.n - c) * self.pcol * (1 - self.pcol)) / (1 - self.pcol) ** 2

    def messages_per_user(self) -> float:
        return 1.0 + self.rho

    def bits_per_user(self) -> float:
        if self.family is None:
            per = math.ceil(math.log2(self.d))
        else:
            per = 2 * math.ceil(math.log2(self.family.P)) + math.ceil(math.log2(self.g))
        return self.messages_per_user() * per

    def max_messages(self) -> dict[str, int]:
        return {BATCH: 1 + math.ceil(self.rho)}

    def mechanism(self) -> str:
        kind = f"hash to g={self.g} (P={self.family.P})" if self.family else "identity (g = d)"
        return f"one message, {kind}, + uniform blanket rho={self.rho:.4g} per user"

    def guarantee(self, users: int) -> Guarantee:
        if users >= robust_users(self.n, self.gamma):
            d = blanket_delta(
                self.eps_c, robust_users(self.n, self.gamma), self.rho, self.g, self.pcol
            )
            return Guarantee(self.eps_c, self.delta, "exact blanket (LWY)", note=f"delta {d:.3g}")
        eps = blanket_epsilon(self.delta, users, self.rho, self.g, self.pcol)
        return Guarantee(eps, self.delta, "exact blanket (LWY)", note=f"{users} users' blanket")

    def privacy(self) -> dict[str, Any]:
        hits = robust_users(self.n, self.gamma) * self.rho / self.g
        own = {"gamma": self.gamma, "rho": self.rho, "g": self.g, "hashed": self.hashed}
        return self.statement(
            own | {"collision": self.pcol, "blanket_hits_per_bucket": hits,
                   "lwy_stated_mu": 32 * math.log(2 / self.delta) / self.eps_c**2},
            local_epsilon=None,
        )  # fmt: skip
