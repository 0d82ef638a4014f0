"""SLH: shuffled optimal local hashing (Wang et al., VLDB 2020, "SOLH").

OLH through the shuffle: each user hashes its value with a fresh member of the family
((a v + b) mod P) mod g and sends (seed, y), y = the hash kept with probability
e^eps_l/(e^eps_l + g - 1), else another value of [g] (:mod:`protocols.oracles.olh`; the message
format and the unbiased estimator with the family's exact collision probability are HP-SDP's,
:class:`protocols.hp_sdp.protocol.HPSDPProtocol` with ``post="none"``, reused unchanged).

Shuffle-optimal hash range: as SOLH, the reports are accounted as k-RR over the g hash values
(the survey's Theorem 4 with k = g: lambda = g/(e^eps_l + g - 1)), which caps g below
C = (n - 1) eps_c^2/(14 ln(2/delta)), and g is the value in [2, C) minimising the exact MSE of the
estimator (HP-SDP's ``mean_variance``) for the domain size d. Unlike plain OLH (g = e^eps + 1),
g here grows with n, not with eps_l. The survey's implementation precomputed hash-value ->
original-value tables; our analyzer needs none: HP-SDP's inverted voting turns each (seed, y)
into the ceil(P/g) values it supports with a precomputed table of inverses mod P (O(n d/g)).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from protocols.accountant import survey
from protocols.accountant.balle import blanket_capacity
from protocols.catalogue.common import CatalogueProtocol, Guarantee, certified
from protocols.hp_sdp.protocol import HPSDPProtocol, SRRParams, mean_variance


def _eps_l(eps_c: float, n: int, delta: float, g: int) -> float | None:
    b = survey.theorem4_inverse(eps_c, n, delta, g)
    return float(b.value) if b.valid and b.value is not None and b.value > 0 else None


@lru_cache(maxsize=256)
def slh_parameters(d: int, n: int, eps_c: float, delta: float) -> tuple[int, float]:
    """(g, eps_l): the hash range minimising the exact MSE under Theorem 4 with k = g."""

    def var(g: int) -> float:
        e = _eps_l(eps_c, n, delta, g)
        return math.inf if e is None else mean_variance(e, g, n, d)

    cap = int(blanket_capacity(eps_c, n, delta))
    if cap < 2 or var(2) == math.inf:
        raise ValueError(f"SLH: Theorem 4 admits no hash range (n={n}, eps_c={eps_c})")
    grid = sorted({max(2, int(round(x))) for x in np.geomspace(2, max(2, cap), 25)})
    best = min(grid, key=var)
    lo, hi = max(2, int(best / 1.3)), min(cap, int(best * 1.3) + 1)
    best = min(range(lo, hi + 1), key=var)
    e = _eps_l(eps_c, n, delta, best)
    assert e is not None
    return best, e


class SLH(HPSDPProtocol, CatalogueProtocol):
    """One (seed, y) message per user (HP-SDP's encoder/analyzer without POP)."""

    release_what = "histogram of [d]"

    def __init__(self, d: int, n: int, eps_c: float, delta: float) -> None:
        g, eps_l = slh_parameters(int(d), int(n), float(eps_c), float(delta))
        lam = survey.rr_lambda(eps_l, g)
        fwd = survey.theorem4(eps_l, int(n), float(delta), g)
        params = SRRParams(
            float(eps_c), float(delta), int(n), g, eps_l, lam, "paper", float(fwd.value or eps_c)
        )
        super().__init__(int(d), params, post="none")
        self.name = "slh"
        self.n = int(n)

    def analyze(self, shuffled: dict[str, np.ndarray]) -> dict[str, Any]:
        out = super().analyze(shuffled)
        m = out["reports"]
        out["counts"] = (np.asarray(out["raw_frequencies"]) * m).tolist()
        return out

    def max_messages(self) -> dict[str, int]:
        return {"reports": 1}

    def mechanism(self) -> str:
        p = self.params
        return f"olh(g={p.g}, eps_l={p.eps_l:.4g}) + uniform shuffle"

    def guarantee(self, users: int) -> Guarantee:
        b = survey.theorem4(self.params.eps_l, users, self.params.delta, self.params.g)
        return Guarantee(certified(b), self.params.delta, "survey-theorem4 (k=g)")

    def privacy(self) -> dict[str, Any]:
        p = self.params
        return self.statement(
            {"g": p.g, "lambda": p.gamma}, certified_epsilon=p.eps_certified,
            target_epsilon=p.eps_c, delta=p.delta, local_epsilon=p.eps_l,
            bound="survey Theorem 4 with k = g (SOLH)",
        )  # fmt: skip
