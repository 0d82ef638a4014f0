"""Public, data-independent assignment of users to groups, exact whatever the split into parties.

Grouped protocols (SRR-MS and SUE-MS's attribute groups, Calm_SRR-MS's marginal groups, GFIM's
G1/G2, the users set aside for a DP-estimated parameter) are accounted at their groups' sizes.
Assigning users per client population or per encode call, balanced within each call, leaves a
group up to one user short per call (with two client populations and n = 1,000, d = 3, a third
of the runs had a group of 332 < 333). Here the assignment is a *public* function of the user's
global index: a pseudo-random permutation ``pi`` of ``[0, n)`` drawn from the run's public
grouping seed (fixed before the data is read, fresh per run; nothing in it depends on the data),
and group ``g`` holds the users whose rank ``pi(i)`` lies in
``[sum(sizes[:g]), sum(sizes[:g+1]))``. Group sizes are then exactly ``sizes`` whatever the split
of the users into client populations and encode blocks; a client only needs the global indices
of its users (:func:`protocols.base.block_state`).

Knowing the assignment hides nothing the proofs need: shuffled-k-RR amplification is proved for
a fixed set of users with fixed data, and the shuffler of a group's batch sees which users send
to it anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np


def balanced_sizes(n: int, d: int) -> list[int]:
    """d group sizes summing to n that differ by at most one (the larger ones first)."""
    if d < 1 or n < 0:
        raise ValueError(f"balanced_sizes: need d >= 1 and n >= 0, got n={n}, d={d}")
    return [n // d + (1 if g < n % d else 0) for g in range(d)]


@lru_cache(maxsize=8)
def _ranks(n: int, seed: int) -> np.ndarray:
    """pi(i) for every i: a public uniform permutation of [0, n) (read-only)."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, n])))
    r = rng.permutation(n).astype(np.int64)
    r.setflags(write=False)
    return r


def public_groups(user_ids: np.ndarray, n: int, sizes: Sequence[int], seed: int) -> np.ndarray:
    """Group index of each user in ``user_ids`` (global indices in [0, n)); sizes sum to n."""
    ids = np.asarray(user_ids, dtype=np.int64)
    if sum(int(s) for s in sizes) != n or min(sizes, default=0) < 0:
        raise ValueError(f"public_groups: sizes {list(sizes)} must be >= 0 and sum to n = {n}")
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(f"public_groups: user indices must lie in [0, {n})")
    edges = np.cumsum(np.asarray(sizes, dtype=np.int64))
    return np.searchsorted(edges, _ranks(int(n), int(seed))[ids], side="right").astype(np.int64)
