"""Shared parts of the seed-000 multidimensional protocols (SRR-MS, ARR-SS, PSRR-SS, baselines).

* :func:`local_budget`: the local epsilon for a shuffled population under ``paper`` accounting
  (the paper's Calculate, :mod:`protocols.multidim.calculate`) or ``tight`` accounting (the DP core's
  accountant, :func:`protocols.accountant.max_local_epsilon`, with the mechanism actually run);
* :class:`MultidimProtocol`: record checking, the estimate layout and the privacy statement;
* :func:`sse`: per-attribute and total squared error of an estimate.

Estimate layout (JSON-serialisable, produced by every ``analyze``)::

    {"protocol": str, "attributes": [names], "domain_sizes": [k_j], "estimator": str,
     "marginals": [[f_v for v in k_j] or None per attribute],      # the selected estimator
     "estimates": {estimator_name: [... same layout ...]},          # every estimator computed
     "reports": int, "discarded": int}   # real-value reports used; dummy + malformed ones

``None`` marks an attribute without a feasible local epsilon (its users send nothing).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from protocols.base import ShuffleProtocol
from protocols.multidim.calculate import POLICIES, LocalBudget, calculate
from protocols.oracles.grr import rr_report_variance
from protocols.privacy.ledger import Release
from protocols.privacy.record import SEED000, PrivacyStatement
from protocols.privacy.statements import shuffled_release

ACCOUNTING = ("paper", "tight")


def local_budget(
    eps_c: float,
    delta: float,
    n_eff: float,
    k_eff: int,
    *,
    accounting: str = "paper",
    policy: str = "strict",
    mechanism: str = "grr",
    k: int | None = None,
    bound: str = "vr",
) -> LocalBudget:
    """Local epsilon for ``n_eff`` shuffled users.

    ``paper``: Calculate(eps_c, delta, n_eff, k_eff, policy). ``tight``: the largest eps_l the
    accountant certifies for ``mechanism`` (``k`` its domain size) under ``bound``; the policy
    only matters for ``fallback`` (eps_l = max(eps_c, certified)).
    """
    if accounting not in ACCOUNTING:
        raise ValueError(f"accounting must be one of {ACCOUNTING}, got {accounting!r}")
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if accounting == "paper":
        b = calculate(eps_c, delta, n_eff, k_eff, policy)
        if not b.outside_theorem:
            return b
        # Outside Balle et al.'s theorem the closed form certifies nothing: route to the
        # accountant (variation ratio with the mechanism's parameters) and say so.
        eps = _certified_local_epsilon(float(eps_c), int(n_eff), float(delta), "vr", mechanism, k)
        what = f"accountant bound=vr mechanism={mechanism}" + (f" k={k}" if k else "")
        if eps is None or eps <= 0:
            if policy == "fallback":
                return LocalBudget(
                    eps_c, True, policy, b.argument, f"{b.reason}; fallback to eps_l = eps_c",
                    True, "pure LDP (eps_l = eps_c)",
                )  # fmt: skip
            return LocalBudget(None, False, policy, b.argument, f"{b.reason}; {what}: none", True)
        if policy == "fallback" and eps < eps_c:
            eps = eps_c
        return LocalBudget(
            float(eps), True, policy, b.argument,
            f"{b.reason}: local epsilon from the {what} instead", True,
            f"accountant:vr/{mechanism} (closed form outside its theorem)",
        )  # fmt: skip
    if bound == "fmt21":  # generic clone bound: valid for every eps-LDP randomizer
        mechanism, k = "generic", None
    eps = _certified_local_epsilon(float(eps_c), int(n_eff), float(delta), bound, mechanism, k)
    what = f"accountant bound={bound} mechanism={mechanism}" + (f" k={k}" if k else "")
    tag = f"accountant:{bound}/{mechanism}"
    if policy == "fallback" and (eps is None or eps < eps_c):
        return LocalBudget(
            eps_c, True, policy, math.nan, f"fallback to eps_l = eps_c ({what})",
            bound="pure LDP (eps_l = eps_c)",
        )  # fmt: skip
    if eps is None or eps <= 0:
        return LocalBudget(None, False, policy, math.nan, f"no local epsilon ({what})", bound=tag)
    return LocalBudget(float(eps), True, policy, math.nan, what, bound=tag)


# the accountant's bounds a tight calibration may use (``exact``: shuffled binary RR exactly,
# the decomposition bound for k >= 3; ``vr`` falls back to it where a neutral state exists)
TIGHT_BOUNDS = ("vr", "fmt21", "exact", "decomposition")


@lru_cache(maxsize=4096)
def _certified_local_epsilon(
    eps_c: float, n: int, delta: float, bound: str, mechanism: str, k: int | None
) -> float | None:
    """The accountant's inverse bound, memoised (it is a pure, comparatively slow function)."""
    try:
        from protocols.accountant import max_local_epsilon
    except ImportError as exc:  # pragma: no cover - depends on the DP core being present
        raise ValueError("tight accounting needs protocols.accountant (not available)") from exc
    return max_local_epsilon(eps_c, n, delta, bound=bound, mechanism=mechanism, k=k)


