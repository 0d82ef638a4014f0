"""The survey's amplification theorems (seed 004, Theorems 1-4 and 9), both directions, with
their validity conditions; sequential/parallel composition and the robust (gamma) variant.

Every function returns a :class:`Bound`: the number, or ``valid=False`` with the violated
condition spelled out ("not valid: ..."), never a number outside the theorem. Sources (the seed
lost every formula; see ``docs/survey.md`` for how each was recovered and checked):

- **Theorem 1** (Erlingsson et al., SODA 2019, interactive): eps_c = 12 eps_l sqrt(ln(1/delta)/n)
  for n >= 1000, delta in (0, 0.01], eps_l in (0, 1/2]. Constant and (closed) ranges as in the
  authors' reference code (``BorjaBalle/amplification-by-shuffling``, ``Erlingsson``), which also
  requires eps_c <= eps_l; the survey prints the open ranges n > 1000, delta < 0.01, eps_l < 0.5.
- **Theorem 2** (Balle, Bell, Gascon, Nissim, CRYPTO 2019, generic eps_l-LDP randomizer, valid
  for eps_l <= ln(n / ln(1/delta)) / 2 as the survey states). The paper's statement is
  asymptotic; we evaluate the paper's explicit privacy-blanket bounds for a *generic* randomizer
  (blanket gamma = e^-eps_l): ``"hoeffding"`` and ``"bennett"`` (default; its numbers match the
  published table of anchors-dp.md section 1.2, e.g. 0.0485 at n=1e5, eps_l=1, delta=1e-6).
- **Theorem 3** (Cheu et al., EUROCRYPT 2019, Boolean RR with uniform-bit probability lambda,
  survey parameterization lambda_survey = lambda_Cheu / n): for lambda in [14 ln(4/delta)/n, 1],
  eps_c = sqrt(32 ln(4/delta) / (lambda n)) (1 - lambda)  (Eq. 6). With lambda = 2/(e^eps_l+1)
  the survey's loose Eq. 7 is eps_c = sqrt(16 ln(4/delta)(e^eps_l + 1)/n) (dropping 1-lambda<=1),
  valid for 0 < eps_l <= ln n - ln(14 ln(4/delta)).
- **Theorem 4** (Balle et al. 2019, k-RR): for eps_c in (0, 1], the shuffled k-RR with
  lambda = max{14 k ln(2/delta)/((n-1) eps_c^2), 27 k/((n-1) eps_c)} is (eps_c, delta)-DP
  (Eq. 8); eps_l = ln(1 + k(1 - lambda)/lambda) (Eq. 5/9).
- **Theorem 9** (Balle et al., arXiv 1906.09116): M' at statistical distance mu from an
  (eps, delta)-DP M is (eps, delta + (1 + e^eps) mu)-DP.

Robust variant (Def. 4, RSDP): an amplification bound that decreases in n certifies
(eps, delta, gamma)-robust shuffle privacy with the bound evaluated at ceil(gamma N) users.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from scipy import optimize

from protocols.accountant.balle import blanket_epsilon_of_mass, blanket_mass_needed

THEOREMS = ("theorem1", "theorem2", "theorem3", "theorem3_loose", "theorem4")


@dataclass(frozen=True)
class Bound:
    """One theorem evaluated at one point."""

    theorem: str
    direction: str  # "forward" (eps_l -> eps_c) or "inverse" (eps_c -> largest eps_l)
    value: float | None  # eps_c (forward) or eps_l (inverse); None when not valid
    valid: bool
    reason: str = ""  # "not valid: <violated condition>" or a caveat
    blanket: float | None = None  # the randomizer's lambda / gamma where the theorem has one

    def as_dict(self) -> dict[str, object]:
        return {
            "theorem": self.theorem,
            "direction": self.direction,
            "value": self.value,
            "valid": self.valid,
            "reason": self.reason,
            "lambda": self.blanket,
        }


def _invalid(theorem: str, direction: str, why: str, lam: float | None = None) -> Bound:
    return Bound(theorem, direction, None, False, f"not valid: {why}", lam)


def _check(n: int, delta: float, *, delta_zero: bool = False) -> None:
    if int(n) != n or n < 2:
        raise ValueError(f"survey accountant: n must be an integer >= 2, got {n}")
    lo_ok = delta >= 0 if delta_zero else delta > 0
    if not (lo_ok and delta < 1):
        raise ValueError(f"survey accountant: delta must lie in (0, 1), got {delta}")


def _pos(x: float, name: str) -> None:
    if not (x > 0 and math.isfinite(x)):
        raise ValueError(f"survey accountant: {name} must be finite and > 0, got {x}")


# -- Eq. (5)/(9): randomized response with uniform-replacement probability lambda ---------------


def rr_lambda(eps_l: float, k: int) -> float:
    """lambda = k/(e^eps_l + k - 1): the k-RR that outputs a uniform value w.p. lambda is
    eps_l-LDP (Pr[y=x] = 1 - lambda + lambda/k, Pr[y=v] = lambda/k)."""
    if k < 2:
        raise ValueError(f"rr_lambda: k must be >= 2, got {k}")
    return k / (math.exp(eps_l) + k - 1)


def rr_local_epsilon(lam: float, k: int) -> float:
    """eps_l = ln(1 + k (1 - lambda)/lambda) of k-RR with replacement probability lambda."""
    if not 0 < lam <= 1:
        raise ValueError(f"rr_local_epsilon: lambda must lie in (0, 1], got {lam}")
    return math.log1p(k * (1 - lam) / lam)


# -- Theorem 1: Erlingsson et al. -------------------------------------------------------------


def _t1_refusal(direction: str, eps: float, name: str, n: int, delta: float) -> Bound | None:
    """Theorem 1's argument checks and (n, delta) conditions: the invalid bound, or None."""
    _pos(eps, name)
    _check(n, delta)
    if n < 1000:
        return _invalid("theorem1", direction, f"Theorem 1 needs n >= 1000, got n = {n}")
    if not delta <= 0.01:
        return _invalid("theorem1", direction, f"Theorem 1 needs delta <= 0.01, got {delta:g}")
    return None


