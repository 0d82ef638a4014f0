"""HP-SDP's comparison methods (spec section 9): SH, AUE, pureDUMP, mixDUMP, central Laplace.

MURS/SOLH lives in :mod:`protocols.hp_sdp.murs`; HP-SM is :class:`protocols.hp_sdp.protocol.HPSDPProtocol` with
``post="none"``. Every shuffle baseline is a :class:`~protocols.base.ShuffleProtocol` (so ``sdp run
hp-sdp --param method=NAME`` runs it over any shuffler) with an exact ``variance(freqs)`` of its
unbiased estimator, ``messages_per_user``/``bits_per_user`` and ``sample(counts, rng)``: a draw of
the *published estimate* from the true counts with exactly the distribution of the protocol's
aggregate (used by the experiments at full scale, where materialising e.g. 10^9 dummies is not
possible). The paper gives no parameters for any baseline; ours, and where they come from:

* **SH** (Balle, Bell, Gascon, Nissim, CRYPTO'19, privacy blanket): each user reports its value
  w.p. 1 - gamma, else a uniform value of [d]; estimator (c/n - gamma/d)/(1 - gamma) (GRR's). Paper
  accounting: Balle et al.'s gamma = max(14 d ln(2/delta)/((n-1) eps^2), 27 d/((n-1) eps)).
  Tight accounting: the DP core's variation-ratio bound for GRR with k = d. **Infeasible policy**:
  when the bound needs gamma >= 1 (e.g. d = 600, n = 6e5, delta = 1e-6, eps < 0.45 under the paper
  bound) every report must be uniform and carries no information, so the analyzer publishes the
  data-independent uniform histogram 1/d and the run is flagged ``feasible: False``.
* **AUE** (Balcer & Cheu, ITC'20): each user sends its value in the clear (not LDP) plus, for every
  j in [d], a message j independently w.p. q; estimator (c_j - n q)/n. The noise rate is set by the
  blanket condition of Theorem 1 applied to the per-bin binomial noise of the other users,
  (n - 1) q = 14 ln(2/delta)/eps^2 (the Chernoff argument of Balle et al./Theorem 1 for two bins that
  each move by one; Balcer-Cheu state their protocol with their own, larger constant, which we could
  not consult offline). Needs q <= 1/2; otherwise infeasible, with SH's policy (uniform output).
  Both accountings use this (no tight bound in the DP core).
* **pureDUMP** (Li et al., "Privacy enhancement via dummy points in the shuffle model"): the true
  value plus s uniform dummies; estimator (c_v - s n/d)/n. s = ceil(14 ln(2/delta) d/((n-1) eps^2)),
  the blanket condition s(n-1)/d >= 14 ln(2/delta)/eps^2 on the dummies of the other users. Both
  accountings (the DP core has no bound for dummy-only blankets).
* **mixDUMP** (same paper): GRR with blanket gamma plus s dummies; blanket condition
  gamma (n-1)/d + s (n-1)/d >= 14 ln(2/delta)/eps^2; s >= 1 is chosen in [1, s_pure] to minimise
  the exact variance (our policy; the paper fixes s per experiment). Tight accounting: the GRR part
  alone calibrated by the variation-ratio bound (dummies are a data-independent post-processing:
  they cost no privacy but are not credited) with s = 1, or the blanket configuration above,
  whichever has the smaller exact MSE (both certificates are valid).
* **Laplace** (central DP): counts + Lap(2/eps) each, frequencies = counts/n. Sensitivity
  convention: replace-one neighbours (the paper's relation) move one unit between two bins, L1
  sensitivity 2; MSE = 8/(n^2 eps^2). Not a shuffle protocol: :func:`laplace_histogram`.

Releases and dropout. SH's local epsilon is fixed, so below n reports it is re-accounted (the
accountant's GRR bound at the count received). The blanket arguments of AUE, pureDUMP, mixDUMP
(and MURS) rest on the noise messages, dummies or fakes of the *other users*: fewer users means
less blanket and the statement for n no longer holds; they refuse to publish when fewer than n
users' submissions arrived (``counts[USERS]``, the users whose submissions reached the shuffler
whole). Their blanket constant 14 ln(2/delta)/eps^2 is Balle et al.'s, proved for eps <= 1:
above it they refuse at construction. SH's paper calibration is Balle et al.'s theorem for k-RR;
above eps = 1 it is routed to the accountant (variation ratio, GRR with k = d) and says so.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from protocols.accountant.balle import blanket_mass_needed
from protocols.base import Batches, BatchSpec, ShuffleProtocol
from protocols.oracles.central import laplace_mechanism, laplace_variance
from protocols.oracles.grr import grr_estimate_from_counts, grr_variance, rr_report_variance
from protocols.privacy.ledger import Release, users_received
from protocols.privacy.record import PrivacyStatement
from protocols.privacy.statements import refuse_below, shuffled_release

LAPLACE_SENSITIVITY = 2.0  # replace-one neighbours: one unit moves between two bins


def blanket_mass(eps_c: float, delta: float) -> float:
    """B = 14 ln(2/delta)/eps^2: blanket messages each bin needs (Theorem 1 / Balle et al.)."""
    if not (eps_c > 0 and math.isfinite(eps_c)):
        raise ValueError(f"baseline: eps_c must be finite and > 0, got {eps_c}")
    if not 0 < delta < 1:
        raise ValueError(f"baseline: delta must lie in (0, 1), got {delta}")
    return blanket_mass_needed(eps_c, delta)


def _check_nd(name: str, d: int, n: int) -> None:
    if int(d) != d or d < 2:
        raise ValueError(f"{name}: domain size d must be an integer >= 2, got {d}")
    if int(n) != n or n < 2:
        raise ValueError(f"{name}: n must be an integer >= 2, got {n}")


def _values(records: np.ndarray, d: int, name: str) -> np.ndarray:
    v = np.asarray(records, dtype=np.int64).reshape(-1)
    if v.size and (v.min() < 0 or v.max() >= d):
        raise ValueError(f"{name}: values must lie in [0, {d})")
    return v


def _counts(shuffled: Batches, d: int, name: str) -> tuple[np.ndarray, int]:
    msgs = shuffled.get("reports")
    if msgs is None:
        raise ValueError(f"{name} analyzer: no 'reports' batch received")
    x = msgs[:, 0]
    ok = (x >= 0) & (x < d)
    return np.bincount(x[ok], minlength=d).astype(np.float64), int((~ok).sum())


def _blanket_sample(counts: np.ndarray, gamma: float, rng: np.random.Generator) -> np.ndarray:
    """Histogram of n blanket reports (keep w.p. 1-gamma, else uniform): exact, O(d)."""
    c = np.asarray(counts, dtype=np.int64)
    kept = rng.binomial(c, 1.0 - gamma)
    uniform = rng.multinomial(int(c.sum() - kept.sum()), np.full(c.size, 1.0 / c.size))
    return (kept + uniform).astype(np.float64)


def _dummy_sample(total: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """Histogram of ``total`` uniform dummies on [d]."""
    return rng.multinomial(int(total), np.full(d, 1.0 / d)).astype(np.float64)


@lru_cache(maxsize=1024)
def _grr_tight_eps(eps_c: float, n: int, delta: float, d: int) -> float | None:
    """Largest GRR(k=d) local epsilon the variation-ratio bound amplifies to eps_c (cached)."""
    from protocols.accountant import max_local_epsilon

    return max_local_epsilon(eps_c, n, delta, bound="vr", mechanism="grr", k=d)


class _Baseline(ShuffleProtocol):
    """Shared plumbing: one batch of width-1 messages in [0, d)."""

    name = "baseline"

    def __init__(self, d: int, n: int, eps_c: float, delta: float, accounting: str) -> None:
        _check_nd(self.name, d, n)
        if accounting not in ("paper", "tight"):
            raise ValueError(
                f"{self.name}: accounting must be 'paper' or 'tight', got {accounting!r}"
            )
        self.d, self.n, self.eps_c, self.delta, self.accounting = (
            int(d),
            int(n),
            eps_c,
            delta,
            accounting,
        )
        self.B = blanket_mass(eps_c, delta)
        self.feasible = True
        if eps_c > 1.0 and type(self).__name__ in ("AUEProtocol", "PureDUMPProtocol"):
            raise ValueError(
                f"{self.name}: the blanket constant 14 ln(2/delta)/eps^2 is Balle et al.'s, "
                f"proved for eps <= 1; got eps_c = {eps_c}"
            )
        if eps_c > 1.0 and type(self).__name__ == "MixDUMPProtocol" and accounting == "paper":
            raise ValueError(
                f"{self.name}: the paper blanket needs eps <= 1 (got {eps_c}); use accounting=tight"
            )

    def pure_dummies(self) -> int:
        """pureDUMP's dummies per user: the least s >= 1 with s (n - 1)/d >= B (each bin's
        blanket from the other users' uniform dummies)."""
        return max(1, math.ceil(self.B * self.d / (self.n - 1)))

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("reports", 1, self.d)]

    def messages_per_user(self) -> float:
        """Expected messages each user sends."""
        return 1.0

    def bits_per_user(self) -> float:
        """Expected bits each user sends (ceil(log2 d) per message)."""
        return self.messages_per_user() * math.ceil(math.log2(self.d))

    def blanket_release(self, counts: dict[str, int], mechanism: str, bound: str) -> list[Release]:
        """The histogram of a multi-message blanket protocol: holds only with all n users."""
        if not self.feasible:
            return [self.uniform_release()]
        got = users_received(counts, self.name)
        refuse_below(
            f"{self.name}: users", self.n, got,
            "the blanket of the other users' noise messages, dummies or fakes shrinks with them",
        )  # fmt: skip
        return [
            Release(
                f"histogram over {self.d} values", mechanism, float(self.eps_c),
                float(self.delta), self.n, got, bound,
            )
        ]  # fmt: skip

    def uniform_release(self) -> Release:
        """An infeasible configuration publishes the uniform histogram: data-independent."""
        return Release(
            f"histogram over {self.d} values (uniform: infeasible configuration)",
            f"{self.name}: every report uniform, output 1/d", 0.0, 0.0, 0, 0,
            "data-independent output",
        )  # fmt: skip

    def _publish(self, raw: np.ndarray, invalid: int) -> dict[str, Any]:
        return {
            "frequencies": raw.tolist(),
            "raw_frequencies": raw.tolist(),
            "invalid": invalid,
            "feasible": self.feasible,
        }


