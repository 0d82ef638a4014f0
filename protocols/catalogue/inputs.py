"""Input checks shared by the seed-004 families: one value in [0, d) per user and the label
counts of a batch (histograms and their users), one bit per user (counting and its users)."""

from __future__ import annotations

import numpy as np


def check_domain_and_users(label: str, d: int, n: int) -> None:
    """A domain of d >= 2 values and n >= 2 users, both integers; ValueError naming ``label``."""
    if int(d) != d or d < 2 or int(n) != n or n < 2:
        raise ValueError(f"{label}: need d >= 2 and n >= 2, got d={d}, n={n}")


def _one_per_user(records: np.ndarray, d: int, where: str, what: str, outside: str) -> np.ndarray:
    """One ``what`` in [0, d) per user as int64 (shape (n,) or (n, 1)); ValueError otherwise,
    ``outside`` saying what a value out of range breaks."""
    v = np.asarray(records)
    if v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    if v.ndim != 1:
        raise ValueError(f"{where}: records must be one {what} per user, got shape {v.shape}")
    v = v.astype(np.int64)
    if v.size and (v.min() < 0 or v.max() >= d):
        raise ValueError(f"{where}: {outside}")
    return v


def check_values(records: np.ndarray, d: int, where: str) -> np.ndarray:
    """One value in [0, d) per user as int64 (shape (n,) or (n, 1)); ValueError otherwise."""
    return _one_per_user(records, d, where, "value", f"values must lie in [0, {d})")


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


def check_bits(records: np.ndarray, where: str) -> np.ndarray:
    """One bit per user as int64 (shape (n,) or (n, 1)); ValueError otherwise."""
    return _one_per_user(records, 2, where, "bit", "records must be bits (0 or 1)")


def ones_in(shuffled: dict[str, np.ndarray], batch: str, where: str) -> tuple[int, int, int]:
    """(ones, well-formed rows, malformed rows) of a width-1 batch of bits."""
    m = shuffled.get(batch)
    if m is None:
        raise ValueError(f"{where}: no {batch!r} batch received")
    v = np.asarray(m).reshape(-1)
    ok = (v == 0) | (v == 1)
    return int(v[ok].sum()), int(ok.sum()), int((~ok).sum())
