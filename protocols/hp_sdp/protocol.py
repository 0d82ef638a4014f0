"""HP-SDP (seed 002): histogram publication under shuffle DP = SRR + uniform shuffle + OLH estimator + POP.

Spec: ``../shared/specs/002-hp-sdp.md``. What is implemented, and how it departs from the paper:

* **SRR** (Algorithm 2) is OLH with a local budget eps_l and hash range g: keep H(v) w.p. 1 - gamma,
  else a uniform value of [g], gamma = g/(e^eps_l + g - 1). That is exactly the distribution of
  :func:`protocols.oracles.olh.olh_perturb` (report H(v) w.p. e^eps_l/(e^eps_l + g - 1), every other value
  w.p. 1/(e^eps_l + g - 1)), which is reused. Hash family: ((a v + b) mod P) mod g of
  :mod:`protocols.oracles.olh`; every user draws (a, b) fresh from the client's generator (CSPRNG-seeded on
  real clients), never from the user's id. The message is ``(seed, y)`` with
  ``seed = (a - 1) P + b`` in [0, (P - 1) P): width 2, one mix-net payload.
* **Calibration** from the central (eps_c, delta) and n:
  ``accounting="paper"`` uses Theorem 1, eps_c = sqrt(14 ln(2/delta)(e^eps_l + g - 1)/(n - 1)) with
  C = (n-1) eps_c^2/(14 ln(2/delta)), eps_l = ln(C - g + 1) and the spec's optimal g = round((C+2)/3)
  (spec section 5.3; needs eps_c <= 1 and g < C). ``accounting="tight"`` uses the DP core's
  variation-ratio bound with OLH's parameters (``protocols.accountant``, mechanism "olh") and picks
  g minimising the exact MSE before POP (data-independent, it needs only d) over a search on g.
* **Estimator**: the unbiased OLH estimator with the exact collision probability of the family
  (:func:`protocols.oracles.olh.olh_estimate_from_support`). The paper's printed estimator (Eq. 19) is kept
  as :func:`estimate_paper` only to demonstrate its bias (erratum E1).
* **POP**: Euclidean projection onto the simplex, exact sort-based (:func:`pop`) and the paper's
  iterative Eq. 22 (:func:`pop_iterative`); both from :mod:`protocols.oracles.postprocess`.
* **Shuffle**: any of the project's uniform shufflers. Algorithm 3 (MRS) is only a reference
  enumerator in :mod:`protocols.hp_sdp.mrs`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from protocols.accountant import balle
from protocols.base import Batches, BatchSpec, ShuffleProtocol
from protocols.oracles.olh import (
    OLHFamily,
    _inverses,
    olh_estimate_from_support,
    olh_family,
    olh_perturb,
    olh_probabilities,
    olh_support,
    olh_variance,
)
from protocols.oracles.postprocess import norm_sub, project_simplex
from protocols.privacy.ledger import Release
from protocols.privacy.record import PrivacyStatement
from protocols.privacy.statements import shuffled_release

ACCOUNTINGS = ("paper", "tight")
G_MAX = 1 << 20  # largest hash range the tight search considers (P < 2^31 in protocols.oracles.olh)


# -- Theorem 1 and calibration -----------------------------------------------------------------


def _check_privacy(eps_c: float, delta: float, n: int) -> None:
    if not (eps_c > 0 and math.isfinite(eps_c)):
        raise ValueError(f"HP-SDP: eps_c must be finite and > 0, got {eps_c}")
    if not 0 < delta < 1:
        raise ValueError(f"HP-SDP: delta must lie in (0, 1), got {delta}")
    if int(n) != n or n < 2:
        raise ValueError(f"HP-SDP: n must be an integer >= 2, got {n}")


def theorem1_epsilon(eps_l: float, g: int, n: int, delta: float) -> float:
    """Theorem 1: central eps of n shuffled SRR reports, sqrt(14 ln(2/delta)(e^eps_l+g-1)/(n-1))."""
    _check_privacy(1.0, delta, n)
    return balle.blanket_epsilon(eps_l, n, delta, g)


def blanket_capacity(eps_c: float, delta: float, n: int) -> float:
    """C = (n - 1) eps_c^2 / (14 ln(2/delta)) = e^eps_l + g - 1 at equality in Theorem 1."""
    _check_privacy(eps_c, delta, n)
    return balle.blanket_capacity(eps_c, n, delta)


def paper_optimal_g(eps_c: float, delta: float, n: int) -> int:
    """The spec's variance-optimal hash range under Theorem 1: round((C + 2)/3), at least 2."""
    return max(2, int(round((blanket_capacity(eps_c, delta, n) + 2) / 3)))


