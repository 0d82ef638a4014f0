"""``sdp run grr``: k-ary randomized response frequency estimation through a shuffler.

Users hold one value in [0, domain) drawn from a Zipf-like law (exponent ``zipf``, default
1.1) fixed by ``data_seed``. ``epsilon`` is the *central* target: the local epsilon is the largest
one the accountant (``bound``, default the variation-ratio bound with GRR's parameters) certifies
for n users and ``delta``; ``local_epsilon`` overrides it (then the central guarantee reported is
the accountant's forward bound).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec, ShuffleProtocol
from protocols.oracles.grr import grr_estimate_from_counts, grr_perturb, grr_variance
from protocols.workloads import Workload, register


class GRRProtocol(ShuffleProtocol):
    """One GRR report per user, one shuffle batch."""

    name = "grr"

    def __init__(self, k: int, eps_local: float, n: int, privacy: dict[str, Any]) -> None:
        self.k, self.eps_local, self.n = k, eps_local, n
        self._privacy = privacy

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("reports", 1, self.k)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        return {"reports": grr_perturb(records, self.k, self.eps_local, rng).reshape(-1, 1)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        reports = shuffled["reports"][:, 0]
        counts = np.bincount(reports, minlength=self.k).astype(np.float64)
        freqs = grr_estimate_from_counts(counts, self.eps_local)
        return {"frequencies": freqs.tolist(), "reports": int(reports.size)}

    def privacy(self) -> dict[str, Any]:
        return self._privacy


def zipf_values(n: int, k: int, exponent: float, seed: int) -> np.ndarray:
    """n values in [0, k) with P(i) proportional to (i + 1)^-exponent."""
    p = 1.0 / np.arange(1, k + 1) ** exponent
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    return rng.choice(k, size=n, p=p / p.sum())


def calibrate(
    eps_c: float | None, eps_l: float | None, n: int, delta: float, k: int, bound: str
) -> tuple[float, dict[str, Any]]:
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
    amp = amplify(eps_l, n, delta, bound=bound, mechanism="grr", k=k)
    return eps_l, {
        "eps_central": amp.eps_central if amp.valid else None,
        "eps_central_lower": amp.lower,
        "eps_central_target": eps_c,
        "delta": delta,
        "eps_local": eps_l,
        "bound": bound,
        "mechanism": f"grr(k={k})",
        "note": amp.reason,
    }


@register("grr")
def grr_workload(params: dict[str, Any]) -> Workload:
    """GRR over synthetic Zipf data: params users, domain, epsilon, local_epsilon, delta, bound."""
    n = int(params.get("users", 10_000))
    k = int(params.get("domain", 10))
    if n < 2 or k < 2:
        raise ValueError(f"grr needs users >= 2 and domain >= 2 (got {n}, {k})")
    delta = float(params.get("delta", 1e-6))
    eps_c = params.get("epsilon", 1.0)
    eps_l = params.get("local_epsilon")
    eps_l, privacy = calibrate(
        None if eps_c is None else float(eps_c),
        None if eps_l is None else float(eps_l),
        n,
        delta,
        k,
        str(params.get("bound", "vr")),
    )
    values = zipf_values(n, k, float(params.get("zipf", 1.1)), int(params.get("data_seed", 0)))
    protocol = GRRProtocol(k, eps_l, n, privacy)
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
