"""``sdp run grr``: k-ary randomized response frequency estimation through a shuffler.

Users hold one value in [0, domain) drawn from a Zipf-like law (exponent ``zipf``, default
1.1) fixed by ``data_seed``. ``epsilon`` is the *central* target: the local epsilon is the largest
one the accountant (``bound``, default the variation-ratio bound with GRR's parameters) certifies
for ``min_users`` (default n) users and ``delta`` (default min(1e-6, 0.01/n)). ``local_epsilon``
overrides it: the central guarantee stated is then the override's own (the accountant's forward
bound at ``min_users``, or the local epsilon itself where nothing amplifies), with the target
shown as missed when it is larger; the gate refuses such a run unless ``max_epsilon`` (default
the target) allows it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec, ShuffleProtocol
from protocols.defences.fake_removal import UniformFakeReports
from protocols.oracles.grr import grr_estimate_from_counts, grr_perturb, grr_variance
from protocols.params import Values, declare
from protocols.privacy.ledger import Release
from protocols.privacy.record import PrivacyStatement
from protocols.privacy.statements import (
    max_epsilon_param,
    min_users_param,
    run_delta,
    shuffled_release,
)
from protocols.workloads import Workload, register


class GRRProtocol(ShuffleProtocol):
    """One GRR report per user, one shuffle batch."""

    name = "grr"

    def __init__(
        self,
        k: int,
        eps_local: float,
        n: int,
        privacy: PrivacyStatement,
        min_users: int | None = None,
        max_epsilon: float | None = None,
    ) -> None:
        self.k, self.eps_local, self.n = k, eps_local, n
        self.min_users = n if min_users is None else int(min_users)
        self._privacy = privacy
        self.max_epsilon = max_epsilon

    def noise_warning(self) -> str | None:
        """Warn when a value's frequency is known to less than 1/k (variance at uniform)."""
        sd = float(np.sqrt(grr_variance(np.full(self.k, 1.0 / self.k), self.k, self.eps_local,
                                        self.n).mean()))  # fmt: skip
        if sd * self.k <= 1.0:
            return None
        return (
            f"too few users for this domain and epsilon: a frequency's standard deviation "
            f"{sd:.3g} exceeds 1/k = {1 / self.k:.3g}; more users (now {self.n}), a larger "
            "--epsilon or a smaller domain would help"
        )

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("reports", 1, self.k)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        return {"reports": grr_perturb(records, self.k, self.eps_local, rng).reshape(-1, 1)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        reports = shuffled["reports"][:, 0]
        counts = np.bincount(reports, minlength=self.k).astype(np.float64)
        return self.estimate_from_counts(counts, int(reports.size), 0)

    def estimate_from_counts(
        self, counts: np.ndarray, reports: int, invalid: int
    ) -> dict[str, Any]:
        freqs = grr_estimate_from_counts(np.asarray(counts, np.float64), self.eps_local, n=reports)
        return {"frequencies": freqs.tolist(), "reports": int(reports)}

    def uniform_fake_reports(self) -> UniformFakeReports:
        return UniformFakeReports("reports", self.k, self.eps_local, float(self._privacy.delta))

    def privacy(self) -> dict[str, Any]:
        return self._privacy.wire()

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """The frequency estimate: shuffled k-RR reports, re-accounted below ``min_users``."""
        p = self._privacy
        return [
            shuffled_release(
                f"frequencies of the {self.k} values",
                f"{self.k}-RR, eps_l = {self.eps_local:.4g}, uniform shuffle",
                eps_local=self.eps_local,
                eps_planned=p.certified_epsilon,
                delta=p.delta,
                n_accounted=self.min_users,
                n_received=counts.get("reports", 0),
                bound=p.bound,
                accountant={"mechanism": "grr", "k": self.k},
                note=p.target_note,
            )
        ]


def zipf_values(n: int, k: int, exponent: float, seed: int) -> np.ndarray:
    """n values in [0, k) with P(i) proportional to (i + 1)^-exponent."""
    p = 1.0 / np.arange(1, k + 1) ** exponent
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    return rng.choice(k, size=n, p=p / p.sum())


def calibrate(
    eps_c: float | None, eps_l: float | None, n: int, delta: float, k: int, bound: str
) -> tuple[float, PrivacyStatement]:
    """(local epsilon, privacy statement) for GRR over a shuffle of n users."""
    from protocols.accountant import amplify, max_local_epsilon

    if eps_l is None:
        if eps_c is None:
            raise ValueError("give epsilon (central target) or local_epsilon")
        eps_l = max_local_epsilon(eps_c, n, delta, bound=bound, mechanism="grr", k=k)
        if eps_l is None:
            raise ValueError(
                f"the {bound} bound certifies no local epsilon reaching eps_c={eps_c} "
                f"with n={n}, delta={delta}, k={k}; raise n or eps_c, or pass "
                "local_epsilon"
            )
    if not (eps_l > 0 and math.isfinite(eps_l)):
        raise ValueError(f"grr: local_epsilon must be finite and > 0, got {eps_l}")
    amp = amplify(eps_l, n, delta, bound=bound, mechanism="grr", k=k)
    valid = amp.valid and amp.eps_central is not None and amp.eps_central < eps_l
    eps_central = float(amp.eps_central) if valid else float(eps_l)
    missed = eps_c is not None and eps_central > eps_c * (1 + 1e-12)
    return eps_l, PrivacyStatement(
        certified_epsilon=eps_central,
        certified_epsilon_lower=amp.lower,
        target_epsilon=eps_c,
        target_missed=missed,
        target_note=(
            f"target eps_c = {eps_c:g} missed: local_epsilon {eps_l:g} gives {eps_central:.4g}"
            if missed
            else ""
        ),
        delta=delta,
        local_epsilon=eps_l,
        users_accounted=n,
        bound=bound if valid else "pure LDP (no amplification at this count)",
        mechanism=f"grr(k={k})",
        note=amp.reason,
    )


@register("grr", params=declare(users=10_000, domain=10, local_epsilon=None, bound="vr", zipf=1.1))
def grr_workload(p: Values) -> Workload:
    """GRR over synthetic Zipf data: params users, domain, epsilon, local_epsilon, delta, bound."""
    n, k = p.users, p.domain
    if n < 2 or k < 2:
        raise ValueError(f"grr needs users >= 2 and domain >= 2 (got {n}, {k})")
    delta = run_delta(p.raw, n, "grr")
    min_users = min_users_param(p.raw, n, "grr")
    eps_l, privacy = calibrate(p.epsilon, p.local_epsilon, min_users, delta, k, p.bound)
    values = zipf_values(n, k, p.zipf, p.data_seed)
    protocol = GRRProtocol(
        k, eps_l, n, privacy, min_users, max_epsilon_param(p.raw, p.epsilon, "grr")
    )
    true_f = np.bincount(values, minlength=k) / n

    def report(est: dict[str, Any]) -> dict[str, Any]:
        f = np.asarray(est["frequencies"])
        var = grr_variance(true_f, k, eps_l, n)
        rows = [[i, float(f[i]), float(true_f[i]), float(f[i] - true_f[i])] for i in range(k)]
        return {
            "table": {
                "title": f"GRR frequencies (n={n}, k={k}, eps_l={eps_l:.3f})",
                "columns": ["value", "estimated", "true", "error"],
                "rows": rows,
            },
            "true_frequencies": true_f.tolist(),
            "mse": float(np.mean((f - true_f) ** 2)),
            "expected_mse": float(var.mean()),
        }

    return Workload(protocol, values, truth=lambda: {"frequencies": true_f.tolist()}, report=report)
