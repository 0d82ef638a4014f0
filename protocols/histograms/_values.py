"""Input checks shared by the histogram protocols."""

from __future__ import annotations

import numpy as np


def check_values(records: np.ndarray, d: int, where: str) -> np.ndarray:
    """One value in [0, d) per user as int64 (shape (n,) or (n, 1)); ValueError otherwise."""
    v = np.asarray(records)
    if v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    if v.ndim != 1:
        raise ValueError(f"{where}: records must be one value per user, got shape {v.shape}")
    v = v.astype(np.int64)
    if v.size and (v.min() < 0 or v.max() >= d):
        raise ValueError(f"{where}: values must lie in [0, {d})")
    return v


def label_counts(
    shuffled: dict[str, np.ndarray], batch: str, d: int, where: str
) -> tuple[np.ndarray, int]:
    """(count of each label in [0, d), malformed rows) of a width-1 batch of labels."""
    m = shuffled.get(batch)
    if m is None:
        raise ValueError(f"{where}: no {batch!r} batch received")
    v = np.asarray(m).reshape(-1)
    ok = (v >= 0) & (v < d)
    return np.bincount(v[ok], minlength=d).astype(np.int64), int((~ok).sum())
