"""Input checks shared by the counting protocols."""

from __future__ import annotations

import numpy as np


def check_bits(records: np.ndarray, where: str) -> np.ndarray:
    """One bit per user as int64 (shape (n,) or (n, 1)); ValueError otherwise."""
    x = np.asarray(records)
    if x.ndim == 2 and x.shape[1] == 1:
        x = x[:, 0]
    if x.ndim != 1:
        raise ValueError(f"{where}: records must be one bit per user, got shape {x.shape}")
    x = x.astype(np.int64)
    if x.size and (x.min() < 0 or x.max() > 1):
        raise ValueError(f"{where}: records must be bits (0 or 1)")
    return x


def ones_in(shuffled: dict[str, np.ndarray], batch: str, where: str) -> tuple[int, int, int]:
    """(ones, well-formed rows, malformed rows) of a width-1 batch of bits."""
    m = shuffled.get(batch)
    if m is None:
        raise ValueError(f"{where}: no {batch!r} batch received")
    v = np.asarray(m).reshape(-1)
    ok = (v == 0) | (v == 1)
    return int(v[ok].sum()), int(ok.sum()), int((~ok).sum())
