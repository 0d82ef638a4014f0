"""LDPMiner-SH as the GFIM thesis describes it, and a one-phase sampling S-Hist baseline.

* :class:`LDPMiner` (Qin et al., CCS 2016, as read by the thesis, spec Sec. 4.1): the same two
  rounds as GFIM (sampling S-Hist over D, top ``k_max = 2k`` candidates, intersect-and-pad
  sampling S-Hist over C, eq. 3-5 combination, top-k over D), but **every user reports in both
  rounds with eps/2**: eps-LDP by sequential composition. The original paper's phase-2 details
  (its padding length and combination) may differ; the thesis' reading is what it compared.
* :class:`OnePhase`: every user reports once over D with budget eps (sampling S-Hist, padding
  ``ell``), the top-k of that estimate is the answer (spec Sec. 4.2, "useful cheap baseline").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec, ShuffleProtocol
from protocols.gfim.protocol import TwoPhaseMiner, ldp_statement, phase_variance, top_indices
from protocols.gfim.setvalued_data import to_csr
from protocols.oracles.hadamard_response import hadamard_order, hr_estimate, hr_perturb
from protocols.oracles.padding_sampling import inclusion_moments, pad_and_sample
from protocols.privacy.ledger import Release


class LDPMiner(TwoPhaseMiner):
    """LDPMiner-SH: all users in both rounds, eps/2 per round (sequential composition)."""

    name = "ldpminer"

    def __init__(
        self,
        d: int,
        k: int,
        ell: int,
        eps: float,
        *,
        k_max: int | None = None,
        combination: str = "thesis",
        privacy: dict[str, Any] | None = None,
    ) -> None:
        if not (eps > 0 and math.isfinite(eps)):
            raise ValueError(f"ldpminer: eps must be finite and > 0, got {eps}")
        half = eps / 2
        super().__init__(
            d,
            k,
            ell,
            half,
            half,
            split=False,
            k_max=k_max,
            combination=combination,
            privacy=privacy or ldp_statement(eps, "sequential (eps/2 + eps/2)", eps_per_round=half),
        )
        self.eps = float(eps)


class OnePhase(ShuffleProtocol):
    """One round: sampling S-Hist over D with budget eps, top-k of the estimate."""

    name = "one-phase"

    def __init__(
        self, d: int, k: int, ell: int, eps: float, *, privacy: dict[str, Any] | None = None
    ) -> None:
        if d < 2 or not 1 <= k <= d or ell < 1 or not (eps > 0 and math.isfinite(eps)):
            raise ValueError(
                f"one-phase: need d >= 2, 1 <= k <= d, ell >= 1, eps > 0 "
                f"(d={d}, k={k}, ell={ell}, eps={eps})"
            )
        self.d, self.k, self.ell, self.eps = int(d), int(k), int(ell), float(eps)
        self.m = hadamard_order(self.d)
        self._privacy = privacy or ldp_statement(eps)

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("phase1", 2, self.m)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        r = np.asarray(records)
        if r.ndim != 2 or (r.size and (r.min() < -1 or r.max() >= self.d)):
            raise ValueError(
                f"one-phase: records must be a 2-D matrix of items in [0, {self.d}) "
                "with -1 as padding"
            )
        indptr, items = to_csr(r)
        return {
            "phase1": hr_perturb(
                pad_and_sample(indptr, items, self.ell, rng), self.m, self.eps, rng
            )
        }

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        rep = shuffled.get("phase1")
        if rep is None or rep.shape[0] == 0:
            raise ValueError("one-phase: no reports")
        f = hr_estimate(rep, self.m, self.eps, self.d, scale=float(self.ell))
        top = top_indices(f, self.k)
        return {
            "top_k": top.tolist(),
            "top_k_frequencies": f[top].tolist(),
            "frequencies": f.tolist(),
            "n1": int(rep.shape[0]),
        }

    def variances(self, records: np.ndarray) -> np.ndarray:
        """Exact per-item variance of the estimate (all users report)."""
        indptr, items = to_csr(np.asarray(records))
        _, m2 = inclusion_moments(indptr, items, self.ell, self.d)
        return phase_variance(m2, self.ell, self.eps, int(indptr.size - 1))

    def privacy(self) -> dict[str, Any]:
        return self._privacy

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """The top-k from eps-LDP reports: holds at any count."""
        return [
            Release(
                "top-k items and the frequency of every item",
                f"padding-and-sampling + Hadamard response, eps = {self.eps:.4g} (pure LDP)",
                self.eps, 0.0, 0, counts.get("phase1", 0),
                "pure LDP (every report is eps-LDP, spec Sec. 2.4)",
                note="local guarantee: holds whatever the number of reports",
            )
        ]  # fmt: skip