def check_records(records: np.ndarray, domain_sizes: tuple[int, ...], where: str) -> np.ndarray:
    """Return ``records`` as int64 (n, d), or raise ValueError naming ``where``."""
    x = np.asarray(records)
    d = len(domain_sizes)
    if x.ndim != 2 or x.shape[1] != d:
        raise ValueError(f"{where}: records must have shape (n, {d}), got {x.shape}")
    if not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"{where}: records must be integers, got dtype {x.dtype}")
    x = x.astype(np.int64, copy=False)
    if x.size:
        bad = (x < 0) | (x >= np.asarray(domain_sizes))
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(
                f"{where}: record {i} attribute {j} = {x[i, j]} outside [0, {domain_sizes[j]})"
            )
    return x


# A 1-way marginal is called mostly noise when, for most attributes, the standard deviation of
# a value's estimated frequency exceeds this fraction of 1/d (its frequency in a uniform spread):
# a typical value is then known only to within +-50% of itself.
NOISE_RATIO = 0.5


class MultidimProtocol(ShuffleProtocol):
    """Common state of the 1-way-marginal protocols: domains, budget, estimator choice."""

    estimators: tuple[str, ...] = ("paper",)

    def noise_warning(self) -> str | None:
        """Warn when a value's frequency is known to less than the frequency 1/d of a value in a
        uniform spread, for most attributes (variances at uniform frequencies: public)."""
        variance = getattr(self, "variance", None)
        if variance is None:
            return None
        var = variance([np.full(k, 1.0 / k) for k in self.domain_sizes], self.estimator)
        ratios = [
            float(np.sqrt(np.mean(v))) * k for v, k in zip(var, self.domain_sizes) if v is not None
        ]
        if not ratios or float(np.median(ratios)) <= NOISE_RATIO:
            return None
        noisy = sum(r > NOISE_RATIO for r in ratios)
        sse = sum(float(np.sum(v)) for v in var if v is not None)
        return (
            f"too few users for these domains and epsilon: for {noisy} of {len(ratios)} "
            f"attributes a frequency's standard deviation exceeds half of 1/d, the frequency of "
            f"a value in a uniform spread (expected SSE about {sse:.2g}); more users (now "
            f"{self.n}), a larger --epsilon or attributes with fewer values would help"
        )

    def __init__(
        self,
        domain_sizes: tuple[int, ...] | list[int],
        n: int,
        eps_c: float,
        delta: float,
        *,
        accounting: str = "paper",
        policy: str = "strict",
        estimator: str = "paper",
        attributes: tuple[str, ...] | list[str] | None = None,
        tight_bound: str = "vr",
        min_users: int | None = None,
        max_epsilon: float | None = None,
    ) -> None:
        ks = tuple(int(k) for k in domain_sizes)
        if not ks or min(ks) < 2:
            raise ValueError(f"{self.name}: every domain size must be >= 2, got {ks}")
        if n < 2:
            raise ValueError(f"{self.name}: need at least 2 users, got n={n}")
        if estimator not in self.estimators:
            raise ValueError(
                f"{self.name}: estimator must be one of {self.estimators}, got {estimator!r}"
            )
        if accounting not in ACCOUNTING:
            raise ValueError(
                f"{self.name}: accounting must be one of {ACCOUNTING}, got {accounting!r}"
            )
        self.domain_sizes = ks
        self.d = len(ks)
        self.n = int(n)
        self.min_users = int(n) if min_users is None else int(min_users)
        if not 2 <= self.min_users <= self.n:
            raise ValueError(f"{self.name}: min_users must lie in [2, n={n}], got {min_users}")
        self.eps_c = float(eps_c)
        self.delta = float(delta)
        if not 0 < self.delta < 1:
            raise ValueError(f"{self.name}: delta must lie in (0, 1), got {delta}")
        self.max_epsilon = self.eps_c if max_epsilon is None else float(max_epsilon)
        self.accounting = accounting
        self.policy = policy
        self.estimator = estimator
        if tight_bound not in TIGHT_BOUNDS:
            raise ValueError(
                f"{self.name}: tight_bound must be one of {TIGHT_BOUNDS}, got {tight_bound!r}"
            )
        self.tight_bound = tight_bound
        names = (
            tuple(attributes) if attributes is not None else tuple(f"A{j}" for j in range(self.d))
        )
        if len(names) != self.d:
            raise ValueError(f"{self.name}: {len(names)} attribute names for d={self.d}")
        self.attributes = names
        self.configure()

    def configure(self) -> None:
        """The protocol's own set-up once the common arguments are checked and stored (budgets,
        layouts); a subclass overrides this instead of repeating the constructor."""

    def sampled_values(
        self, records: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """(theta, value): each user's uniformly sampled attribute and its value there (the
        one-batch protocols, ARR-SS and PSRR-SS)."""
        x = self.check(records)
        m = x.shape[0]
        theta = rng.integers(0, self.d, size=m)
        return theta, x[np.arange(m), theta]

    def theta_reports(self, shuffled: Any, batch: str) -> tuple[np.ndarray, np.ndarray]:
        """(theta, y) columns of the one-batch protocols' width-2 reports in ``batch``."""
        if batch not in shuffled:
            raise ValueError(f"{self.name}.analyze: missing batch {batch!r}")
        arr = np.asarray(shuffled[batch])
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise ValueError(
                f"{self.name}.analyze: messages must have shape (n, 2), got {arr.shape}"
            )
        return arr[:, 0], arr[:, 1]

    def rr_budget(self, n_eff: int, k: int) -> LocalBudget:
        """Local budget of one k-ary RR among ``n_eff`` shuffled users, with this protocol's
        accounting, tight bound and policy."""
        return local_budget(
            self.eps_c,
            self.delta,
            n_eff,
            k,
            accounting=self.accounting,
            bound=self.tight_bound,
            policy=self.policy,
            mechanism="grr",
            k=k,
        )

    def users_per_group(self) -> int:
        """floor(min_users / d): the guaranteed size of every group when the users are split
        over the d attributes (protocols.privacy.grouping); at least 2 or an error."""
        n_eff = self.min_users // self.d
        if n_eff < 2:
            raise ValueError(
                f"{self.name}: floor(min_users/d) = {n_eff} users per group is too few"
            )
        return n_eff

    def single_rr_budget(self, k: int, k_name: str) -> None:
        """Budget of the protocols where every user runs one k-ary RR (ARR-SS: k = sum k_j,
        named "K"; PSRR-SS: k = k_max, named "k_max"); ``k_name`` names k in statements and
        error messages."""
        self.budget = self.rr_budget(self.min_users, k)
        self.eps_local = self.budget.eps_local
        self._rr_k = k
        self._rr_k_name = k_name
        self._budget_label = f"{k_name}={k}"

    def _require_feasible(self) -> float:
        if self.eps_local is None:
            raise ValueError(
                f"{self.name}: no feasible local epsilon at eps_c={self.eps_c}, "
                f"delta={self.delta:.3g}, n={self.n}, {self._budget_label}: {self.budget.reason}"
            )
        return self.eps_local

    def check(self, records: np.ndarray) -> np.ndarray:
        """Validated int64 (n, d) records."""
        return check_records(records, self.domain_sizes, f"{self.name}.encode")

    def package(
        self, estimates: dict[str, list[np.ndarray | None]], reports: int, discarded: int
    ) -> dict[str, Any]:
        """Build the JSON-serialisable estimate (module docstring)."""

        def js(vals: list[np.ndarray | None]) -> list[list[float] | None]:
            return [None if v is None else [float(x) for x in v] for v in vals]

        out = {name: js(v) for name, v in estimates.items()}
        return {
            "protocol": self.name,
            "attributes": list(self.attributes),
            "domain_sizes": list(self.domain_sizes),
            "estimator": self.estimator,
            "marginals": out[self.estimator],
            "estimates": out,
            "reports": int(reports),
            "discarded": int(discarded),
        }

    def bound_name(self, paper: str, mechanism: str, budget: LocalBudget | None = None) -> str:
        """Name of the bound behind the local epsilon (``budget``'s own when it was routed
        to the accountant or fell back to pure LDP)."""
        b = budget if budget is not None else getattr(self, "budget", None)
        if b is not None and (b.outside_theorem or b.bound.startswith("pure")):
            return b.bound
        if self.accounting == "paper":
            return paper
        if self.tight_bound == "fmt21":
            return "accountant:fmt21/generic"
        return f"accountant:{self.tight_bound}/{mechanism}"

    def single_rr_privacy(self) -> dict[str, Any]:
        """privacy() of the one-batch protocols (ARR-SS, PSRR-SS): one k-RR among all users."""
        bound = self.bound_name("balle19-closed-form", f"grr({self._rr_k_name})")
        return self.privacy_statement(
            self.eps_local,
            bound,
            **{self._rr_k_name: self._rr_k},
            n=self.n,
            reason=self.budget.reason,
        )

    def single_batch_release(
        self, counts: dict[str, int], theorem: str, mechanism: str
    ) -> list[Release]:
        """The release of the one-batch protocols (ARR-SS, PSRR-SS): all 1-way marginals from
        one k-RR among all users, under the paper's ``theorem``."""
        eps = self._require_feasible()
        k = self._rr_k
        bound = self.bound_name(f"balle19-closed-form ({theorem})", f"grr({self._rr_k_name})")
        return [
            shuffled_release(
                "1-way marginals of every attribute",
                f"{mechanism}, eps_l = {eps:.4g}, uniform shuffle",
                eps_local=eps,
                eps_planned=self.eps_c,
                delta=self.delta,
                n_accounted=self.min_users,
                n_received=counts.get("reports", 0),
                bound=bound,
                accountant={"mechanism": "grr", "k": k},
            )
        ]

    def privacy_statement(self, eps_local: Any, bound: str, **extra: Any) -> dict[str, Any]:
        """Common privacy() fields (seed 000 publishes the target as ``eps_c``, the local
        epsilon as ``eps_l``: :data:`protocols.privacy.record.SEED000`)."""
        return PrivacyStatement(
            target_epsilon=self.eps_c,
            delta=self.delta,
            local_epsilon=eps_local,
            bound=bound,
            extra={
                "protocol": self.name,
                "accounting": self.accounting,
                "policy": self.policy,
                "min_users": self.min_users,
                "max_epsilon": self.max_epsilon,
                **extra,
            },
            names=SEED000,
        ).wire()


def expected_inverse_binomial(n: int, p: float) -> float:
    """E[1/N | N > 0] for N ~ Bin(n, p), summed over the binomial support."""
    from scipy.stats import binom

    lo = max(1, int(binom.ppf(1e-15, n, p)))
    hi = int(binom.isf(1e-15, n, p)) + 1
    ks = np.arange(lo, hi + 1)
    w = binom.pmf(ks, n, p)
    return float(np.sum(w / ks) / np.sum(w))


def sampled_attribute_variance(
    freqs: np.ndarray, p: float, q: float, n: int, d: int, estimator: str = "paper"
) -> np.ndarray:
    """Exact variance when each of n users reports one uniformly chosen attribute (of d).

    Per value, a report "hits" with probability p if the user holds it, q otherwise (RR or a
    unary-encoding bit). ``paper`` (normaliser n/d, Theorem 9 in full):
    q(d - q)/(n (p-q)^2) + f (d - p - q)/(n (p - q)). ``observed`` (normaliser n_i, the users
    that chose the attribute, n_i ~ Bin(n, 1/d)): E[1/n_i] (q(1-q) + f(p-q)(1-p-q))/(p-q)^2
    + f(1-f)(n E[1/n_i] - 1)/(n - 1), the noise given the selectors plus their sampling error.
    """
    f = np.asarray(freqs, dtype=np.float64)
    if estimator == "paper":
        return q * (d - q) / (n * (p - q) ** 2) + f * (d - p - q) / (n * (p - q))
    if estimator == "observed":
        inv = expected_inverse_binomial(n, 1.0 / d)
        noise = rr_report_variance(f, p, q) / (p - q) ** 2
        return inv * noise + f * (1 - f) * (n * inv - 1) / (n - 1)
    raise ValueError(f"estimator must be 'paper' or 'observed', got {estimator!r}")


def grouped_variance(
    freqs: np.ndarray, p: float, q: float, n: int, d: int, *, partition: bool = True
) -> np.ndarray:
    """Variance with a balanced random partition into d groups of n/d (SRR-MS framework).

    Given the group: (q(1-q) + f(p-q)(1-p-q)) / ((n/d)(p-q)^2) (Theorem 3 in full); with
    ``partition`` the hypergeometric group-count error f(1-f)(d-1)/(n-1) is added.
    """
    f = np.asarray(freqs, dtype=np.float64)
    var = d * rr_report_variance(f, p, q) / (n * (p - q) ** 2)
    if partition:
        var = var + f * (1 - f) * (d - 1) / (n - 1)
    return var


def sse(
    estimate: list[list[float] | None] | list[np.ndarray | None],
    truth: list[np.ndarray],
    attributes: list[int] | None = None,
) -> tuple[list[float | None], float]:
    """Per-attribute SSE and the total over ``attributes`` (default: all estimated ones)."""
    if len(estimate) != len(truth):
        raise ValueError(f"sse: {len(estimate)} estimated attributes for {len(truth)} true ones")
    per: list[float | None] = []
    for est, f in zip(estimate, truth, strict=True):
        per.append(None if est is None else float(np.sum((np.asarray(est) - f) ** 2)))
    use = range(len(truth)) if attributes is None else attributes
    total = float(sum(per[j] for j in use if per[j] is not None))
    return per, total
