"""RSum_RM: recursive multi-precision real summation (Balle, Bell, Gascon, Nissim, CCS 2020).

A user writes x in [0, 1] with m precisions p_1..p_m (P_t = p_1 ... p_t) as
x = sum_{t<m} d_t / P_t + r / P_{m-1}: d_t = floor(p_t r_{t-1}) in [0, p_t) (r_0 = x, r_t the
remainder), and the last digit is the unbiased rounding of p_m r_{m-1} to [0, p_m]. Digit t goes
through k-RR over its k_t values (k_t = p_t, and p_m + 1 for the last) with lambda_t from the
survey's Theorem 4 at (eps_t, delta/m), sum eps_t = eps (basic composition over the m messages
gives (eps, delta)), and is sent to its own shuffle batch ``digit{t}`` (the digit index is public:
multi-shuffler mode, the survey's "each independently perturbed"). The analyzer debiases each
digit sum (:mod:`protocols.sums.krr_sum`) and returns sum_t est_t / P_t: unbiased.

Precisions. ``"generic"``: the paper's closed form as in the authors' code
(``adriagascon/shuffledpsummation``, ``ManyMessageRealSum``): a = ((3^m - 1) n eps^2/m^3)^(3^-(m+1)),
p_t = min(ceil(a^(3^t)), k_max) with k_max the largest domain Theorem 4 admits at (eps/m, delta/m),
and eps_t = eps/m. ``"optimized"`` (default): the split eps_t (a 0.05 eps grid) and the integers
p_t minimising the data-independent worst-case MSE sum_t n w(k_t, eps_t)/P_t^2 + n/(4 P_m^2)
(w = worst per-user k-RR variance) over a log grid refined locally; the authors' optimized
parameters also come from a numerical search of precisions and epsilons (their
``find_parameters``); ours optimizes our exact variance expression.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from typing import Any

import numpy as np

from protocols.accountant import survey
from protocols.accountant.balle import blanket_mass_needed
from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee, certified
from protocols.catalogue.inputs import label_counts
from protocols.sums.krr_sum import krr_integers, krr_sum_estimate, krr_sum_variance, theorem4_krr
from protocols.sums.rounding import check_unit_values, randomized_rounding, rounding_variance

PRECISIONS = ("optimized", "generic")


def max_domain(n: int, eps_j: float, delta_j: float) -> int:
    """Largest k with Theorem 4's lambda <= 1 at (eps_j, delta_j): (n-1) eps_j/max(14 ln(2/d)/eps_j, 27)."""
    return int((n - 1) * eps_j / max(blanket_mass_needed(eps_j, delta_j) * eps_j, 27.0))


def _worst_var(k: np.ndarray, n: int, eps_j: float, delta_j: float) -> np.ndarray:
    """Worst per-user variance of the debiased k-RR digit (z at an end), vectorized over k."""
    k = np.asarray(k, dtype=np.float64)
    lam = np.maximum(k * blanket_mass_needed(eps_j, delta_j) / (n - 1), 27 * k / ((n - 1) * eps_j))
    v = lam * (k - 1) * (2 * k - 1) / 6 - (lam * (k - 1) / 2) ** 2
    return np.where(lam < 1, v / (1 - lam) ** 2, np.inf)


def _mse_grid(grids: list[np.ndarray], es: tuple[float, ...], n: int, dj: float) -> np.ndarray:
    """Worst-case MSE on the product grid of precisions (axis t = precision of digit t)."""
    m = len(grids)
    total = np.zeros([g.size for g in grids])
    big = np.ones_like(total)
    for t, g in enumerate(grids):
        shape = [1] * m
        shape[t] = g.size
        big = big * g.reshape(shape).astype(np.float64)
        k = g + (1 if t == m - 1 else 0)
        total = total + n * _worst_var(k, n, es[t], dj).reshape(shape) / big**2
    return total + n / (4 * big**2)