@dataclass(frozen=True)
class SRRParams:
    """Calibrated SRR: local budget, hash range, blanket probability and the certified guarantee."""

    eps_c: float  # target central epsilon
    delta: float
    n: int
    g: int
    eps_l: float
    gamma: float  # blanket probability g/(e^eps_l + g - 1)
    accounting: str  # "paper" (Theorem 1) | "tight" (variation-ratio bound, mechanism olh)
    eps_certified: float  # the bound evaluated forward at (eps_l, g, n, delta)
    eps_lower: float | None = None  # the tight accountant's lower bound, when it gives one

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)


def calibrate_paper(eps_c: float, delta: float, n: int, g: int | None = None) -> SRRParams:
    """Theorem 1 calibration (spec 5.3): eps_l = ln(C - g + 1), g = round((C+2)/3) by default.

    Theorem 1 is Balle et al.'s blanket theorem with k = g: it needs eps_c <= 1 and the blanket
    condition (n - 1) eps_c >= 27 (e^eps_l + g - 1); outside them this refuses (ValueError) and
    names the accountant's calibration (``accounting="tight"``) as the way on.
    """
    _check_privacy(eps_c, delta, n)
    if eps_c > 1:
        raise ValueError(
            f"HP-SDP (paper accounting): Theorem 1 needs eps_c <= 1, got {eps_c}; "
            "use accounting=tight (the accountant's bound holds for any eps_c)"
        )
    C = blanket_capacity(eps_c, delta, n)
    g = paper_optimal_g(eps_c, delta, n) if g is None else int(g)
    if g < 2:
        raise ValueError(f"HP-SDP: hash range g must be >= 2, got {g}")
    if g >= C:
        raise ValueError(
            f"HP-SDP (paper accounting): g={g} must be < C={C:.3f} = (n-1) eps_c^2/(14 ln(2/delta)) "
            f"(n={n}, eps_c={eps_c}, delta={delta}); lower g or raise n or eps_c"
        )
    eps_l = math.log(C - g + 1)
    if eps_l <= 0:
        raise ValueError(
            f"HP-SDP (paper accounting): eps_l = ln(C - g + 1) = {eps_l:.4g} <= 0 is no privacy "
            f"guarantee (g={g}, C={C:.3f}); lower g or raise n or eps_c"
        )
    if (n - 1) * eps_c < 27.0 * (math.exp(eps_l) + g - 1):
        raise ValueError(
            "HP-SDP (paper accounting): Theorem 1's blanket condition (n-1) eps_c >= "
            f"27 (e^eps_l + g - 1) fails (n={n}, eps_c={eps_c}, g={g}); use accounting=tight"
        )
    gamma = g / (math.exp(eps_l) + g - 1)
    return SRRParams(
        eps_c, delta, int(n), g, eps_l, gamma, "paper", theorem1_epsilon(eps_l, g, n, delta)
    )


def olh_variance0(eps_l: float, g: int, n: int) -> float:
    """Approximate estimator variance at f = 0, q(1-q)/(n(p-q)^2) with q = 1/g (g-range OLH)."""
    e = math.exp(eps_l)
    p, q = e / (e + g - 1), 1.0 / g
    return q * (1 - q) / (n * (p - q) ** 2)


def mean_variance(eps_l: float, g: int, n: int, d: int) -> float:
    """Exact MSE before POP, (1/d) sum_v Var[f_v] = ((1/d) p(1-p) + (1-1/d) q*(1-q*))/(n(p-q*)^2).

    Data-independent because the true frequencies sum to 1 (their mean is 1/d).
    """
    p, qs = olh_probabilities(eps_l, olh_family(d, g))
    return ((1 / d) * p * (1 - p) + (1 - 1 / d) * qs * (1 - qs)) / (n * (p - qs) ** 2)


@lru_cache(maxsize=4096)
def _tight_eps_l(eps_c: float, delta: float, n: int, g: int) -> float | None:
    from protocols.accountant import max_local_epsilon

    return max_local_epsilon(eps_c, n, delta, bound="vr", mechanism="olh", g=g)


@lru_cache(maxsize=512)
def _tight_best_g(eps_c: float, delta: float, n: int, d: int) -> int:
    """g minimising the exact MSE under the tight bound: coarse log grid, then local refinement."""

    def var(g: int) -> float:
        e = _tight_eps_l(eps_c, delta, n, g)
        return math.inf if e is None else mean_variance(e, g, n, d)

    grid = sorted({max(2, int(round(x))) for x in np.geomspace(2, G_MAX, 11)})  # ratio ~4
    best = min(grid, key=var)
    ratio = 2.0
    while (
        ratio > 1.04
    ):  # local refinement by shrinking multiplicative steps (MSE flat near optimum)
        cands = {best, max(2, int(round(best / ratio))), min(G_MAX, int(round(best * ratio)))}
        best = min(cands, key=var)
        ratio = math.sqrt(ratio)
    return best