def theorem1(eps_l: float, n: int, delta: float) -> Bound:
    """Forward Theorem 1: eps_c = 12 eps_l sqrt(ln(1/delta)/n)."""
    refused = _t1_refusal("forward", eps_l, "eps_l", n, delta)
    if refused is not None:
        return refused
    if not eps_l <= 0.5:
        return _invalid("theorem1", "forward", f"Theorem 1 needs eps_l <= 0.5, got {eps_l:g}")
    eps_c = 12.0 * eps_l * math.sqrt(math.log(1 / delta) / n)
    if eps_c > eps_l:
        return _invalid("theorem1", "forward", f"eps_c = {eps_c:.4g} exceeds eps_l (no gain)")
    return Bound("theorem1", "forward", eps_c, True)


def theorem1_inverse(eps_c: float, n: int, delta: float) -> Bound:
    """Largest eps_l with Theorem 1's eps_c <= target (capped by the regime eps_l <= 1/2)."""
    refused = _t1_refusal("inverse", eps_c, "eps_c", n, delta)
    if refused is not None:
        return refused
    raw = eps_c / (12.0 * math.sqrt(math.log(1 / delta) / n))
    if raw > 0.5:
        return Bound(
            "theorem1", "inverse", 0.5, True, f"capped at the regime eps_l <= 0.5 ({raw:.4g})"
        )
    return Bound("theorem1", "inverse", raw, True)


# -- Theorem 2: privacy blanket, generic randomizer ---------------------------------------------


