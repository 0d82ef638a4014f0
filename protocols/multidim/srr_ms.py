"""SRR-MS (seed 000, Algorithm 1): single-attribute RR with multiple shufflers.

Users are split into d groups by a public, data-independent, balanced rule on their global
indices (:mod:`protocols.privacy.grouping`: group sizes are exactly floor(n/d) or ceil(n/d) whatever the
split of the users into client populations); group i reports only attribute i with k_i-ary RR at
eps_i and sends it to shuffler i (batch ``a{i}``, width 1, no attribute id on the wire).
Estimators (spec Sec. 3):

* ``paper``: f~ = (d C - n q_i) / (n (p_i - q_i)), the n/d normalisation;
* ``observed``: f~ = (C / n_i - q_i) / (p_i - q_i) with n_i the size of batch i.

Accounting (both at the guaranteed group size n_g = floor(min_users/d), an integer; the paper
uses the fractional n/d, which no real group holds): ``paper`` = Calculate(eps_c, delta, n_g,
k_i) per group (Theorem 1 with parallel composition); ``tight`` = the DP core's accountant for
k_i-RR over n_g users. Attributes without a feasible eps_i are not collected (their group sends
nothing; estimate ``None``). Each group's estimate is its own release (group ``a{i}``); a group
that received fewer than n_g reports is re-accounted at its count.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec
from protocols.multidim.common import MultidimProtocol, grouped_variance
from protocols.oracles.grr import grr_estimate_from_counts, grr_perturb, grr_probabilities
from protocols.privacy.grouping import balanced_sizes, public_groups
from protocols.privacy.ledger import PrivacyRefusal, Release
from protocols.privacy.statements import shuffled_release


class SRRMS(MultidimProtocol):
    """SRR-MS encoder and analyzer (module docstring)."""

    name = "srr-ms"
    estimators = ("paper", "observed")
    paper_bound = "balle19-closed-form (Theorem 1, parallel over groups)"

    def configure(self) -> None:
        """One k_j-ary RR budget per attribute, each among the users of one group."""
        self.group_accounted = self.users_per_group()
        self.budgets = [self.rr_budget(self.group_accounted, k) for k in self.domain_sizes]
        self.eps_local: list[float | None] = [b.eps_local for b in self.budgets]

    @property
    def feasible(self) -> bool:
        """True when at least one attribute has a feasible local epsilon."""
        return any(e is not None for e in self.eps_local)

    @property
    def feasible_attributes(self) -> list[int]:
        """Indices of attributes with a feasible local epsilon."""
        return [j for j, e in enumerate(self.eps_local) if e is not None]

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec(f"a{j}", 1, k) for j, k in enumerate(self.domain_sizes)]

    def assign_groups(self, ids: np.ndarray, seed: int) -> np.ndarray:
        """Group of each user (global indices ``ids`` in [0, n)): the public balanced rule."""
        return public_groups(ids, self.n, balanced_sizes(self.n, self.d), seed)

    def public_grouping(self, ids: np.ndarray, seed: int) -> np.ndarray:
        return self.assign_groups(ids, seed)

    def perturb(self, records: np.ndarray, groups: np.ndarray, rng: np.random.Generator) -> Batches:
        """Randomize each user's own-group attribute; one batch per attribute."""
        x = self.check(records)
        g = np.asarray(groups)
        if g.shape != (x.shape[0],) or (g.size and (g.min() < 0 or g.max() >= self.d)):
            raise ValueError(
                f"{self.name}.perturb: groups must be {x.shape[0]} values in [0, {self.d})"
            )
        return {
            f"a{j}": self.randomize(x[g == j, j], k, eps, rng)
            for j, (k, eps) in enumerate(zip(self.domain_sizes, self.eps_local, strict=True))
        }

    def randomize(
        self, values: np.ndarray, k: int, eps: float | None, rng: np.random.Generator
    ) -> np.ndarray:
        """The messages of one group's users for their attribute (domain ``k``): k-RR, one
        column; none where the attribute has no feasible local epsilon."""
        if eps is None:
            return np.zeros((0, 1), dtype=np.int64)
        return grr_perturb(values, k, eps, rng).reshape(-1, 1)

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        """All n users: public balanced grouping, then k_i-RR of attribute i within group i."""
        return self.encode_round(0, records, rng, {}, {})

    def encode_round(
        self,
        round: int,
        records: np.ndarray,
        rng: np.random.Generator,
        public: dict[str, Any],
        local: dict[str, Any],
    ) -> Batches:
        """A block of users (global indices in ``local``, :func:`protocols.base.block_state`)."""
        x = self.check(records)
        return self.perturb(x, self.block_grouping(local, x.shape[0], self.n, rng), rng)

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        """Per-batch counts and both estimators."""
        paper: list[np.ndarray | None] = []
        observed: list[np.ndarray | None] = []
        reports = malformed = 0
        for j, (k, eps) in enumerate(zip(self.domain_sizes, self.eps_local, strict=True)):
            arr = np.asarray(shuffled.get(f"a{j}", np.zeros((0, 1), dtype=np.int64)))
            if arr.ndim != 2 or arr.shape[1] != 1:
                raise ValueError(
                    f"srr-ms.analyze: batch a{j} must have shape (n, 1), got {arr.shape}"
                )
            if eps is None:
                malformed += arr.shape[0]
                paper.append(None)
                observed.append(None)
                continue
            y = arr[:, 0]
            ok = (y >= 0) & (y < k)
            c = np.bincount(y[ok], minlength=k).astype(np.float64)
            reports += int(ok.sum())
            malformed += int((~ok).sum())
            paper.append(grr_estimate_from_counts(c, eps, self.n / self.d))
            observed.append(grr_estimate_from_counts(c, eps) if c.sum() > 0 else np.full(k, np.nan))
        return self.package({"paper": paper, "observed": observed}, reports, malformed)

    def privacy(self) -> dict[str, Any]:
        bound = [self.bound_name("balle19-closed-form", "grr", b) for b in self.budgets]
        return self.privacy_statement(
            self.eps_local,
            bound[0] if len(set(bound)) == 1 else bound,
            composition="parallel over d disjoint groups",
            group_size=self.group_accounted,
            infeasible=[self.attributes[j] for j, e in enumerate(self.eps_local) if e is None],
        )

    def group_mechanism(self, j: int) -> tuple[str, dict[str, Any]]:
        """(description, accountant keywords) of group j's randomizer."""
        k = self.domain_sizes[j]
        return f"{k}-RR", {"mechanism": "grr", "k": k}

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """One release per collected attribute, on its own group (parallel composition)."""
        out = []
        for j, (b, eps) in enumerate(zip(self.budgets, self.eps_local, strict=True)):
            if eps is None:
                continue  # the group sends nothing and nothing is published for it
            label, acct = self.group_mechanism(j)
            out.append(
                shuffled_release(
                    f"1-way marginal of {self.attributes[j]}",
                    f"{label}, eps_l = {eps:.4g}, shuffled within group a{j}",
                    eps_local=eps,
                    eps_planned=self.eps_c,
                    delta=self.group_delta,
                    n_accounted=self.group_accounted,
                    n_received=counts.get(f"a{j}", 0),
                    bound=self.bound_name(self.paper_bound, acct["mechanism"], b),
                    accountant=acct,
                    group=f"a{j}",
                )
            )
        if not out:
            raise PrivacyRefusal(f"{self.name}: no attribute has a feasible local epsilon")
        return out

    @property
    def group_delta(self) -> float:
        """The delta each group's release states."""
        return self.delta

    def variance(
        self, freqs: list[np.ndarray], estimator: str | None = None, partition: bool = True
    ) -> list[np.ndarray | None]:
        """Exact per-value variance of each feasible attribute (``srr_ms_variance``).

        Both estimators share it (they coincide when d divides n).
        """
        return [
            None if e is None else srr_ms_variance(f, k, e, self.n, self.d, partition=partition)
            for f, k, e in zip(freqs, self.domain_sizes, self.eps_local, strict=True)
        ]


def srr_ms_variance(
    freqs: np.ndarray, k: int, eps: float, n: int, d: int, *, partition: bool = True
) -> np.ndarray:
    """Variance of the SRR-MS estimate of a value with frequency ``freqs`` (groups of n/d).

    ``partition=False``: Theorem 3 in full, conditional on the group holding the value with the
    population frequency: d q(1-q)/(n (p-q)^2) + d f (1-p-q)/(n (p-q)).
    ``partition=True`` adds the balanced random partition's sampling error
    (d/n)^2 (n/d) f (1-f) (n - n/d)/(n - 1) = f (1-f)(d-1)/(n-1) (hypergeometric group counts).
    Both estimators coincide when d divides n.
    """
    p, q = grr_probabilities(k, eps)
    return grouped_variance(freqs, p, q, n, d, partition=partition)


def srr_ms_variance_paper_approx(k: int, eps: float, n: int, d: int) -> float:
    """The paper's Eq. (3): d q(1-q)/(n (p-q)^2), the f_v term dropped."""
    p, q = grr_probabilities(k, eps)
    return d * q * (1 - q) / (n * (p - q) ** 2)
