"""LS (spec §3.3): each site solves its own program, floors, samples its items; join by id.

Site s solves max sum_{j in U_s} x_j s.t. sum_{j in T_i cap U_s} ln(1 - x_j/c_j) >= theta_s for
every transaction, with
* ``theta_mode="paper"``: theta_s = theta (the paper's setting; the composed guarantee is
  (2 eps, 2 delta - delta^2), Theorem 2), or
* ``theta_mode="composed"``: (eps_s, delta_s) = (eps/2, 1 - sqrt(1 - delta)), so that the two
  sites compose to exactly (eps, delta), i.e. theta_s = theta/2.
The local solver is the y-form convex program solved by SLSQP with an active-set Newton polish
(``model.reference_solve``), after removing duplicate and dominated local rows (safe locally).
No communication is needed apart from the final join (ids only).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from protocols.txpub.model import (
    TxData,
    composed_site_params,
    floor_counts,
    reference_solve,
    theta,
)

THETA_MODES = ("paper", "composed")


def site_theta(eps: float, delta: float, theta_mode: str) -> float:
    """theta_s for one site."""
    if theta_mode == "paper":
        return theta(eps, delta)
    if theta_mode == "composed":
        return theta(*composed_site_params(eps, delta))
    raise ValueError(f"site_theta: theta_mode must be one of {THETA_MODES}, got {theta_mode!r}")


@dataclass
class LocalResult:
    """One site's LS outcome."""

    counts: np.ndarray  # unfloored optimum
    counts_floor: np.ndarray
    theta_s: float
    seconds: float


def solve_site(D_s: np.ndarray, eps: float, delta: float, theta_mode: str = "paper") -> LocalResult:
    """Solve one site's local program (its own columns only)."""
    th = site_theta(eps, delta, theta_mode)
    t0 = time.perf_counter()
    x = reference_solve(np.asarray(D_s, bool), th)
    return LocalResult(x, floor_counts(x), th, time.perf_counter() - t0)


def ls_solve(
    data: TxData, eps: float, delta: float, theta_mode: str = "paper"
) -> dict[str, object]:
    """LS for both sites; returns floored counts (A then B), per-site results and runtimes."""
    ra = solve_site(data.site("A"), eps, delta, theta_mode)
    rb = solve_site(data.site("B"), eps, delta, theta_mode)
    return {
        "counts": np.concatenate([ra.counts_floor, rb.counts_floor]),
        "counts_real": np.concatenate([ra.counts, rb.counts]),
        "A": ra,
        "B": rb,
        "seconds": ra.seconds + rb.seconds,
        "seconds_max_site": max(ra.seconds, rb.seconds),
    }


def sample_site(D_s: np.ndarray, counts_floor: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per item j, a uniform draw without replacement of floor(x_j) of the c_j containing rows."""
    D_s = np.asarray(D_s, bool)
    k = np.asarray(counts_floor)
    if k.shape != (D_s.shape[1],):
        raise ValueError(f"sample_site: counts shape {k.shape}, expected ({D_s.shape[1]},)")
    c = D_s.sum(axis=0)
    if (k < 0).any() or (k > c).any() or (k != np.floor(k)).any():
        raise ValueError("sample_site: counts must be integers in [0, c_j]")
    out = np.zeros_like(D_s)
    for j in range(D_s.shape[1]):
        rows = np.flatnonzero(D_s[:, j])
        out[rng.choice(rows, size=int(k[j]), replace=False), j] = True
    return out


def join_sites(
    ids_a: np.ndarray, O_a: np.ndarray, ids_b: np.ndarray, O_b: np.ndarray, drop_empty: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Join the two sites' sampled tables by transaction id, keeping D's id order."""
    ids_a, ids_b = np.asarray(ids_a), np.asarray(ids_b)
    if len(ids_a) != len(O_a) or len(ids_b) != len(O_b):
        raise ValueError("join_sites: ids and tables differ in length")
    pos = {int(t): i for i, t in enumerate(ids_b)}
    if len(pos) != len(ids_b) or any(int(t) not in pos for t in ids_a):
        raise ValueError("join_sites: the sites' transaction ids do not match")
    joined = np.concatenate([O_a, O_b[[pos[int(t)] for t in ids_a]]], axis=1)
    if drop_empty:
        keep = joined.any(axis=1)
        return ids_a[keep], joined[keep]
    return ids_a, joined