def _t2_regime(eps_l: float, n: int, delta: float) -> str:
    cap = math.log(n / math.log(1 / delta)) / 2
    if not eps_l <= cap:
        return f"Theorem 2 needs eps_l <= ln(n/ln(1/delta))/2 = {cap:.4g}, got {eps_l:g}"
    return ""


def theorem2_delta(eps: float, eps_l: float, n: int, method: str = "bennett") -> float:
    """delta(eps) of the blanket bound for n shuffled generic eps_l-LDP reports.

    Generic blanket gamma = e^-eps_l. Hoeffding: delta = (1/(gamma n)) (b^2/(4a))
    (1 - gamma (1 - e^(-2 a^2/b^2)))^n with a = e^eps - 1, b = (e^eps + 1)(e^eps_l - e^-eps_l).
    Bennett: delta = (1/(gamma n)) (b+/ln(1+beta)) E_m[e^(-m alpha phi(beta)); m >= 1],
    m ~ Bin(n, gamma), b+ = e^eps_l (1 - e^(eps - 2 eps_l)), c = e^eps_l (e^(2 eps) + 1)
    - 2 gamma e^(eps - 2 eps_l), alpha = c/b+^2, beta = a b+/c, phi(u) = (1+u) ln(1+u) - u; the
    expectation is (1 - gamma + gamma e^-t)^n - (1 - gamma)^n.
    """
    if eps >= eps_l:
        return 0.0
    g = math.exp(-eps_l)
    a = math.expm1(eps)
    if method == "hoeffding":
        b = (math.exp(eps) + 1) * (math.exp(eps_l) - math.exp(-eps_l))
        base = 1 - g * (-math.expm1(-2 * a * a / (b * b)))
        return math.exp(n * math.log(base)) * b * b / (4 * a) / (g * n)
    if method != "bennett":
        raise ValueError(f"theorem2: method must be 'bennett' or 'hoeffding', got {method!r}")
    bplus = math.exp(eps_l) * (-math.expm1(eps - 2 * eps_l))
    c = math.exp(eps_l) * (math.exp(2 * eps) + 1) - 2 * g * math.exp(eps - 2 * eps_l)
    alpha, beta = c / bplus**2, a * bplus / c
    phi = (1 + beta) * math.log1p(beta) - beta
    t = alpha * phi
    expect = math.exp(n * math.log1p(-g * (-math.expm1(-t)))) - math.exp(n * math.log1p(-g))
    return max(0.0, expect) * bplus / math.log1p(beta) / (g * n)


def theorem2(eps_l: float, n: int, delta: float, method: str = "bennett") -> Bound:
    """Forward Theorem 2: the smallest eps_c with blanket delta(eps_c) <= delta."""
    _pos(eps_l, "eps_l")
    _check(n, delta)
    why = _t2_regime(eps_l, n, delta)
    if why:
        return _invalid("theorem2", "forward", why)
    f = lambda e: theorem2_delta(e, eps_l, n, method) - delta  # noqa: E731
    lo = 1e-9
    if f(lo) <= 0:
        return Bound("theorem2", "forward", lo, True)
    if f(eps_l * (1 - 1e-12)) > 0:
        return _invalid("theorem2", "forward", "the blanket bound gives no amplification")
    eps_c = optimize.brentq(f, lo, eps_l * (1 - 1e-12), xtol=1e-12, rtol=1e-10)
    return Bound("theorem2", "forward", eps_c * (1 + 1e-9), True, f"explicit form: {method}")


