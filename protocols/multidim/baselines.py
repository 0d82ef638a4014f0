"""Seed-000 baselines for 1-way marginals: sampling + OUE (pure LDP) and SUE-MS.

* :class:`OUESampling` (``oue-ldp``): each user samples one attribute uniformly and reports it
  with OUE at eps = eps_c; no amplification is claimed (pure eps_c-LDP, delta = 0), so the
  shuffle only hides who sent what. Messages go to batch ``a{theta}`` (width k_theta bits).
* :class:`SUEMS` (``sue-ms``): SUE (symmetric unary encoding, basic RAPPOR) in the SRR-MS
  framework: d balanced random groups, group i reports attribute i with SUE at eps_i to
  shuffler i (batch ``a{i}``).

SUE shuffle bound (the paper gives none; spec Sec. 7 candidate, documented and unverified):
two bits differ between any two inputs and each bit is binary RR at eps_l/2, so Balle's k = 2
bound applied to eps_l/2 and composed over the 2 bits gives a (eps_c, 2 delta') guarantee from
two (eps_c/2, delta') ones. Each bit is therefore calibrated to delta' = delta/2, so that the
stated delta is the composed one:

    eps_l = 2 Calculate(eps_c/2, delta/2, n_g, 2),   n_g = floor(min_users/d)

(outside Balle et al.'s theorem, eps_c/2 > 1, the accountant's SUE bound is used instead).

Acceptance check (paper): feasible from eps_c = 0.7 on Adult (threshold 0.651) and from 0.4 on
Kosarak (threshold 0.4014: borderline, 0.4 itself is infeasible under the strict policy).
``tight`` accounting uses the DP core's variation-ratio bound with SUE's parameters.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec
from protocols.multidim.calculate import LocalBudget, calculate, feasibility_threshold
from protocols.multidim.common import (
    MultidimProtocol,
    grouped_variance,
    local_budget,
    sampled_attribute_variance,
)
from protocols.multidim.srr_ms import SRRMS
from protocols.oracles.unary_encoding import ue_estimate_from_counts, ue_perturb, ue_probabilities
from protocols.privacy.ledger import Release


def sue_calculate(eps_c: float, delta: float, n_eff: float, policy: str = "strict") -> LocalBudget:
    """SUE local epsilon from the candidate bound: eps_l = 2 Calculate(eps_c/2, delta/2, n_eff, 2),
    a composed (eps_c, delta) guarantee (module docstring).

    Unary encoding needs eps_l > 0, so a non-positive solution is infeasible under every policy;
    outside Balle et al.'s theorem the budget says so (``outside_theorem``).
    """
    b = calculate(eps_c / 2, delta / 2, n_eff, 2, policy)
    if b.eps_local is None or b.eps_local <= 0:
        return LocalBudget(
            None, False, policy, b.argument, f"SUE bound: {b.reason}", b.outside_theorem
        )
    bound = (
        b.bound
        if b.bound.startswith("pure")
        else "sue-candidate (2x Balle k=2 at eps_l/2, delta/2 each)"
    )
    return LocalBudget(
        2 * b.eps_local, True, policy, b.argument, f"SUE candidate bound ({b.reason})", bound=bound
    )


def sue_feasibility_threshold(delta: float, n_eff: float) -> float:
    """Smallest eps_c with a positive SUE local epsilon (X(eps_c / 2) > 4 at delta / 2: each of
    the two composed halves, as :func:`sue_calculate` calibrates them)."""
    return 2 * feasibility_threshold(delta / 2, n_eff, 2)


def _bit_counts(arr: np.ndarray, k: int, where: str) -> tuple[np.ndarray, int, int]:
    """Column sums of well-formed bit vectors, their number, and the malformed rows."""
    a = np.asarray(arr)
    if a.ndim != 2 or a.shape[1] != k:
        raise ValueError(f"{where}: messages must have shape (n, {k}), got {a.shape}")
    ok = ((a == 0) | (a == 1)).all(axis=1)
    return a[ok].sum(axis=0).astype(np.float64), int(ok.sum()), int((~ok).sum())


class OUESampling(MultidimProtocol):
    """Sampling + OUE at eps_c, pure LDP (module docstring)."""

    name = "oue-ldp"
    estimators = ("paper", "observed")

    def __init__(
        self,
        domain_sizes: tuple[int, ...] | list[int],
        n: int,
        eps_c: float,
        delta: float,
        **kw: Any,
    ) -> None:
        """Same arguments as the shuffle protocols; ``accounting``/``policy`` are unused."""
        super().__init__(domain_sizes, n, eps_c, delta, **kw)
        self.eps_local = self.eps_c
        self.feasible = True

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec(f"a{j}", k, 2) for j, k in enumerate(self.domain_sizes)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        """Uniform attribute per user, OUE bit vector of its value."""
        x = self.check(records)
        theta = rng.integers(0, self.d, size=x.shape[0])
        return {
            f"a{j}": ue_perturb(x[theta == j, j], k, self.eps_c, rng, "oue").astype(np.int64)
            for j, k in enumerate(self.domain_sizes)
        }

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        """Both estimators: n/d (``paper``) or the attribute's report count (``observed``)."""
        paper, observed = [], []
        reports = malformed = 0
        for j, k in enumerate(self.domain_sizes):
            empty = np.zeros((0, k), dtype=np.int64)
            c, m, bad = _bit_counts(shuffled.get(f"a{j}", empty), k, f"oue-ldp batch a{j}")
            reports, malformed = reports + m, malformed + bad
            paper.append(ue_estimate_from_counts(c, self.eps_c, self.n / self.d, "oue"))
            observed.append(
                ue_estimate_from_counts(c, self.eps_c, m, "oue") if m else np.full(k, np.nan)
            )
        return self.package({"paper": paper, "observed": observed}, reports, malformed)

    def privacy(self) -> dict[str, Any]:
        return self.privacy_statement(
            self.eps_c, "pure LDP (no amplification claimed)", delta_local=0.0
        )

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """Pure eps_c-LDP reports: the guarantee holds at any count (delta 0)."""
        return [
            Release(
                "1-way marginals of every attribute",
                f"attribute sampling + OUE, eps = {self.eps_c:g} (pure LDP)",
                self.eps_c,
                0.0,
                0,
                sum(counts.get(f"a{j}", 0) for j in range(self.d)),
                "pure LDP (Wang et al. 2017, OUE is eps-LDP)",
                note="local guarantee: holds whatever the number of reports",
            )
        ]

    def variance(self, freqs: list[np.ndarray], estimator: str | None = None) -> list[np.ndarray]:
        """Exact per-value variances (:func:`protocols.multidim.common.sampled_attribute_variance`)."""
        p, q = ue_probabilities(self.eps_c, "oue")
        est = estimator or self.estimator
        return [sampled_attribute_variance(f, p, q, self.n, self.d, est) for f in freqs]