class SHProtocol(_Baseline):
    """SH: single-message privacy blanket (GRR on [d]); see the module docstring for gamma."""

    name = "sh"

    def __init__(
        self, d: int, n: int, eps_c: float, delta: float, accounting: str = "paper"
    ) -> None:
        super().__init__(d, n, eps_c, delta, accounting)
        self.routed = accounting == "paper" and eps_c > 1.0  # outside Balle et al.'s theorem
        if accounting == "paper" and not self.routed:
            gamma = max(self.B * d / (n - 1), 27.0 * d / ((n - 1) * eps_c))
        else:
            e = _grr_tight_eps(float(eps_c), int(n), float(delta), int(d))
            gamma = 1.0 if e is None else d / (math.exp(e) + d - 1)
        self.gamma_required = gamma
        self.feasible = gamma < 1.0
        self.gamma = min(gamma, 1.0)
        self.eps_l = math.log(d / self.gamma - d + 1) if self.feasible else 0.0

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        v = _values(records, self.d, self.name)
        blanket = rng.random(v.size) < self.gamma
        y = np.where(blanket, rng.integers(0, self.d, size=v.size), v)
        return {"reports": y.reshape(-1, 1)}

    def estimate(self, counts: np.ndarray) -> np.ndarray:
        """(c/n - gamma/d)/(1 - gamma), or the uniform histogram when infeasible."""
        if not self.feasible:
            return np.full(self.d, 1.0 / self.d)
        return grr_estimate_from_counts(counts, self.eps_l, float(counts.sum()))

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        counts, bad = _counts(shuffled, self.d, self.name)
        return self._publish(self.estimate(counts), bad)

    def sample(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Published estimate drawn from the exact aggregate distribution."""
        if not self.feasible:
            return np.full(self.d, 1.0 / self.d)
        return self.estimate(_blanket_sample(counts, self.gamma, rng))

    def variance(self, freqs: np.ndarray) -> np.ndarray:
        """Exact variance; when infeasible, the squared bias of the uniform output."""
        f = np.asarray(freqs, dtype=np.float64)
        if not self.feasible:
            return (f - 1.0 / self.d) ** 2
        return grr_variance(f, self.d, self.eps_l, self.n)

    def privacy(self) -> dict[str, Any]:
        return PrivacyStatement(
            certified_epsilon=self.eps_c,
            delta=self.delta,
            local_epsilon=self.eps_l,
            bound=self.bound,
            mechanism=f"blanket-grr(d={self.d})",
            extra={
                "gamma": self.gamma,
                "gamma_required": self.gamma_required,
                "feasible": self.feasible,
            },
        ).wire()

    @property
    def bound(self) -> str:
        if self.routed:
            return "vr(grr) (eps_c > 1: outside Balle et al.'s theorem, routed to the accountant)"
        return "balle" if self.accounting == "paper" else "vr(grr)"

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """Blanket GRR: the local epsilon is fixed, so it re-accounts below n."""
        if not self.feasible:
            return [self.uniform_release()]
        return [
            shuffled_release(
                f"histogram over {self.d} values",
                f"blanket GRR (gamma = {self.gamma:.4g}, eps_l = {self.eps_l:.4g}), uniform shuffle",
                eps_local=self.eps_l,
                eps_planned=self.eps_c,
                delta=self.delta,
                n_accounted=self.n,
                n_received=counts.get("reports", 0),
                bound=self.bound,
                accountant={"mechanism": "grr", "k": self.d},
            )
        ]


class AUEProtocol(_Baseline):
    """AUE (Balcer-Cheu): value in the clear + one message per bin w.p. q."""

    name = "aue"

    def __init__(
        self, d: int, n: int, eps_c: float, delta: float, accounting: str = "paper"
    ) -> None:
        super().__init__(d, n, eps_c, delta, accounting)
        self.q_required = self.B / (n - 1)
        self.q = min(self.q_required, 0.5)
        self.feasible = self.q_required <= 0.5

    def messages_per_user(self) -> float:
        return 1.0 + self.d * self.q

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        v = _values(records, self.d, self.name)
        noise_per_bin = rng.binomial(v.size, self.q, size=self.d)  # same law as per-user coins
        noise = np.repeat(np.arange(self.d, dtype=np.int64), noise_per_bin)
        return {"reports": np.concatenate([v, noise]).reshape(-1, 1)}

    def estimate(self, counts: np.ndarray) -> np.ndarray:
        """(c_j - n q)/n, or the uniform histogram when infeasible (q would exceed 1/2)."""
        if not self.feasible:
            return np.full(self.d, 1.0 / self.d)
        return (counts - self.n * self.q) / self.n

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        counts, bad = _counts(shuffled, self.d, self.name)
        return self._publish(self.estimate(counts), bad)

    def sample(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Published estimate drawn from the exact aggregate distribution."""
        return self.estimate(np.asarray(counts, np.float64) + rng.binomial(self.n, self.q, self.d))

    def variance(self, freqs: np.ndarray) -> np.ndarray:
        """q (1 - q)/n per bin (the users' own values are exact); uniform output if infeasible."""
        f = np.asarray(freqs, dtype=np.float64)
        if not self.feasible:
            return (f - 1.0 / self.d) ** 2
        return np.full(f.shape, self.q * (1 - self.q) / self.n)

    def privacy(self) -> dict[str, Any]:
        return PrivacyStatement(
            certified_epsilon=self.eps_c,
            delta=self.delta,
            bound="blanket (binomial noise, 14 ln(2/delta)/eps^2)",
            mechanism=f"aue(d={self.d}), not LDP",
            extra={"q": self.q, "feasible": self.feasible},
        ).wire()

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        return self.blanket_release(
            counts,
            f"AUE (value in the clear + a message per bin w.p. q = {self.q:.4g})",
            "blanket of the other users' binomial noise, 14 ln(2/delta)/eps^2 per bin",
        )


class PureDUMPProtocol(_Baseline):
    """pureDUMP: the true value plus s uniform dummies."""

    name = "pure-dump"

    def __init__(
        self, d: int, n: int, eps_c: float, delta: float, accounting: str = "paper"
    ) -> None:
        super().__init__(d, n, eps_c, delta, accounting)
        self.s = self.pure_dummies()

    def messages_per_user(self) -> float:
        return 1.0 + self.s

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        v = _values(records, self.d, self.name)
        dummies = rng.integers(0, self.d, size=v.size * self.s)
        return {"reports": np.concatenate([v, dummies]).reshape(-1, 1)}

    def estimate(self, counts: np.ndarray) -> np.ndarray:
        """(c_v - s n/d)/n."""
        return (counts - self.s * self.n / self.d) / self.n

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        counts, bad = _counts(shuffled, self.d, self.name)
        return self._publish(self.estimate(counts), bad)

    def sample(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Published estimate drawn from the exact aggregate distribution."""
        return self.estimate(
            np.asarray(counts, np.float64) + _dummy_sample(self.s * self.n, self.d, rng)
        )

    def variance(self, freqs: np.ndarray) -> np.ndarray:
        """s (1/d)(1 - 1/d)/n per bin."""
        return np.full(np.shape(freqs), self.s * (1 / self.d) * (1 - 1 / self.d) / self.n)

    def privacy(self) -> dict[str, Any]:
        return PrivacyStatement(
            certified_epsilon=self.eps_c,
            delta=self.delta,
            bound="dummy blanket s(n-1)/d >= 14 ln(2/delta)/eps^2",
            mechanism=f"pure-dump(d={self.d}, s={self.s}), not LDP",
            extra={"dummies": self.s},
        ).wire()

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        return self.blanket_release(
            counts,
            f"pureDUMP (value + {self.s} uniform dummies)",
            "dummy blanket s(n-1)/d >= 14 ln(2/delta)/eps^2",
        )


class MixDUMPProtocol(_Baseline):
    """mixDUMP: blanket GRR (gamma) plus s uniform dummies."""

    name = "mix-dump"

    def __init__(
        self, d: int, n: int, eps_c: float, delta: float, accounting: str = "paper"
    ) -> None:
        super().__init__(d, n, eps_c, delta, accounting)
        s_pure = self.pure_dummies()
        best = min(range(1, s_pure + 1), key=lambda s: self._mean_var(s, self._gamma_for(s)))
        self.s, self.gamma, self.certificate = best, self._gamma_for(best), "blanket"
        if accounting == "tight":  # the better of the two certificates (both valid)
            sh = SHProtocol(d, n, eps_c, delta, "tight")
            blanket_ok = eps_c <= 1.0  # the blanket certificate is proved for eps <= 1 only
            if sh.feasible and (
                not blanket_ok or self._mean_var(1, sh.gamma) < self._mean_var(self.s, self.gamma)
            ):
                self.s, self.gamma, self.certificate = 1, sh.gamma, "vr"
            elif not blanket_ok:
                self.gamma = 1.0  # no valid certificate: infeasible (uniform output)
        self.feasible = self.gamma < 1.0

    def _gamma_for(self, s: int) -> float:
        return min(1.0, max(0.0, (self.B - s * (self.n - 1) / self.d) * self.d / (self.n - 1)))

    def _pq(self, gamma: float) -> tuple[float, float]:
        return 1 - gamma + gamma / self.d, gamma / self.d

    def _mean_var(self, s: int, gamma: float) -> float:
        if gamma >= 1.0:
            return math.inf
        p, q = self._pq(gamma)  # mean over the domain of the exact variance (mean f = 1/d)
        grr = q * (1 - q) + (p - q) * (1 - p - q) / self.d
        return (grr + s * (1 / self.d) * (1 - 1 / self.d)) / (self.n * (p - q) ** 2)

    def messages_per_user(self) -> float:
        return 1.0 + self.s

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        v = _values(records, self.d, self.name)
        blanket = rng.random(v.size) < self.gamma
        y = np.where(blanket, rng.integers(0, self.d, size=v.size), v)
        dummies = rng.integers(0, self.d, size=v.size * self.s)
        return {"reports": np.concatenate([y, dummies]).reshape(-1, 1)}

    def estimate(self, counts: np.ndarray) -> np.ndarray:
        """((c_v - s n/d)/n - q)/(p - q)."""
        if not self.feasible:
            return np.full(self.d, 1.0 / self.d)
        p, q = self._pq(self.gamma)
        return ((counts - self.s * self.n / self.d) / self.n - q) / (p - q)

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        counts, bad = _counts(shuffled, self.d, self.name)
        return self._publish(self.estimate(counts), bad)

    def sample(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Published estimate drawn from the exact aggregate distribution."""
        agg = _blanket_sample(counts, self.gamma, rng) + _dummy_sample(self.s * self.n, self.d, rng)
        return self.estimate(agg)

    def variance(self, freqs: np.ndarray) -> np.ndarray:
        """Exact variance of the estimator (GRR part + dummies)."""
        f = np.asarray(freqs, dtype=np.float64)
        if not self.feasible:
            return (f - 1.0 / self.d) ** 2
        p, q = self._pq(self.gamma)
        grr = rr_report_variance(f, p, q)
        return (grr + self.s * (1 / self.d) * (1 - 1 / self.d)) / (self.n * (p - q) ** 2)

    def privacy(self) -> dict[str, Any]:
        return PrivacyStatement(
            certified_epsilon=self.eps_c,
            delta=self.delta,
            bound="blanket (GRR + dummies)"
            if self.accounting == "paper"
            else "vr(grr), dummies not credited",
            mechanism=f"mix-dump(d={self.d}, s={self.s})",
            extra={"gamma": self.gamma, "dummies": self.s, "feasible": self.feasible},
        ).wire()

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        return self.blanket_release(
            counts,
            f"mixDUMP (blanket GRR gamma = {self.gamma:.4g} + {self.s} dummies)",
            "blanket (GRR + dummies)" if self.certificate == "blanket" else "vr(grr)",
        )


def laplace_histogram(counts: np.ndarray, eps_c: float, rng: np.random.Generator) -> np.ndarray:
    """Central Laplace: (counts + Lap(2/eps_c))/n, replace-one sensitivity 2."""
    c = np.asarray(counts, dtype=np.float64)
    return laplace_mechanism(c, LAPLACE_SENSITIVITY, eps_c, rng) / c.sum()


def laplace_mse(n: int, eps_c: float) -> float:
    """Exact MSE of :func:`laplace_histogram`: 2 (2/eps)^2 / n^2 = 8/(n^2 eps^2)."""
    return laplace_variance(LAPLACE_SENSITIVITY, eps_c) / n**2