def theorem2_inverse(eps_c: float, n: int, delta: float, method: str = "bennett") -> Bound:
    """Largest eps_l (within Theorem 2's regime) whose blanket bound gives <= eps_c."""
    _pos(eps_c, "eps_c")
    _check(n, delta)
    cap = math.log(n / math.log(1 / delta)) / 2
    if cap <= eps_c:
        return _invalid(
            "theorem2", "inverse", f"regime cap ln(n/ln(1/delta))/2 = {cap:.4g} <= eps_c"
        )
    f = lambda e: theorem2_delta(eps_c, e, n, method) - delta  # noqa: E731
    lo = eps_c * (1 + 1e-9)
    if f(cap) <= 0:
        return Bound("theorem2", "inverse", cap, True, "capped at the regime ln(n/ln(1/delta))/2")
    if f(lo) > 0:
        return _invalid("theorem2", "inverse", "no eps_l > eps_c reaches the target")
    e = optimize.brentq(f, lo, cap, xtol=1e-12, rtol=1e-10)
    return Bound("theorem2", "inverse", e * (1 - 1e-9), True, f"explicit form: {method}")


# -- Theorem 3: Cheu et al. Boolean RR ---------------------------------------------------------


def theorem3_lambda_min(n: int, delta: float) -> float:
    """Theorem 3's smallest admissible lambda, 14 ln(4/delta)/n."""
    return 14.0 * math.log(4 / delta) / n


def theorem3_epsilon(lam: float, n: int, delta: float) -> float:
    """Eq. 6: sqrt(32 ln(4/delta)/(lambda n)) (1 - lambda) (no validity check)."""
    return math.sqrt(32.0 * math.log(4 / delta) / (lam * n)) * (1.0 - lam)


def theorem3(eps_l: float, n: int, delta: float) -> Bound:
    """Forward Theorem 3 for Boolean RR at local eps_l (lambda = 2/(e^eps_l + 1))."""
    _pos(eps_l, "eps_l")
    _check(n, delta)
    lam = rr_lambda(eps_l, 2)
    lo = theorem3_lambda_min(n, delta)
    if lam < lo:
        return _invalid(
            "theorem3", "forward", f"lambda = {lam:.4g} < 14 ln(4/delta)/n = {lo:.4g}", lam
        )
    return Bound("theorem3", "forward", theorem3_epsilon(lam, n, delta), True, "", lam)


def theorem3_loose(eps_l: float, n: int, delta: float) -> Bound:
    """The survey's Eq. 7: sqrt(16 ln(4/delta)(e^eps_l + 1)/n), eps_l <= ln n - ln(14 ln(4/delta))."""
    _pos(eps_l, "eps_l")
    _check(n, delta)
    cap = math.log(n) - math.log(14.0 * math.log(4 / delta))
    if not eps_l <= cap:
        return _invalid("theorem3_loose", "forward", f"Eq. 7 needs eps_l <= {cap:.4g}")
    eps_c = math.sqrt(16.0 * math.log(4 / delta) * (math.exp(eps_l) + 1) / n)
    return Bound("theorem3_loose", "forward", eps_c, True, "", rr_lambda(eps_l, 2))


def theorem3_loose_inverse(eps_c: float, n: int, delta: float) -> Bound:
    """Largest eps_l with Eq. 7 <= eps_c: e^eps_l = eps_c^2 n/(16 ln(4/delta)) - 1, within its range."""
    _pos(eps_c, "eps_c")
    _check(n, delta)
    x = eps_c**2 * n / (16.0 * math.log(4 / delta)) - 1
    if x <= 1:
        return _invalid("theorem3_loose", "inverse", "Eq. 7 gives eps_l <= 0")
    cap = math.log(n) - math.log(14.0 * math.log(4 / delta))
    e = min(math.log(x), cap)
    note = "capped at ln n - ln(14 ln(4/delta))" if math.log(x) > cap else ""
    return Bound("theorem3_loose", "inverse", e, True, note, rr_lambda(e, 2))


