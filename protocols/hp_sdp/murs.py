"""MURS / SOLH (Wang T. et al., PVLDB 2020): shuffled OLH with fake reports, HP-SDP's baseline.

Each user sends one OLH report ``(seed, y)`` (the message format of :mod:`protocols.hp_sdp.protocol`) and a
number of *fake reports* (uniform seed, uniform y in [g]): floor(r) + Bernoulli(r - floor(r)), so
about n_r = r n fakes in total. In MURS the auxiliary servers inject the fakes; here the users do
(the paper calls MURS multi-message), so it runs over any shuffler. The analyzer knows the number of
users n, hence n_r = (#messages) - n exactly. A fake report supports every v with probability 1/g
exactly (y is uniform and independent of the seed), so the unbiased estimator is

    f_v = ((S_v - n_r/g)/n - q*)/(p - q*)

with the OLH (p, q*) of :mod:`protocols.oracles.olh`; its variance adds n_r (1/g)(1 - 1/g)/(n^2 (p - q*)^2).

Privacy (MURS ``analysis.blanket_naive_fn`` with the hash range g as the domain): the blanket of the
other users plus the fakes must satisfy (n-1)/(e^eps_l + g - 1) + n_r'/g >= 14 ln(2/delta)/eps_c^2,
where n_r' = r (n - 1) counts only the other users' fakes. (g, r) are chosen to minimise the
variance at f = 0, r on MURS's search range [0, 2] (``init_search_eps`` searches n_r up to 2n), g on
a log grid refined locally; MURS's own code instead fixes g = round(e^(eps_l/2) + 1). Tight
accounting: the better (smaller exact MSE) of that configuration and the real reports alone
calibrated by the variation-ratio bound (the fakes, a data-independent post-processing, are then
not credited: r = 0 and MURS equals HP-SM under tight accounting).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec, ShuffleProtocol
from protocols.catalogue.inputs import check_domain_and_users
from protocols.hp_sdp.baselines import blanket_mass
from protocols.hp_sdp.protocol import (
    calibrate,
    sample_olh_support,
    seed_bound,
    srr_encode,
    srr_support,
)
from protocols.oracles.olh import olh_estimate_from_support, olh_family, olh_probabilities
from protocols.privacy.ledger import Release, users_received
from protocols.privacy.record import PrivacyStatement
from protocols.privacy.statements import refuse_below

FAKE_RATES = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)


def murs_eps_local(n: int, B: float, g: int, credited_fakes: float) -> float | None:
    """eps_l meeting the blanket condition (n-1)/(e^eps_l+g-1) + credited/g >= B
    (inf if the credited fakes alone suffice; None if no eps_l > 0 does)."""
    rest = B - credited_fakes / g
    if rest <= 0:
        return math.inf
    e = (n - 1) / rest - g + 1
    return math.log(e) if e > 1 else None


def murs_mse(n: int, d: int, g: int, fake_share: float, eps_l: float | None) -> float:
    """MSE before post-processing, q* ~ 1/g, with fake_share = fakes / n:
    ((1/d)p(1-p) + (1-1/d+fake_share) q(1-q))/(n(p-q)^2)."""
    if eps_l is None:
        return math.inf
    p = 1.0 if math.isinf(eps_l) else math.exp(eps_l) / (math.exp(eps_l) + g - 1)
    q = 1.0 / g
    return ((1 / d) * p * (1 - p) + (1 - 1 / d + fake_share) * q * (1 - q)) / (n * (p - q) ** 2)


def _eps_for(n: int, B: float, g: int, r: float) -> float | None:
    """eps_l with fake rate r: only the other users' r (n - 1) fakes are credited."""
    return murs_eps_local(n, B, g, r * (n - 1))


@lru_cache(maxsize=1024)
def murs_parameters(n: int, d: int, eps_c: float, delta: float) -> tuple[int, float, float]:
    """(g, r, eps_l) minimising the MSE under the blanket bound with fakes."""
    B = blanket_mass(eps_c, delta)
    best: tuple[float, int, float, float] | None = None
    for r in FAKE_RATES:
        grid = sorted({max(2, int(round(x))) for x in np.geomspace(2, 1 << 20, 61)})
        for g in grid:
            e = _eps_for(n, B, g, r)
            v = murs_mse(n, d, g, r, e)
            if e is not None and (best is None or v < best[0]):
                best = (v, g, r, e)
    if best is None:
        raise ValueError(f"MURS: no feasible (g, eps_l) for n={n}, eps_c={eps_c}, delta={delta}")
    _, g0, r, _ = best
    for g in range(max(2, int(g0 * 0.85)), int(g0 * 1.2) + 2):  # local refine
        e = _eps_for(n, B, g, r)
        v = murs_mse(n, d, g, r, e)
        if e is not None and v < best[0]:
            best = (v, g, r, e)
    return best[1], best[2], best[3]


