"""GFIM (and LDPMiner) over a shuffler: the same encoder with an amplified local epsilon.

The encoder and analyzer are exactly :class:`~protocols.gfim.protocol.GFIM`'s; only the local budget
changes. Each round's reports are shuffled among that round's users, so for a central target
(eps_c, delta) the local epsilon is the largest one the DP core's accountant certifies for the
round's number of users (``protocols.accountant.max_local_epsilon``):

* **GFIM**: G1 holds exactly floor(n/2) users and G2 the rest, by the public rule of
  :mod:`protocols.privacy.grouping` (whatever the split into client populations), so each round is
  calibrated for n_round = floor(min_users/2) reports (``min_users`` default n) and re-accounted
  below it. A user is in exactly one group and the split is data-independent, so the two rounds
  compose in parallel (round 1's candidate set is post-processing of round 0 and independent of
  G2's data): the whole run is (eps_c, delta)-DP.
* **LDPMiner**: every user reports in both rounds among all users; sequential composition, so
  each round gets (eps_c/2, delta/2), calibrated at ``min_users``.

``local_epsilon`` (an override of the calibrated local budget; for LDPMiner the total over both
rounds) is honoured by both: the statement is then the override's own guarantee (the
accountant's forward bound, or the local epsilon where nothing amplifies), with the target shown
as missed when it is larger (the gate refuses unless ``max_epsilon`` allows it).

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

import math
from typing import Any

from protocols.accountant import amplify, max_local_epsilon
from protocols.gfim.ldpminer import LDPMiner
from protocols.gfim.protocol import GFIM
from protocols.privacy.record import PrivacyStatement

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
    if not (eps_local > 0 and math.isfinite(eps_local)):
        raise ValueError(f"gfim-shuffle: local_epsilon must be finite and > 0, got {eps_local}")
    amp = amplify(eps_local, n_round, delta, bound=bound, mechanism=MECHANISM)
    ok = amp.valid and amp.eps_central is not None and amp.eps_central < eps_local
    return float(eps_local), PrivacyStatement(
        local_epsilon=float(eps_local),
        certified_epsilon=float(amp.eps_central) if ok else float(eps_local),
        certified_epsilon_lower=amp.lower,
        delta=delta,
        bound=bound if ok else "pure LDP (no amplification at this count)",
        mechanism=MECHANISM,
        note=amp.reason,
        extra={"n_shuffled": int(n_round)},
    ).wire()


def _missed(target: float, got: float, eps_local: float | None) -> str:
    if eps_local is None or got <= target * (1 + 1e-12):
        return ""
    return f"target eps_c = {target:g} missed: local_epsilon {eps_local:g} gives {got:.4g}"


def _statement(
    eps_c: float,
    certified: float,
    note: str,
    delta: float,
    eps_local: float,
    composition: str,
    round_statement: dict[str, Any],
) -> dict[str, Any]:
    """The published statement of a shuffled two-round miner (docs/spec/07-privacy.md P-3)."""
    return PrivacyStatement(
        target_epsilon=eps_c,
        certified_epsilon=certified,
        target_missed=bool(note),
        delta=delta,
        local_epsilon=eps_local,
        extra={"model": "shuffle", "composition": composition, "round": round_statement},
    ).wire()


def _shuffled(
    p: Any,
    name: str,
    min_reports: int,
    round_statement: dict[str, Any],
    round_delta: float,
    note: str,
    eps_c: float,
    max_epsilon: float | None,
) -> Any:
    """``p`` set up as the shuffled variant: per-round reports, guarantee and gate cap."""
    p.name = name
    p.min_reports = min_reports
    p.round_eps = (round_statement["eps_central"], round_statement["eps_central"])
    p.round_delta = round_delta
    p.target_note = note
    p.max_epsilon = eps_c if max_epsilon is None else float(max_epsilon)
    return p


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
    min_users: int | None = None,
    max_epsilon: float | None = None,
) -> GFIM:
    """GFIM whose local epsilon is amplified to a central (eps_c, delta) per round, calibrated
    for floor(min_users/2) reports per round (G1 and G2 hold at least floor(n/2))."""
    m = n if min_users is None else int(min_users)
    n_round = m // 2
    eps_l, acct = calibrate_round(eps_c, n_round, delta, bound, eps_local)
    note = _missed(eps_c, acct["eps_central"], eps_local)
    composition = "parallel (disjoint groups), per round as below"
    privacy = _statement(eps_c, acct["eps_central"], note, delta, eps_l, composition, acct)
    p = GFIM(d, k, ell, eps_l, k_max=k_max, combination=combination, privacy=privacy, n=n)
    return _shuffled(p, "gfim-shuffle", n_round, acct, delta, note, eps_c, max_epsilon)


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
    eps_local: float | None = None,
    min_users: int | None = None,
    max_epsilon: float | None = None,
) -> LDPMiner:
    """LDPMiner over a shuffler: each round (eps_c/2, delta/2) among ``min_users`` (default n)
    users; ``eps_local`` (the total local budget, eps_local/2 per round) overrides it."""
    m = n if min_users is None else int(min_users)
    half = None if eps_local is None else float(eps_local) / 2
    eps_round, acct = calibrate_round(eps_c / 2, m, delta / 2, bound, half)
    note = _missed(eps_c, 2 * acct["eps_central"], eps_local)
    composition = "sequential (two rounds, each as below)"
    privacy = _statement(
        eps_c, 2 * acct["eps_central"], note, delta, 2 * eps_round, composition, acct
    )
    p = LDPMiner(d, k, ell, 2 * eps_round, k_max=k_max, combination=combination, privacy=privacy)
    return _shuffled(p, "ldpminer-shuffle", m, acct, delta / 2, note, eps_c, max_epsilon)