def calibrate_tight(
    eps_c: float, delta: float, n: int, g: int | None = None, d: int | None = None
) -> SRRParams:
    """Variation-ratio calibration (mechanism olh); g minimises the exact MSE for domain d."""
    from protocols.accountant import amplify

    _check_privacy(eps_c, delta, n)
    if g is None:
        if d is None or d < 2:
            raise ValueError(
                f"HP-SDP (tight accounting): choosing g needs the domain size d, got {d}"
            )
        g = _tight_best_g(float(eps_c), float(delta), int(n), int(d))
    g = int(g)
    if g < 2:
        raise ValueError(f"HP-SDP: hash range g must be >= 2, got {g}")
    eps_l = _tight_eps_l(float(eps_c), float(delta), int(n), g)
    if eps_l is None:
        raise ValueError(
            f"HP-SDP (tight accounting): no local epsilon reaches eps_c={eps_c} with n={n}, "
            f"delta={delta}, g={g}"
        )
    amp = amplify(eps_l, int(n), delta, bound="vr", mechanism="olh", g=g)
    gamma = g / (math.exp(eps_l) + g - 1)
    cert = amp.eps_central if amp.eps_central is not None else eps_l
    return SRRParams(eps_c, delta, int(n), g, eps_l, gamma, "tight", cert, amp.lower)


def calibrate(
    eps_c: float,
    delta: float,
    n: int,
    g: int | None = None,
    accounting: str = "paper",
    d: int | None = None,
) -> SRRParams:
    """SRR parameters for a central (eps_c, delta) over n users (``accounting`` paper|tight).

    ``d`` (the domain size) is needed to choose g under the tight accounting.
    """
    if accounting == "paper":
        return calibrate_paper(eps_c, delta, n, g)
    if accounting == "tight":
        return calibrate_tight(eps_c, delta, n, g, d)
    raise ValueError(f"HP-SDP: unknown accounting {accounting!r}; expected one of {ACCOUNTINGS}")


# -- messages ----------------------------------------------------------------------------------


def seed_bound(family: OLHFamily) -> int:
    """Number of hash seeds (a, b): (P - 1) P."""
    return (family.P - 1) * family.P


def srr_encode(
    values: np.ndarray, family: OLHFamily, eps_l: float, rng: np.random.Generator
) -> np.ndarray:
    """SRR messages ``(seed, y)`` of all users, int64 (n, 2); fresh random seeds per user."""
    r = olh_perturb(values, family, eps_l, rng)
    seed = (r[:, 0] - 1) * family.P + r[:, 1]
    return np.stack([seed, r[:, 2]], axis=1)


def srr_reports(messages: np.ndarray, family: OLHFamily) -> tuple[np.ndarray, np.ndarray]:
    """(reports (a, b, y) of the well-formed messages, boolean mask of well-formed rows)."""
    m = np.asarray(messages, dtype=np.int64)
    if m.ndim != 2 or m.shape[1] != 2:
        raise ValueError(f"SRR: messages must have shape (n, 2) = (seed, y), got {m.shape}")
    seed, y = m[:, 0], m[:, 1]
    ok = (seed >= 0) & (seed < seed_bound(family)) & (y >= 0) & (y < family.g)
    a, b = np.divmod(seed[ok], family.P)
    return np.stack([a + 1, b, y[ok]], axis=1), ok