class MURSProtocol(ShuffleProtocol):
    """SOLH + fake reports; one batch of (seed, y) messages."""

    name = "murs"

    def __init__(
        self, d: int, n: int, eps_c: float, delta: float, accounting: str = "paper"
    ) -> None:
        check_domain_and_users("MURS", d, n)
        self.d, self.n, self.eps_c, self.delta, self.accounting = (
            int(d),
            int(n),
            eps_c,
            delta,
            accounting,
        )
        if accounting not in ("paper", "tight"):
            raise ValueError(f"MURS: accounting must be 'paper' or 'tight', got {accounting!r}")
        if eps_c > 1.0:
            raise ValueError(
                f"MURS: the blanket constant 14 ln(2/delta)/eps^2 is proved for eps <= 1, "
                f"got eps_c = {eps_c}"
            )
        self.g, self.r, self.eps_l = murs_parameters(self.n, self.d, float(eps_c), float(delta))
        self.certificate = "blanket"
        if accounting == "tight":  # the better of the two certificates (both valid)
            p = calibrate(eps_c, delta, n, accounting="tight", d=self.d)
            if murs_mse(self.n, self.d, p.g, 0.0, p.eps_l) < murs_mse(
                self.n, self.d, self.g, self.r, self.eps_l
            ):
                self.g, self.r, self.eps_l, self.certificate = p.g, 0.0, p.eps_l, "vr"
        self.family = olh_family(self.d, self.g)
        self._eps_use = min(self.eps_l, 700.0)  # eps_l = inf (fakes suffice) -> always truthful

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("reports", 2, max(seed_bound(self.family), self.g))]

    def messages_per_user(self) -> float:
        return 1.0 + self.r

    def bits_per_user(self) -> float:
        bits = math.ceil(math.log2(seed_bound(self.family))) + math.ceil(math.log2(self.g))
        return self.messages_per_user() * bits

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        v = np.asarray(records, dtype=np.int64).reshape(-1)
        real = srr_encode(v, self.family, self._eps_use, rng)
        k = int(math.floor(self.r))
        n_fake = v.size * k + int((rng.random(v.size) < self.r - k).sum())
        fake = np.stack(
            [rng.integers(0, seed_bound(self.family), n_fake), rng.integers(0, self.g, n_fake)],
            axis=1,
        )
        return {"reports": np.concatenate([real, fake])}

    def estimate(self, support: np.ndarray, n_fake: float) -> np.ndarray:
        """Unbiased frequencies from the support counts of real + fake reports."""
        return olh_estimate_from_support(
            np.asarray(support, np.float64) - n_fake / self.g, self._eps_use, self.family, self.n
        )

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        msgs = shuffled.get("reports")
        if msgs is None:
            raise ValueError("MURS analyzer: no 'reports' batch received")
        support, n_ok = srr_support(msgs, self.family)
        if n_ok < self.n:
            raise ValueError(f"MURS analyzer: {n_ok} valid messages for n={self.n} users")
        raw = self.estimate(support, n_ok - self.n)
        return {
            "frequencies": raw.tolist(),
            "raw_frequencies": raw.tolist(),
            "reports": n_ok,
            "fakes": n_ok - self.n,
            "invalid": int(msgs.shape[0] - n_ok),
        }

    def sample(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Estimate from per-bin support counts drawn with their exact marginal laws.

        S_v ~ Bin(n_v, p) + Bin(n - n_v, q*) + Bin(n_r, 1/g) with n_r ~ its law; the weak
        correlation between bins (one report supports ~P/g values) is ignored, so the expected
        MSE is exact but a post-processing of the draw is only approximate.
        """
        c = np.asarray(counts, dtype=np.int64)
        k = int(math.floor(self.r))
        n_fake = self.n * k + rng.binomial(self.n, self.r - k)
        return self.estimate(sample_olh_support(c, self._eps_use, self.family, rng, n_fake), n_fake)

    def variance(self, freqs: np.ndarray) -> np.ndarray:
        """Exact variance per value (fake count at its mean r n)."""
        p, qs = olh_probabilities(self._eps_use, self.family)
        f = np.asarray(freqs, dtype=np.float64)
        g = self.g
        base = (f * p * (1 - p) + (1 - f) * qs * (1 - qs)) / (self.n * (p - qs) ** 2)
        return base + self.r * (1 / g) * (1 - 1 / g) / (self.n * (p - qs) ** 2)

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """SOLH + fakes: the blanket counts the *other users'* fakes (n_r' = r (n - 1)), so the
        statement holds only when all n users' submissions arrived; no re-accounting."""
        got = users_received(counts, self.name)
        refuse_below(
            f"{self.name}: users", self.n, got,
            "MURS's fake-report blanket is calibrated for the fakes of n - 1 other users",
        )  # fmt: skip
        bound = (
            "blanket_naive_fn (MURS, Wang et al. PVLDB 2020)"
            if self.certificate == "blanket"
            else "vr(olh), fakes not credited"
        )
        return [
            Release(
                f"histogram over {self.d} values",
                f"SOLH(g={self.g}, eps_l = {self.eps_l:.4g}) + fake reports at rate {self.r:g}",
                float(self.eps_c), float(self.delta), self.n, got, bound,
            )
        ]  # fmt: skip

    def privacy(self) -> dict[str, Any]:
        return PrivacyStatement(
            certified_epsilon=self.eps_c,
            delta=self.delta,
            local_epsilon=self.eps_l,
            bound="blanket_naive_fn (MURS)"
            if self.certificate == "blanket"
            else "vr(olh), fakes not credited",
            mechanism=f"solh(g={self.g}) + fakes",
            extra={"g": self.g, "fake_rate": self.r},
        ).wire()
