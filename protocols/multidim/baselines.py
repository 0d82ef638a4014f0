"""Seed-000 baselines for 1-way marginals: sampling + OUE (pure LDP) and SUE-MS.

* :class:`OUESampling` (``oue-ldp``): each user samples one attribute uniformly and reports it
  with OUE at eps = eps_c; no amplification is claimed (pure eps_c-LDP, delta = 0), so the
  shuffle only hides who sent what. Messages go to batch ``a{theta}`` (width k_theta bits).
* :class:`SUEMS` (``sue-ms``): SUE (symmetric unary encoding, basic RAPPOR) in the SRR-MS
  framework: d balanced random groups, group i reports attribute i with SUE at eps_i to
  shuffler i (batch ``a{i}``).

SUE shuffle bound. The paper gives none; spec Sec. 7's candidate (2 x Balle's k = 2 bound at
(eps_l/2, delta/2), treating the two bits that differ between two inputs as independent binary
RR) is **not** a bound: the shuffler publishes whole vectors, and a third bit filters the crowd
(an adversary keeps the vectors whose bit at a third value z is 0: the other users, who hold z,
pass the filter with probability 1 - p, the target with 1 - q). On census-income at n = 100,000,
eps_c = 2 the candidate's eps_l = 6.83 gives, on that pair, delta >= 2.1e-4 at eps 2 against the
1e-7 it stated (``tests/test_privacy_leaks_suems.py`` holds the exact computation; issue 26). It
is dropped: ``paper`` accounting now calibrates SUE-MS with the blanket decomposition bound for
SUE (``protocols.accountant.decomposition``, exact for unary encodings), and ``tight`` with the
accountant's ``tight_bound`` (variation ratio by default), both for whole vectors.
``sue_feasibility_threshold`` keeps the candidate's threshold for the seed-000 tables only (what
the paper's setup would have been); it certifies nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec
from protocols.multidim.calculate import LocalBudget, feasibility_threshold
from protocols.multidim.common import (
    MultidimProtocol,
    grouped_variance,
    local_budget,
    sampled_attribute_variance,
)
from protocols.multidim.srr_ms import SRRMS
from protocols.oracles.unary_encoding import ue_estimate_from_counts, ue_perturb, ue_probabilities
from protocols.privacy.ledger import Release


def sue_feasibility_threshold(delta: float, n_eff: float) -> float:
    """Smallest eps_c with a positive SUE local epsilon under spec Sec. 7's dropped candidate
    (X(eps_c / 2) > 4 at delta / 2): the seed-000 tables' comparison only, no guarantee."""
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

    def configure(self) -> None:
        """Pure LDP at eps_c; ``accounting``/``policy`` are unused."""
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
    paper_bound = "accountant:decomposition/sue (whole vectors)"

    def configure(self) -> None:
        """Grouping as in :class:`SRRMS`; the local budget uses the SUE bound."""
        self.group_accounted = self.users_per_group()
        # ``paper``: the decomposition bound for SUE vectors (the spec's candidate, two bits as
        # independent binary RR, is violated: module docstring); ``tight``: the tight_bound
        budget = local_budget(
            self.eps_c,
            self.delta,
            self.group_accounted,
            2,
            accounting="tight",
            policy=self.policy,
            mechanism="sue",
            bound="decomposition" if self.accounting == "paper" else self.tight_bound,
        )
        if self.accounting == "paper":
            budget = LocalBudget(
                budget.eps_local, budget.feasible, budget.policy, budget.argument,
                f"{budget.reason} (spec Sec. 7's candidate bound is dropped: not a bound for "
                "whole SUE vectors)", budget.outside_theorem, self.paper_bound,
            )  # fmt: skip
        self.budgets = [budget] * self.d
        self.eps_local = [budget.eps_local] * self.d

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec(f"a{j}", k, 2) for j, k in enumerate(self.domain_sizes)]

    def randomize(
        self, values: np.ndarray, k: int, eps: float | None, rng: np.random.Generator
    ) -> np.ndarray:
        """SUE bit vector of attribute i for the users of group i (k columns)."""
        if eps is None:
            return np.zeros((0, k), dtype=np.int64)
        return ue_perturb(values, k, eps, rng, "sue").astype(np.int64)

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