def support_incremental(reports: np.ndarray, family: OLHFamily, chunk: int = 1 << 18) -> np.ndarray:
    """S_v for all v by inverted voting with incremental votes (same counts as ``olh_support``).

    Report (a, b, y) supports v_m = base + m step (mod P), m < ceil((P - y)/g) (see
    :func:`protocols.oracles.olh.olh_support`). Instead of materialising a (users x votes) block with a
    modulo per vote, keep one uint32 vote per user and advance it: cur += step, then
    cur = min(cur, cur - P) (the subtraction wraps around when cur < P), one ``bincount`` per
    step. About 2x faster than ``olh_support`` when g is small (many votes per report, e.g.
    n = 1e6, d = 42,178, g = 12). Reports must be well formed (use :func:`srr_reports`).
    """
    r = np.asarray(reports, dtype=np.int64)
    P, g, d = family.P, family.g, family.d
    inv = _inverses(P)
    M = -(-P // g)
    counts = np.zeros(P, dtype=np.int64)
    Pu = np.uint32(P)
    for s in range(0, r.shape[0], chunk):
        a, b, y = r[s : s + chunk, 0], r[s : s + chunk, 1], r[s : s + chunk, 2]
        ai = inv[a]
        cur = ((y - b) % P * ai % P).astype(np.uint32)
        step = (g * ai % P).astype(np.uint32)
        tmp = np.empty_like(cur)
        for _ in range(M - 1):
            counts += np.bincount(cur, minlength=P)
            np.add(cur, step, out=cur)
            np.subtract(cur, Pu, out=tmp)
            np.minimum(cur, tmp, out=cur)
        counts += np.bincount(cur[y + g * (M - 1) < P], minlength=P)  # the last vote, if any
    return counts[:d]


INCREMENTAL_MIN_VOTES = 16  # votes per report above which support_incremental is used


def srr_support(messages: np.ndarray, family: OLHFamily) -> tuple[np.ndarray, int]:
    """(support counts S_v for every v, number of valid messages); malformed rows are dropped."""
    reports, ok = srr_reports(messages, family)
    if -(-family.P // family.g) >= INCREMENTAL_MIN_VOTES:
        return support_incremental(reports, family), int(ok.sum())
    return olh_support(reports, family), int(ok.sum())


# -- estimators, variance, POP -----------------------------------------------------------------


def estimate_unbiased(support: np.ndarray, n: int, eps_l: float, family: OLHFamily) -> np.ndarray:
    """Unbiased OLH frequencies (spec 6.2) with the family's exact collision probability."""
    return olh_estimate_from_support(support, eps_l, family, n)


def estimate_paper(support: np.ndarray, n: int, gamma: float, g: int) -> np.ndarray:
    """The paper's printed estimator (Eq. 19): (m1/n - b)/(1 - 2b), b = gamma (g-1)/g. BIASED."""
    if n < 1:
        raise ValueError(f"estimate_paper: n must be >= 1, got {n}")
    b = gamma * (g - 1) / g
    return (np.asarray(support, dtype=np.float64) / n - b) / (1 - 2 * b)


def paper_estimator_mean(
    freqs: np.ndarray, eps_l: float, gamma: float, family: OLHFamily
) -> np.ndarray:
    """E[estimate_paper] under the real mechanism: (f p + (1-f) q* - b)/(1 - 2b) (erratum E1)."""
    p, qs = olh_probabilities(eps_l, family)
    b = gamma * (family.g - 1) / family.g
    f = np.asarray(freqs, dtype=np.float64)
    return (f * p + (1 - f) * qs - b) / (1 - 2 * b)


def srr_variance(freqs: np.ndarray, eps_l: float, family: OLHFamily, n: int) -> np.ndarray:
    """Exact variance of :func:`estimate_unbiased` per value (Theorem 3 corrected, spec 6.3)."""
    return olh_variance(freqs, eps_l, family, n)


def sample_olh_support(
    counts: np.ndarray,
    eps_l: float,
    family: OLHFamily,
    rng: np.random.Generator,
    n_fake: int = 0,
) -> np.ndarray:
    """Per-bin support counts with their exact marginal laws, bins drawn independently.

    S_v ~ Bin(n_v, p) + Bin(n - n_v, q*) (+ Bin(n_fake, 1/g) for uniform fake reports). The weak
    correlation between bins (one report supports about P/g values) is ignored: the expected MSE
    before POP is exact, a post-processed draw is an approximation (checked against real runs).
    """
    c = np.asarray(counts, dtype=np.int64)
    n = int(c.sum())
    p, qs = olh_probabilities(eps_l, family)
    s = rng.binomial(c, p) + rng.binomial(n - c, qs)
    if n_fake:
        s = s + rng.binomial(int(n_fake), 1.0 / family.g, size=c.size)
    return s.astype(np.float64)


def pop(est: np.ndarray) -> np.ndarray:
    """POP (Eq. 20): exact sort-based Euclidean projection onto the probability simplex."""
    return project_simplex(est, 1.0)


def pop_iterative(est: np.ndarray) -> np.ndarray:
    """POP by the paper's Eq. 22 iteration (Norm-Sub); equals :func:`pop` at convergence."""
    return norm_sub(est, 1.0)


def mse(est: np.ndarray, truth: np.ndarray) -> float:
    """Eq. 6: mean over the domain of the squared frequency error."""
    e, t = np.asarray(est, dtype=np.float64), np.asarray(truth, dtype=np.float64)
    if e.shape != t.shape:
        raise ValueError(f"mse: shapes differ, {e.shape} vs {t.shape}")
    return float(np.mean((e - t) ** 2))


# -- the shuffle protocol ----------------------------------------------------------------------


class HPSDPProtocol(ShuffleProtocol):
    """HP-SDP: one (seed, y) message per user, one batch; analyzer = OLH estimate (+ POP).

    ``post="pop"`` is HP-SDP, ``post="none"`` is the HP-SM baseline (same messages, no POP).
    The analyzer publishes ``frequencies`` (after ``post``) and ``raw_frequencies`` (unbiased).
    """

    name = "hp-sdp"

    def __init__(
        self,
        d: int,
        params: SRRParams,
        post: str = "pop",
        max_epsilon: float | None = None,
        n_users: int | None = None,
    ) -> None:
        if int(d) != d or d < 2:
            raise ValueError(f"HP-SDP: domain size d must be an integer >= 2, got {d}")
        if post not in ("pop", "none"):
            raise ValueError(f"HP-SDP: post must be 'pop' or 'none', got {post!r}")
        self.d, self.params, self.post = int(d), params, post
        self.max_epsilon = params.eps_c if max_epsilon is None else float(max_epsilon)
        self.n_users = params.n if n_users is None else int(n_users)  # params.n: min_users
        self.family = olh_family(self.d, params.g)
        if post == "none":
            self.name = "hp-sm"

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("reports", 2, max(seed_bound(self.family), self.family.g))]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        values = np.asarray(records, dtype=np.int64).reshape(-1)
        return {"reports": srr_encode(values, self.family, self.params.eps_l, rng)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        msgs = shuffled.get("reports")
        if msgs is None:
            raise ValueError("HP-SDP analyzer: no 'reports' batch received")
        support, n_ok = srr_support(msgs, self.family)
        if n_ok == 0:
            raise ValueError("HP-SDP analyzer: no valid (seed, y) message received")
        raw = estimate_unbiased(support, n_ok, self.params.eps_l, self.family)
        out = pop(raw) if self.post == "pop" else raw
        return {
            "frequencies": out.tolist(),
            "raw_frequencies": raw.tolist(),
            "reports": n_ok,
            "invalid": int(msgs.shape[0] - n_ok),
            "post": self.post,
        }

    def variance(self, freqs: np.ndarray) -> np.ndarray:
        """Exact per-value variance of the unbiased (pre-POP) estimate for the true ``freqs``."""
        return srr_variance(freqs, self.params.eps_l, self.family, self.n_users)

    def sample(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Published estimate from support counts drawn by :func:`sample_olh_support`."""
        s = sample_olh_support(counts, self.params.eps_l, self.family, rng)
        raw = estimate_unbiased(s, int(np.sum(counts)), self.params.eps_l, self.family)
        return pop(raw) if self.post == "pop" else raw

    def messages_per_user(self) -> float:
        """One message per user."""
        return 1.0

    def bits_per_user(self) -> float:
        """Communication per user: one message of ceil(log2 seeds) + ceil(log2 g) bits."""
        return float(
            math.ceil(math.log2(seed_bound(self.family))) + math.ceil(math.log2(self.family.g))
        )

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """The histogram (before and after POP, post-processing): shuffled OLH reports,
        calibrated at ``params.n`` and re-accounted below it (the accountant's OLH bound)."""
        p = self.params
        bound = "Theorem 1 (Balle et al. blanket, k = g)" if p.accounting == "paper" else "vr (olh)"
        return [
            shuffled_release(
                f"histogram over {self.d} values ({'POP' if self.post == 'pop' else 'no POP'})",
                f"SRR/OLH(g={p.g}, P={self.family.P}), eps_l = {p.eps_l:.4g}, uniform shuffle",
                eps_local=p.eps_l,
                eps_planned=p.eps_certified,
                delta=p.delta,
                n_accounted=p.n,
                n_received=counts.get("reports", 0),
                bound=bound,
                accountant={"mechanism": "olh", "g": p.g},
            )
        ]

    def privacy(self) -> dict[str, Any]:
        p = self.params
        return PrivacyStatement(
            certified_epsilon=p.eps_certified,
            certified_epsilon_lower=p.eps_lower,
            target_epsilon=p.eps_c,
            delta=p.delta,
            local_epsilon=p.eps_l,
            bound="theorem1 (blanket, paper)" if p.accounting == "paper" else "vr (olh, tight)",
            mechanism=f"srr/olh(g={p.g}, P={self.family.P})",
            extra={"g": p.g, "gamma": p.gamma},
        ).wire()