def theorem3_inverse(eps_c: float, n: int, delta: float) -> Bound:
    """Smallest admissible lambda with Eq. 6 <= eps_c, and its eps_l = ln((2 - lambda)/lambda)."""
    _pos(eps_c, "eps_c")
    _check(n, delta)
    lo = theorem3_lambda_min(n, delta)
    if lo >= 1:
        return _invalid("theorem3", "inverse", f"14 ln(4/delta)/n = {lo:.4g} >= 1 (n too small)")
    if theorem3_epsilon(lo, n, delta) <= eps_c:
        lam = lo
    else:
        f = lambda x: theorem3_epsilon(x, n, delta) - eps_c  # noqa: E731
        lam = optimize.brentq(f, lo, 1.0, xtol=1e-15, rtol=1e-13)
        while theorem3_epsilon(lam, n, delta) > eps_c:  # root on the safe side
            lam = min(1.0, lam * (1 + 1e-12))
    if lam >= 1.0:
        return _invalid("theorem3", "inverse", "needs lambda = 1 (every report uniform)", lam)
    e = rr_local_epsilon(lam, 2)
    while theorem3_epsilon(rr_lambda(e, 2), n, delta) > eps_c:  # float round trip, safe side
        e *= 1 - 1e-12
    return Bound("theorem3", "inverse", e, True, "", rr_lambda(e, 2))


# -- Theorem 4: Balle et al. k-RR ------------------------------------------------------------


def theorem4_lambda(eps_c: float, n: int, delta: float, k: int) -> float:
    """Eq. 8: lambda = max{14 k ln(2/delta)/((n-1) eps_c^2), 27 k/((n-1) eps_c)}."""
    return max(k * blanket_mass_needed(eps_c, delta) / (n - 1), 27.0 * k / ((n - 1) * eps_c))


def theorem4(eps_l: float, n: int, delta: float, k: int) -> Bound:
    """Forward Theorem 4: the smallest eps_c in (0, 1] whose Eq. 8 lambda is <= the randomizer's."""
    _pos(eps_l, "eps_l")
    _check(n, delta)
    lam = rr_lambda(eps_l, k)
    eps_c = max(blanket_epsilon_of_mass((n - 1) * lam / k, delta), 27.0 * k / ((n - 1) * lam))
    if eps_c > 1.0:
        return _invalid(
            "theorem4", "forward", f"needs eps_c <= 1, the bound gives {eps_c:.4g}", lam
        )
    note = "" if eps_c < eps_l else "no amplification: eps_c >= eps_l"
    return Bound("theorem4", "forward", eps_c, True, note, lam)


def theorem4_inverse(eps_c: float, n: int, delta: float, k: int) -> Bound:
    """Largest eps_l for target eps_c (Eq. 8 then Eq. 9); "not valid" if eps_c > 1 or lambda > 1."""
    _pos(eps_c, "eps_c")
    _check(n, delta)
    if k < 2:
        raise ValueError(f"theorem4: k must be >= 2, got {k}")
    if eps_c > 1.0:
        return _invalid("theorem4", "inverse", f"Theorem 4 needs eps_c <= 1, got {eps_c:g}")
    lam = theorem4_lambda(eps_c, n, delta, k)
    if lam > 1.0:
        return _invalid("theorem4", "inverse", f"Eq. 8 gives lambda = {lam:.4g} > 1", lam)
    e = rr_local_epsilon(lam, k)
    while e > 0 and rr_lambda(e, k) < lam:  # float round trip: keep lambda >= Eq. 8's
        e *= 1 - 1e-12
    return Bound("theorem4", "inverse", e, True, "", rr_lambda(e, k))


# -- dispatch ------------------------------------------------------------------------------


# theorem -> (forward, inverse); theorem2 also takes its keyword options, theorem4 the domain k
_DISPATCH: dict[str, tuple[Callable[..., Bound], Callable[..., Bound]]] = {
    "theorem1": (theorem1, theorem1_inverse),
    "theorem2": (theorem2, theorem2_inverse),
    "theorem3": (theorem3, theorem3_inverse),
    "theorem3_loose": (theorem3_loose, theorem3_loose_inverse),
    "theorem4": (theorem4, theorem4_inverse),
}


