"""Composition of shuffled rounds by privacy loss distributions (Google's ``dp-accounting``).

Each round is represented by a dominating pair (P, Q): a pair of distributions with
H_a(M(D) || M(D')) <= H_a(P || Q) for every a >= 0 and every neighbouring D, D'. Dominating
pairs compose under adaptive composition (Zhu, Dong, Wang, AISTATS 2022), and ``dp-accounting``
composes their PLDs (pessimistic discretisation) and converts back to (eps, delta).

The pair used for every round is the binary-RR blanket pair: the target reports from
(p, q) = (e^eps0, 1)/(e^eps0 + 1) (resp. swapped), the other users contribute M ~ Bin(n-1, 2q)
uniform bits, and the adversary sees M and the count of each bit. By the decomposition lemma
(``protocols.accountant.decomposition``, docs/accountant.md Lemma G) it dominates every
eps0-LDP randomizer shuffled among n users, for all a at once, so it is valid for every
mechanism; for binary RR it is that mechanism's own blanket pair. (Mechanism-specific pairs
with a neutral state, e.g. k-RR with k >= 3, would be tighter; they are not used here.)

Mass outside the enumerated windows is put on an outcome with Q = 0 (infinite privacy loss),
so it is counted in full in every delta.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import gammaln

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Round:
    """One shuffled release: eps0-LDP reports of n users, repeated ``repeat`` times."""

    eps_local: float
    n: int
    mechanism: str = "generic"
    k: int | None = None
    g: int | None = None
    d: int | None = None
    repeat: int = 1
    name: str = ""


@dataclass(frozen=True)
class Composition:
    """Result of ``compose``."""

    eps: float
    delta: float
    kind: str  # "upper"
    rounds: list[Round] = field(default_factory=list)
    pair: str = "binary-RR blanket pair (dominates every eps0-LDP randomizer, Lemma G)"
    library: str = "dp-accounting (dp_accounting.pld)"
    basic_composition_eps: float | None = None  # sum of single-round epsilons, for comparison


def _log_binom(k: np.ndarray, n: np.ndarray, p: float) -> np.ndarray:
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    return (
        gammaln(n + 1)
        - gammaln(k + 1)
        - gammaln(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )


def _window(n: int, p: float, z: float) -> tuple[int, int]:
    sd = math.sqrt(max(n * p * (1 - p), 1.0))
    return max(0, int(math.floor(n * p - z * sd))), min(n, int(math.ceil(n * p + z * sd)))


def blanket_pair_pmfs(eps_local: float, n: int, z: float = 11.0) -> tuple[dict, dict]:
    """(log P, log Q) of the binary-RR blanket pair on outcomes (M, count of the first bit)."""
    e = math.exp(eps_local)
    p, q = e / (e + 1), 1 / (e + 1)
    gamma = 2 * q
    m_lo, m_hi = _window(n - 1, gamma, z)
    ms = np.arange(m_lo, m_hi + 1)
    lp, lq = {}, {}
    tot_p = 0.0
    tot_q = 0.0
    for m in ms:
        a_lo, a_hi = _window(int(m) + 1, 0.5, z)
        a = np.arange(a_lo, a_hi + 1)
        lm = float(_log_binom(m, n - 1, gamma))
        prev = np.where(a >= 1, _log_binom(np.maximum(a - 1, 0), m, 0.5), -np.inf)
        cur = np.where(a <= m, _log_binom(np.minimum(a, m), m, 0.5), -np.inf)
        log_p = lm + np.logaddexp(math.log(p) + prev, math.log(q) + cur)
        log_q = lm + np.logaddexp(math.log(q) + prev, math.log(p) + cur)
        for ai, x, y in zip(a.tolist(), log_p.tolist(), log_q.tolist(), strict=True):
            lp[(int(m), ai)] = x
            lq[(int(m), ai)] = y
        tot_p += float(np.exp(log_p).sum())
        tot_q += float(np.exp(log_q).sum())
    rest = max(0.0, 1.0 - tot_p)
    if rest > 0:
        lp["rest"] = math.log(rest)  # Q has no mass there: infinite loss, counted in full
    return lq, lp


def _round_pld(r: Round, discretization: float) -> Any:
    from dp_accounting.pld import privacy_loss_distribution as pld

    lower, upper = blanket_pair_pmfs(r.eps_local, r.n)
    one = pld.from_two_probability_mass_functions(
        lower, upper, pessimistic_estimate=True, value_discretization_interval=discretization
    )
    return one.self_compose(r.repeat) if r.repeat > 1 else one


def compose(rounds: list[Round], delta: float, *, discretization: float = 1e-4) -> Composition:
    """(eps, delta) of the adaptive composition of the rounds (upper bound)."""
    if not rounds:
        raise ValueError("compose: need at least one round")
    if not 0 < delta < 1:
        raise ValueError(f"compose: delta must lie in (0, 1), got {delta}")
    for r in rounds:
        if not r.eps_local > 0 or r.n < 2 or r.repeat < 1:
            raise ValueError(f"compose: bad round {r}")
    total = None
    for r in rounds:
        one = _round_pld(r, discretization)
        total = one if total is None else total.compose(one)
    eps = float(total.get_epsilon_for_delta(delta))
    from protocols.accountant import amplify

    basic = 0.0
    for r in rounds:
        a = amplify(r.eps_local, r.n, delta / sum(x.repeat for x in rounds), bound="vr")
        basic += r.repeat * (a.eps_central if a.eps_central is not None else r.eps_local)
    return Composition(eps, delta, "upper", list(rounds), basic_composition_eps=basic)


def rounds_from_toml(text: str) -> tuple[list[Round], float | None]:
    """Parse the ``--compose`` file: optional top-level ``delta``, and ``[[round]]`` tables with
    eps_local, n, and optional mechanism, k, g, d, repeat, name."""
    data = tomllib.loads(text)
    out = []
    for i, t in enumerate(data.get("round", [])):
        unknown = set(t) - {"eps_local", "n", "mechanism", "k", "g", "d", "repeat", "name"}
        if unknown:
            raise ValueError(f"compose: round {i}: unknown keys {sorted(unknown)}")
        if "eps_local" not in t or "n" not in t:
            raise ValueError(f"compose: round {i} needs eps_local and n")
        out.append(
            Round(
                float(t["eps_local"]),
                int(t["n"]),
                t.get("mechanism", "generic"),
                t.get("k"),
                t.get("g"),
                t.get("d"),
                int(t.get("repeat", 1)),
                str(t.get("name", f"round {i}")),
            )
        )
    if not out:
        raise ValueError("compose: the file has no [[round]] table")
    d = data.get("delta")
    return out, None if d is None else float(d)
