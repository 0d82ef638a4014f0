"""Per-shuffler uniform fake messages (MURS, Wang et al. VLDB 2020), and their privacy effect.

Each of m shufflers adds f uniform messages over the batch's message space (every component
uniform in [0, bound)) before shuffling. For randomizers accounted by the privacy blanket
(k-RR, OLH/SLH with k = g), a uniform fake is distributed exactly like a blanket report, so the
fakes add to the blanket mass: Balle et al.'s condition (Theorem 4) becomes

    (n - 1)/(e^eps_l + k - 1) + F/k >= 14 ln(2/delta)/eps_c^2,

with F the fakes credited. Against m - 1 shufflers colluding with the analyzer only the honest
shuffler's f fakes count (F = f); if moreover every other user colludes, the fakes are the whole
blanket: eps_c = sqrt(14 k ln(2/delta)/f) (the MURS guarantee against n - 1 colluding users).
The analyzer must know the total number of fakes (public) and subtract their uniform counts,
as :class:`protocols.histograms.murs.SurveyMURS` does. Validity as in Theorem 4: eps_c <= 1.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from protocols.accountant.balle import blanket_epsilon_of_mass


class BatchSpec(Protocol):
    """What the fakes need of a ``protocols.base.BatchSpec`` (not imported: ``protocols.base``
    runs the fakes path of ``simulate``)."""

    name: str
    width: int
    bound: int


def uniform_fakes(spec: BatchSpec, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` fake rows for a batch, every component uniform in [0, bound)."""
    if int(count) != count or count < 0:
        raise ValueError(f"fakes: count must be an integer >= 0, got {count}")
    return rng.integers(0, spec.bound, size=(int(count), spec.width), dtype=np.int64)


def fakes_per_shuffler(n: int, rate: float, shufflers: int) -> int:
    """f = ceil(rate n / m): each of m shufflers' share of fakes totalling rate n."""
    if shufflers < 1 or not rate >= 0:
        raise ValueError(f"fakes: need shufflers >= 1 and rate >= 0, got {shufflers}, {rate}")
    return math.ceil(rate * n / shufflers)


def blanket_epsilon_with_fakes(
    eps_l: float, k: int, n: int, fakes: int, delta: float
) -> float | None:
    """eps_c of n shuffled k-RR reports at eps_l plus ``fakes`` credited uniform fakes
    (None when the result exceeds Theorem 4's eps_c <= 1)."""
    mass = (n - 1) / (math.exp(min(eps_l, 700.0)) + k - 1) + fakes / k
    if mass <= 0:
        return None
    eps = blanket_epsilon_of_mass(mass, delta)
    return eps if eps <= 1 else None


def fake_only_epsilon(k: int, fakes: int, delta: float) -> float | None:
    """eps_c when every other user colludes: the honest shuffler's fakes alone are the blanket."""
    if fakes < 1:
        return None
    eps = blanket_epsilon_of_mass(fakes / k, delta)
    return eps if eps <= 1 else None


def shuffle_with_fakes(
    batches: dict[str, np.ndarray],
    specs: list[BatchSpec],
    fakes: dict[str, int],
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """A shuffler step for ``simulate``: append the fakes per batch, then permute uniformly."""
    sp = {s.name: s for s in specs}
    out = {}
    for name, arr in batches.items():
        f = uniform_fakes(sp[name], fakes.get(name, 0), rng)
        both = np.concatenate([np.asarray(arr, dtype=np.int64), f])
        out[name] = both[rng.permutation(both.shape[0])]
    return out