def _dispatch(
    theorem: str, inverse: bool, eps: float, n: int, delta: float, k: int, kw: dict[str, str]
) -> Bound:
    """The one dispatch of ``forward`` and ``inverse``."""
    if theorem not in _DISPATCH:
        raise ValueError(f"survey accountant: unknown theorem {theorem!r}; expected {THEOREMS}")
    fn = _DISPATCH[theorem][1 if inverse else 0]
    if theorem == "theorem4":
        return fn(eps, n, delta, k)
    if theorem == "theorem2":
        return fn(eps, n, delta, **kw)
    return fn(eps, n, delta)


def forward(theorem: str, eps_l: float, n: int, delta: float, k: int = 2, **kw: str) -> Bound:
    """eps_l -> eps_c by ``theorem`` (one of THEOREMS)."""
    return _dispatch(theorem, False, eps_l, n, delta, k, kw)


def inverse(theorem: str, eps_c: float, n: int, delta: float, k: int = 2, **kw: str) -> Bound:
    """eps_c -> largest eps_l by ``theorem``."""
    return _dispatch(theorem, True, eps_c, n, delta, k, kw)


# -- Theorem 9 ---------------------------------------------------------------------------


def theorem9(eps: float, delta: float, mu: float) -> tuple[float, float]:
    """(eps, delta + (1 + e^eps) mu): DP of a mechanism at statistical distance mu from an
    (eps, delta)-DP one."""
    if not (eps >= 0 and math.isfinite(eps)):
        raise ValueError(f"theorem9: eps must be finite and >= 0, got {eps}")
    if not (0 <= delta < 1 and 0 <= mu <= 1):
        raise ValueError(f"theorem9: need delta in [0, 1) and mu in [0, 1], got {delta}, {mu}")
    return eps, delta + (1 + math.exp(eps)) * mu


def theorem9_sigma(eps: float, delta_budget: float) -> int:
    """Smallest sigma with (1 + e^eps) 2^-sigma <= delta_budget (statistical security needed)."""
    if not 0 < delta_budget < 1:
        raise ValueError(f"theorem9_sigma: delta budget must lie in (0, 1), got {delta_budget}")
    return max(1, math.ceil(math.log2((1 + math.exp(eps)) / delta_budget)))


# -- composition and robustness -------------------------------------------------------------


def sequential(guarantees: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """Basic sequential composition: (sum eps_i, sum delta_i)."""
    g = list(guarantees)
    return sum(e for e, _ in g), min(1.0, sum(d for _, d in g))


def parallel(guarantees: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """Parallel composition over disjoint users: (max eps_i, max delta_i)."""
    g = list(guarantees)
    if not g:
        raise ValueError("parallel composition of nothing")
    return max(e for e, _ in g), max(d for _, d in g)


def robust_users(n: int, gamma: float) -> int:
    """ceil(gamma N): the honest users an (eps, delta, gamma)-RSDP guarantee is accounted at."""
    if not 0 < gamma <= 1:
        raise ValueError(f"robust: gamma must lie in (0, 1], got {gamma}")
    return max(1, math.ceil(gamma * n - 1e-9))


def robust(
    bound: Callable[..., Bound], eps: float, n: int, delta: float, gamma: float, **kw: object
) -> Bound:
    """The (eps, delta, gamma)-RSDP version of an amplification bound decreasing in n: the
    bound evaluated at ceil(gamma N) honest users (every larger honest crowd is covered)."""
    m = robust_users(n, gamma)
    if m < 2:
        return Bound("robust", "forward", None, False, f"not valid: ceil(gamma N) = {m} < 2")
    b = bound(eps, m, delta, **kw)
    note = f"robust: accounted at ceil(gamma N) = {m} of N = {n}"
    return Bound(
        b.theorem,
        b.direction,
        b.value,
        b.valid,
        "; ".join(x for x in (b.reason, note) if x),
        b.blanket,
    )
