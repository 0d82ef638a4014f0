"""Statistical privacy audit of local randomizers (black-box, Clopper-Pearson).

For two neighbouring inputs x, x' the randomizer is run ``n_samples`` times on each; every
output is mapped to one of ``n_events`` discrete *atoms* (the full output for small output
spaces, or a post-processing of it, e.g. the two bits at positions x and x' of a unary
encoding; any post-processing is a valid event space for a lower bound). For every atom o and
both directions, a Clopper-Pearson lower bound on Pr[o | x] and upper bound on Pr[o | x'] give
a lower confidence bound on the privacy loss

    eps_lower = max_o log( CP_low(p_o) / CP_high(q_o) ),

Bonferroni-corrected over the 2 * 2 * n_events one-sided bounds, so with probability at least
1 - alpha the randomizer's true epsilon is >= eps_lower. An audit *fails* when eps_lower exceeds
the claimed epsilon: the randomizer is then (with confidence 1 - alpha) not eps-LDP.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from protocols.oracles.grr import grr_perturb
from protocols.oracles.hadamard_response import hadamard_entry, hr_perturb
from protocols.oracles.olh import OLHFamily, olh_perturb
from protocols.oracles.unary_encoding import ue_perturb

Sampler = Callable[[int, int, np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class AuditResult:
    """Outcome of one audit."""

    eps_claimed: float
    eps_lower: float  # Clopper-Pearson lower confidence bound on the privacy loss
    eps_hat: float  # plug-in estimate max_o |log(p_o / q_o)| over atoms seen under both inputs
    worst_event: int
    n_samples: int
    alpha: float

    @property
    def passed(self) -> bool:
        """True when the audit found no violation of the claimed epsilon."""
        return self.eps_lower <= self.eps_claimed


def clopper_pearson(k: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided (lower, upper) Clopper-Pearson bounds, each at level alpha, for k of n."""
    k = np.asarray(k, dtype=np.float64)
    lo = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1), n - k + 1), 0.0)
    hi = np.where(k < n, stats.beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1)), 1.0)
    return lo, hi


def audit_counts(
    counts_x: np.ndarray, counts_xp: np.ndarray, eps_claimed: float, alpha: float = 0.05
) -> AuditResult:
    """Audit from per-atom output counts under x and x' (same number of samples each)."""
    cx = np.asarray(counts_x, dtype=np.int64)
    cxp = np.asarray(counts_xp, dtype=np.int64)
    if cx.shape != cxp.shape or cx.ndim != 1:
        raise ValueError("audit: counts under x and x' must be 1-D arrays of equal length")
    n = int(cx.sum())
    if n != int(cxp.sum()) or n == 0:
        raise ValueError("audit: both inputs need the same positive number of samples")
    level = alpha / (4 * cx.size)  # Bonferroni over atoms, directions and the two bounds
    lo_x, hi_x = clopper_pearson(cx, n, level)
    lo_xp, hi_xp = clopper_pearson(cxp, n, level)
    with np.errstate(divide="ignore"):
        fwd = np.log(lo_x) - np.log(hi_xp)
        bwd = np.log(lo_xp) - np.log(hi_x)
        both = (cx > 0) & (cxp > 0)
        hat = np.where(both, np.abs(np.log(np.maximum(cx, 1)) - np.log(np.maximum(cxp, 1))), 0.0)
    loss = np.maximum(fwd, bwd)
    worst = int(np.argmax(loss))
    return AuditResult(
        eps_claimed=float(eps_claimed),
        eps_lower=float(max(0.0, loss[worst])),
        eps_hat=float(hat.max()),
        worst_event=worst,
        n_samples=n,
        alpha=alpha,
    )


def audit_randomizer(
    sample_events: Sampler,
    x: int,
    x_prime: int,
    n_events: int,
    eps_claimed: float,
    *,
    n_samples: int = 1_000_000,
    rng: np.random.Generator,
    alpha: float = 0.05,
    block: int = 1_000_000,
) -> AuditResult:
    """Run ``sample_events(value, count, rng) -> atom ids`` n_samples times on x and on x'."""
    if n_samples < 1:
        raise ValueError(f"audit: n_samples must be >= 1, got {n_samples}")
    counts = []
    for value in (x, x_prime):
        c = np.zeros(n_events, dtype=np.int64)
        done = 0
        while done < n_samples:
            m = min(block, n_samples - done)
            ev = np.asarray(sample_events(value, m, rng), dtype=np.int64)
            if ev.shape != (m,) or (ev.size and (ev.min() < 0 or ev.max() >= n_events)):
                raise ValueError(f"audit: sampler must return {m} atom ids in [0, {n_events})")
            c += np.bincount(ev, minlength=n_events)
            done += m
        counts.append(c)
    return audit_counts(counts[0], counts[1], eps_claimed, alpha)


# --- event maps of this package's randomizers (x, x' are fixed by the audit) --------------


def grr_sampler(k: int, eps: float) -> tuple[Sampler, int]:
    """GRR: the output value itself (k atoms)."""
    return (lambda v, m, rng: grr_perturb(np.full(m, v), k, eps, rng)), k


def ue_sampler(d: int, eps: float, kind: str, x: int, x_prime: int) -> tuple[Sampler, int]:
    """Unary encoding: the two bits at positions x and x' (4 atoms)."""

    def sample(v: int, m: int, rng: np.random.Generator) -> np.ndarray:
        bits = ue_perturb(np.full(m, v), d, eps, rng, kind)
        return 2 * bits[:, x].astype(np.int64) + bits[:, x_prime]

    return sample, 4


def olh_sampler(family: OLHFamily, eps: float, x: int, x_prime: int) -> tuple[Sampler, int]:
    """OLH: (H(x) == y, H(x') == y) (4 atoms)."""

    def sample(v: int, m: int, rng: np.random.Generator) -> np.ndarray:
        r = olh_perturb(np.full(m, v), family, eps, rng)
        a, b, y = r[:, 0], r[:, 1], r[:, 2]
        hx = family.hash(a, b, x) == y
        hxp = family.hash(a, b, x_prime) == y
        return 2 * hx.astype(np.int64) + hxp

    return sample, 4


def hadamard_sampler(m_order: int, eps: float, x: int, x_prime: int) -> tuple[Sampler, int]:
    """Hadamard response: (sign agrees with H[j,x], sign agrees with H[j,x']) (4 atoms)."""

    def sample(v: int, m: int, rng: np.random.Generator) -> np.ndarray:
        r = hr_perturb(np.full(m, v), m_order, eps, rng)
        s = 2 * r[:, 1] - 1
        ax = (hadamard_entry(r[:, 0], x) * s) > 0
        axp = (hadamard_entry(r[:, 0], x_prime) * s) > 0
        return 2 * ax.astype(np.int64) + axp

    return sample, 4


def max_log_ratio(p: np.ndarray, q: np.ndarray) -> float:
    """Exact epsilon of two known output distributions: max |log p/q| over their support."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    if ((p > 0) != (q > 0)).any():
        return math.inf
    s = p > 0
    return float(np.abs(np.log(p[s]) - np.log(q[s])).max())
