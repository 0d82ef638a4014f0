"""GFIM (and LDPMiner) over a shuffler: the same encoder with an amplified local epsilon.

The encoder and analyzer are exactly :class:`~protocols.gfim.protocol.GFIM`'s; only the local budget
changes. Each round's reports are shuffled among that round's users, so for a central target
(eps_c, delta) the local epsilon is the largest one the DP core's accountant certifies for the
round's number of users (``protocols.accountant.max_local_epsilon``):

* **GFIM**: round r shuffles |G_r| >= floor(n/2) - ``slack`` reports (every client block of b
  users puts floor(b/2) in G1 and the rest in G2; ``slack`` covers up to 2*slack blocks). A user
  is in exactly one group and the split is data-independent, so the two rounds compose in
  parallel: the whole run is (eps_c, delta)-DP for every fixed split, hence also for the random
  split. Round 1's candidate set is post-processing of round 0 and independent of G2's data.
* **LDPMiner**: every user reports in both rounds among all n users; sequential composition, so
  each round gets (eps_c/2, delta/2).

Mechanism parameters (``mechanism="hadamard"`` of the variation-ratio bound, beta =
(e^eps-1)/(2(e^eps+1))): a report is (j, bit) with j uniform and
``Pr[bit = 1 | S, j] = 1/2 + (p - 1/2) a_j(S)``, ``a_j(S) = (1/ell) sum_{x in S real} H[j, x]``.
Every output probability lies in [1/(e^eps+1), e^eps/(e^eps+1)]/m, so p = q = e^eps. The total
variation between two padded sets is ``(p - 1/2) E_j |a_j(S) - a_j(S')|``; by orthogonality
``E_j (a_j(S) - a_j(S'))^2 = |S xor S'|/ell^2 <= 2/ell``, so for ell >= 2 the mean absolute
difference is <= 1 (Cauchy-Schwarz), and for ell = 1 it is <= 1 directly: beta <= (2p-1)/2, the
single-bit Hadamard value. ``tests/test_gfim_privacy.py`` checks this exactly on small domains.
"""

from __future__ import annotations

from typing import Any

from protocols.accountant import amplify, max_local_epsilon
from protocols.gfim.ldpminer import LDPMiner
from protocols.gfim.protocol import GFIM

MECHANISM = "hadamard"


def calibrate_round(
    eps_c: float, n_round: int, delta: float, bound: str = "vr", eps_local: float | None = None
) -> tuple[float, dict[str, Any]]:
    """(local epsilon, accountant statement) of one round of ``n_round`` shuffled reports."""
    if n_round < 2:
        raise ValueError(f"gfim-shuffle: a round needs >= 2 users to shuffle, got {n_round}")
    if eps_local is None:
        eps_local = max_local_epsilon(eps_c, n_round, delta, bound=bound, mechanism=MECHANISM)
        if eps_local is None:
            raise ValueError(
                f"gfim-shuffle: the {bound} bound certifies no local epsilon for eps_c={eps_c} "
                f"with {n_round} users per round and delta={delta}; raise n or eps_c"
            )
    amp = amplify(eps_local, n_round, delta, bound=bound, mechanism=MECHANISM)
    return float(eps_local), {
        "eps_local": float(eps_local),
        "eps_central": amp.eps_central if amp.valid else float(eps_local),
        "eps_central_lower": amp.lower,
        "delta": delta,
        "n_shuffled": int(n_round),
        "bound": bound,
        "mechanism": MECHANISM,
        "note": amp.reason,
    }


def gfim_shuffle(
    d: int,
    k: int,
    ell: int,
    eps_c: float,
    n: int,
    delta: float,
    *,
    bound: str = "vr",
    eps_local: float | None = None,
    k_max: int | None = None,
    combination: str = "thesis",
    slack: int = 128,
) -> GFIM:
    """GFIM whose local epsilon is amplified to a central (eps_c, delta) per round."""
    n_round = n // 2 - slack if n // 2 > 4 * slack else n // 2 - 1
    eps_l, acct = calibrate_round(eps_c, n_round, delta, bound, eps_local)
    privacy = {
        "model": "shuffle",
        "eps_central_target": eps_c,
        "eps_central": acct["eps_central"],
        "delta": delta,
        "eps_local": eps_l,
        "composition": "parallel (disjoint groups), per round as below",
        "round": acct,
    }
    p = GFIM(d, k, ell, eps_l, k_max=k_max, combination=combination, privacy=privacy)
    p.name = "gfim-shuffle"
    p.min_reports = n_round
    return p


def ldpminer_shuffle(
    d: int,
    k: int,
    ell: int,
    eps_c: float,
    n: int,
    delta: float,
    *,
    bound: str = "vr",
    k_max: int | None = None,
    combination: str = "thesis",
) -> LDPMiner:
    """LDPMiner over a shuffler: each round (eps_c/2, delta/2) among all n users."""
    eps_round, acct = calibrate_round(eps_c / 2, n, delta / 2, bound)
    privacy = {
        "model": "shuffle",
        "eps_central_target": eps_c,
        "eps_central": 2 * acct["eps_central"],
        "delta": delta,
        "eps_local": 2 * eps_round,
        "composition": "sequential (two rounds, each as below)",
        "round": acct,
    }
    p = LDPMiner(d, k, ell, 2 * eps_round, k_max=k_max, combination=combination, privacy=privacy)
    p.name = "ldpminer-shuffle"
    p.min_reports = n
    return p