@lru_cache(maxsize=128)
def rm_parameters(
    n: int, eps: float, delta: float, m: int, how: str
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """(precisions, per-digit epsilons) for n users at (eps, delta) (module docstring)."""
    if m not in (2, 3):
        raise ValueError(f"RSum_RM: m must be 2 or 3, got {m}")
    dj = delta / m
    if how == "generic":
        ej = eps / m
        kmax = max_domain(n, ej, dj)
        if kmax < 3:
            raise ValueError(f"RSum_RM: Theorem 4 admits digits of at most {kmax} values (n={n})")
        a = ((3**m - 1) * n * eps**2 / m**3) ** (3.0 ** (-(m + 1)))
        ps = [min(max(2, math.ceil(a ** (3**t))), kmax) for t in range(1, m + 1)]
        ps[-1] = min(ps[-1], kmax - 1)
        return tuple(int(p) for p in ps), (ej,) * m
    if how != "optimized":
        raise ValueError(f"RSum_RM: precisions must be one of {PRECISIONS}, got {how!r}")
    steps = np.arange(1, 20) / 20.0
    splits = [
        tuple(float(x) * eps for x in c) + (float(eps * (1 - sum(c))),)
        for c in itertools.product(steps, repeat=m - 1)
        if sum(c) < 1 - 1e-9
    ]
    best: tuple[float, tuple[int, ...], tuple[float, ...]] | None = None
    for es in splits:
        kmax = [max_domain(n, e, dj) for e in es]
        if min(kmax) < 3 or max(es) > 1.0:  # Theorem 4 needs eps_t <= 1
            continue
        grids = [
            np.unique(np.rint(np.geomspace(2, km - (1 if t == m - 1 else 0), 24)).astype(np.int64))
            for t, km in enumerate(kmax)
        ]
        v = _mse_grid(grids, es, n, dj)
        i = np.unravel_index(int(np.argmin(v)), v.shape)
        if best is None or v[i] < best[0]:
            best = (float(v[i]), tuple(int(g[j]) for g, j in zip(grids, i)), es)
    if best is None:
        raise ValueError(f"RSum_RM: Theorem 4 admits no {m}-digit encoding (n={n}, eps={eps})")
    _, ps, es = best
    kmax = [max_domain(n, e, dj) for e in es]
    grids = [  # local refinement, +-20% around the best precisions
        np.arange(max(2, int(p / 1.2)), min(km - (1 if t == m - 1 else 0), int(p * 1.2) + 1) + 1)
        for t, (p, km) in enumerate(zip(ps, kmax))
    ]
    v = _mse_grid(grids, es, n, dj)
    i = np.unravel_index(int(np.argmin(v)), v.shape)
    return tuple(int(g[j]) for g, j in zip(grids, i)), es


def rm_digits(x: np.ndarray, ps: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """(n, m) digits of every user (module docstring); the last one randomly rounded."""
    r = np.asarray(x, dtype=np.float64).copy()
    out = np.empty((r.size, len(ps)), dtype=np.int64)
    for t, p in enumerate(ps[:-1]):
        y = r * p
        d = np.minimum(np.floor(y), p - 1)  # x = 1 keeps the top digit, remainder 1
        out[:, t] = d.astype(np.int64)
        r = y - d
    out[:, -1] = randomized_rounding(np.clip(r, 0.0, 1.0), ps[-1], rng)
    return out


class RSumRM(CatalogueProtocol):
    """m k-RR digit messages per user, batches ``digit0`` .. ``digit{m-1}``."""

    name = "rsum_rm"
    release_what = "sum of values in [0, 1]"

    def __init__(
        self, n: int, eps_c: float, delta: float, m: int = 3, precisions: str = "optimized"
    ) -> None:
        self.set_target("RSum_RM", n, eps_c, delta)
        self.m = int(m)
        self.how = precisions
        self.ps, self.eps_js = rm_parameters(self.n, self.eps_c, self.delta, self.m, precisions)
        self.ks = tuple(self.ps[:-1]) + (self.ps[-1] + 1,)
        self.big = tuple(int(v) for v in np.cumprod(self.ps))
        self.delta_j = self.delta / self.m
        lam_eps = [
            theorem4_krr(e, self.n, self.delta_j, k, "RSum_RM")
            for k, e in zip(self.ks, self.eps_js)
        ]
        self.lams = tuple(a for a, _ in lam_eps)
        self.eps_ls = tuple(b for _, b in lam_eps)

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec(f"digit{t}", 1, k) for t, k in enumerate(self.ks)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        x = check_unit_values(records, "RSum_RM.encode")
        digits = rm_digits(x, self.ps, rng)
        return {
            f"digit{t}": krr_integers(digits[:, t], k, self.lams[t], rng).reshape(-1, 1)
            for t, k in enumerate(self.ks)
        }

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        total, reports, bad = 0.0, [], 0
        for t, k in enumerate(self.ks):
            c, b = label_counts(shuffled, f"digit{t}", k, "RSum_RM analyzer")
            m = int(c.sum())
            est = krr_sum_estimate(float(np.dot(c, np.arange(k))), m, k, self.lams[t])
            total += est / self.big[t]
            reports.append(m)
            bad += b
        return {"sum": total, "reports_per_digit": reports, "invalid": bad}

    def variance(self, x: np.ndarray) -> float:
        """Exact variance of the estimate for the values x."""
        rng = np.random.default_rng(0)  # only the deterministic digits are used below
        d = rm_digits(np.asarray(x, dtype=np.float64), self.ps, rng)
        v = 0.0
        for t in range(self.m - 1):
            v += krr_sum_variance(d[:, t], self.ks[t], self.lams[t]) / self.big[t] ** 2
        r = np.asarray(x, dtype=np.float64)
        for p in self.ps[:-1]:
            y = r * p
            r = y - np.minimum(np.floor(y), p - 1)
        y = np.clip(r, 0.0, 1.0) * self.ps[-1]
        lo = np.floor(y).astype(np.int64)
        f = y - lo
        k = self.ks[-1]
        per = np.array([krr_sum_variance(np.array([z]), k, self.lams[-1]) for z in range(k)])
        last = float(np.sum((1 - f) * per[lo] + f * per[np.minimum(lo + 1, k - 1)]))
        return (
            v
            + last / self.big[-1] ** 2
            + rounding_variance(r, self.ps[-1]) * (self.ps[-1] ** 2 / self.big[-1] ** 2)
        )

    def messages_per_user(self) -> float:
        return float(self.m)

    def bits_per_user(self) -> float:
        return float(sum(math.ceil(math.log2(k)) for k in self.ks))

    def max_messages(self) -> dict[str, int]:
        return {f"digit{t}": 1 for t in range(self.m)}

    def mechanism(self) -> str:
        return f"{self.m} digits (precisions {self.ps}) each k-RR + shuffle per digit"

    def guarantee(self, users: int) -> Guarantee:
        parts = []
        for k, e in zip(self.ks, self.eps_ls):
            parts.append((certified(survey.theorem4(e, users, self.delta_j, k)), self.delta_j))
        eps, delta = survey.sequential(parts)
        return Guarantee(eps, delta, f"survey-theorem4 per digit, sequential over {self.m}")

    def privacy(self) -> dict[str, Any]:
        return self.statement(
            {"eps_local_per_digit": list(self.eps_ls), "lambda_per_digit": list(self.lams),
             "precisions": list(self.ps), "eps_per_digit": list(self.eps_js),
             "precision_choice": self.how},
            local_epsilon=sum(self.eps_ls),
        )  # fmt: skip