class SUEMS(SRRMS):
    """SUE in the SRR-MS framework (module docstring); grouping as in SRR-MS."""

    name = "sue-ms"
    paper_bound = "sue-candidate: 2 x Balle k=2 at (eps_l/2, delta/2) (spec Sec. 7, unverified)"

    def __init__(
        self,
        domain_sizes: tuple[int, ...] | list[int],
        n: int,
        eps_c: float,
        delta: float,
        **kw: Any,
    ) -> None:
        """Same arguments as :class:`SRRMS`; the local budget uses the SUE bound."""
        MultidimProtocol.__init__(self, domain_sizes, n, eps_c, delta, **kw)
        self.group_accounted = self.min_users // self.d
        if self.group_accounted < 2:
            raise ValueError(f"{self.name}: floor(min_users/d) users per group is too few")
        budget = None
        if self.accounting == "paper":
            budget = sue_calculate(self.eps_c, self.delta, self.group_accounted, self.policy)
        if budget is None or budget.outside_theorem:
            tight = local_budget(
                self.eps_c,
                self.delta,
                self.group_accounted,
                2,
                accounting="tight",
                policy=self.policy,
                mechanism="sue",
                bound=self.tight_bound,
            )
            if budget is not None:  # routed: the closed form is outside its theorem here
                tight = LocalBudget(
                    tight.eps_local, tight.feasible, tight.policy, budget.argument,
                    f"{budget.reason}: local epsilon from the accountant (SUE) instead", True,
                    f"{tight.bound} (closed form outside its theorem)",
                )  # fmt: skip
            budget = tight
        self.budgets = [budget] * self.d
        self.eps_local = [budget.eps_local] * self.d

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec(f"a{j}", k, 2) for j, k in enumerate(self.domain_sizes)]

    def perturb(self, records: np.ndarray, groups: np.ndarray, rng: np.random.Generator) -> Batches:
        """SUE bit vector of attribute i for the users of group i."""
        x = self.check(records)
        g = np.asarray(groups)
        if g.shape != (x.shape[0],) or (g.size and (g.min() < 0 or g.max() >= self.d)):
            raise ValueError(f"sue-ms.perturb: groups must be {x.shape[0]} values in [0, {self.d})")
        out: Batches = {}
        for j, (k, eps) in enumerate(zip(self.domain_sizes, self.eps_local, strict=True)):
            if eps is None:
                out[f"a{j}"] = np.zeros((0, k), dtype=np.int64)
            else:
                out[f"a{j}"] = ue_perturb(x[g == j, j], k, eps, rng, "sue").astype(np.int64)
        return out

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        """Per-group bit counts and both estimators (as SRR-MS)."""
        paper: list[np.ndarray | None] = []
        observed: list[np.ndarray | None] = []
        reports = malformed = 0
        for j, (k, eps) in enumerate(zip(self.domain_sizes, self.eps_local, strict=True)):
            empty = np.zeros((0, k), dtype=np.int64)
            arr = shuffled.get(f"a{j}", empty)
            if eps is None:
                malformed += len(arr)
                paper.append(None)
                observed.append(None)
                continue
            c, m, bad = _bit_counts(arr, k, f"sue-ms batch a{j}")
            reports, malformed = reports + m, malformed + bad
            paper.append(ue_estimate_from_counts(c, eps, self.n / self.d, "sue"))
            observed.append(ue_estimate_from_counts(c, eps, m, "sue") if m else np.full(k, np.nan))
        return self.package({"paper": paper, "observed": observed}, reports, malformed)

    def privacy(self) -> dict[str, Any]:
        bound = self.bound_name(self.budgets[0].bound, "sue", self.budgets[0])
        return self.privacy_statement(
            self.eps_local[0],
            bound,
            composition="parallel over d disjoint groups",
            group_size=self.group_accounted,
        )

    def group_mechanism(self, j: int) -> tuple[str, dict[str, Any]]:
        return f"SUE over {self.domain_sizes[j]} values", {"mechanism": "sue"}

    def variance(
        self, freqs: list[np.ndarray], estimator: str | None = None, partition: bool = True
    ) -> list[np.ndarray | None]:
        """Exact per-value variances (:func:`protocols.multidim.common.grouped_variance`, SUE's p, q)."""
        out: list[np.ndarray | None] = []
        for f, eps in zip(freqs, self.eps_local, strict=True):
            if eps is None:
                out.append(None)
                continue
            p, q = ue_probabilities(eps, "sue")
            out.append(grouped_variance(f, p, q, self.n, self.d, partition=partition))
        return out
