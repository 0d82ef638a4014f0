"""Zipf stand-ins for the query-log data of Luo, Wang, Yi's experiments (the AOL log itself is
not in ``../shared/datasets``): n draws of a Zipf law over ``items`` ranks, rank r placed at a
uniformly random distinct id of [0, domain), so the heavy items are scattered over the domain
as real queries hashed to integers would be."""

from __future__ import annotations

import numpy as np

from protocols.grr.workload import zipf_values
from protocols.rng import experiment_rng


def zipf_items(n: int, domain: int, items: int, exponent: float, seed: int) -> np.ndarray:
    """n values in [0, domain): rank r (P proportional to (r + 1)^-exponent) at a random id."""
    if not (1 <= items <= domain and n >= 1 and exponent >= 0):
        raise ValueError(
            f"zipf_items: need 1 <= items <= domain, n >= 1, exponent >= 0; got {items}, "
            f"{domain}, {n}, {exponent}"
        )
    ranks = zipf_values(n, items, exponent, seed)
    rng = experiment_rng(seed, "zipf_items", domain)
    ids = np.unique(rng.integers(0, domain, 2 * items + 16, dtype=np.int64))
    while ids.size < items:  # a small domain: draw without replacement
        ids = np.unique(np.concatenate([ids, rng.permutation(domain)[:items]]))
    return rng.permutation(ids)[:items][ranks]
