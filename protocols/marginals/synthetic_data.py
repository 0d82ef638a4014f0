"""Synthetic records from published marginals (Calm, Zhang et al. CCS 2018, Sec. 6; seed 000
spec Sec. 8.2).

Calm samples synthetic records from the maximum-entropy distribution consistent with the
published (post-processed) w-way marginals. Two generators:

* ``joint`` (exact, used when the full domain has at most ``max_joint_cells`` cells, e.g. the
  6-attribute learning subset of the SGD experiment, which is why the paper restricts it to a
  subset of attributes): iterative proportional fitting of the full contingency table to every
  published marginal, then n i.i.d. records drawn from it;
* ``sequential`` (any d): attributes are generated marginal by marginal; each step picks the
  published marginal with the largest overlap with the attributes generated so far and draws its
  new attributes from the conditional distribution given the overlap (the maximum-entropy
  completion along a chain of marginals). Vectorised per conditioning cell.

Output: an int64 ``(n, d)`` matrix in the published domains; :func:`write_csv` writes it with a
header of attribute names.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from protocols.marginals.calm import AttrSet, marginal_table, maxent_table

METHODS = ("auto", "joint", "sequential")


def _check(tables: list[np.ndarray], sets: Sequence[AttrSet], domain_sizes: Sequence[int]) -> None:
    if len(tables) != len(sets) or not sets:
        raise ValueError(f"synthesize: {len(tables)} tables for {len(sets)} attribute sets")
    covered = set().union(*map(set, sets))
    if covered != set(range(len(domain_sizes))):
        missing = sorted(set(range(len(domain_sizes))) - covered)
        raise ValueError(f"synthesize: attributes {missing} are in no published marginal")
    for t, s in zip(tables, sets, strict=True):
        if t.shape != tuple(domain_sizes[a] for a in s):
            raise ValueError(f"synthesize: table for {s} has shape {t.shape}")


def _draw(p: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` indices from the (unnormalised, non-negative) weights p."""
    w = np.maximum(np.asarray(p, dtype=np.float64).ravel(), 0.0)
    tot = w.sum()
    w = w / tot if tot > 0 else np.full(w.size, 1.0 / w.size)
    return np.minimum(np.searchsorted(np.cumsum(w), rng.random(size), side="right"), w.size - 1)


def synthesize_joint(
    tables: list[np.ndarray],
    sets: Sequence[AttrSet],
    domain_sizes: Sequence[int],
    n: int,
    rng: np.random.Generator,
    iterations: int = 50,
) -> np.ndarray:
    """n records from the max-entropy joint table fitted to the marginals (IPF)."""
    d = len(domain_sizes)
    joint = maxent_table(
        list(zip(sets, tables, strict=True)), tuple(range(d)), domain_sizes, iterations
    )
    cells = _draw(joint, n, rng)
    return np.stack(np.unravel_index(cells, tuple(domain_sizes)), axis=1).astype(np.int64)


def synthesize_sequential(
    tables: list[np.ndarray],
    sets: Sequence[AttrSet],
    domain_sizes: Sequence[int],
    n: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """n records generated marginal by marginal, conditioning on the largest overlap."""
    d = len(domain_sizes)
    out = np.zeros((n, d), dtype=np.int64)
    done: set[int] = set()
    remaining = list(range(len(sets)))
    while len(done) < d:
        # marginal bringing new attributes with the largest overlap (then the most new ones)
        best = max(
            (i for i in remaining if set(sets[i]) - done),
            key=lambda i: (len(set(sets[i]) & done), len(set(sets[i]) - done)),
        )
        remaining.remove(best)
        s, t = sets[best], tables[best]
        cond = tuple(a for a in s if a in done)
        new = tuple(a for a in s if a not in done)
        # table reordered to (cond..., new...) and flattened to (cond cells, new cells)
        order = [s.index(a) for a in cond + new]
        tab = np.transpose(t, order).reshape(
            math.prod(domain_sizes[a] for a in cond), math.prod(domain_sizes[a] for a in new)
        )
        new_marg = tab.sum(axis=0)
        if cond:
            ci = np.ravel_multi_index(
                tuple(out[:, a] for a in cond), [domain_sizes[a] for a in cond]
            )
        else:
            ci = np.zeros(n, dtype=np.int64)
        draws = np.empty(n, dtype=np.int64)
        idx = np.argsort(ci, kind="stable")
        uniq, starts = np.unique(ci[idx], return_index=True)
        bounds = np.append(starts, n)
        for u, a, b in zip(uniq, bounds[:-1], bounds[1:], strict=True):
            row = tab[u] if tab[u].sum() > 0 else new_marg
            draws[idx[a:b]] = _draw(row, b - a, rng)
        vals = np.unravel_index(draws, [domain_sizes[a] for a in new])
        for a, v in zip(new, vals, strict=True):
            out[:, a] = v
        done |= set(new)
    return out


def synthesize(
    tables: list[np.ndarray],
    sets: Sequence[AttrSet],
    domain_sizes: Sequence[int],
    n: int,
    rng: np.random.Generator,
    method: str = "auto",
    max_joint_cells: int = 2_000_000,
) -> np.ndarray:
    """Synthetic records from published marginals (``auto``: joint when the domain is small)."""
    if method not in METHODS:
        raise ValueError(f"synthesize: method must be one of {METHODS}, got {method!r}")
    if n < 1:
        raise ValueError(f"synthesize: n must be >= 1, got {n}")
    tabs = [np.asarray(t, dtype=np.float64) for t in tables]
    sets = [tuple(s) for s in sets]
    _check(tabs, sets, domain_sizes)
    full = math.prod(domain_sizes)
    if method == "joint" or (method == "auto" and full <= max_joint_cells):
        if full > 50 * max_joint_cells:
            raise ValueError(f"synthesize: joint domain of {full} cells is too large")
        return synthesize_joint(tabs, sets, domain_sizes, n, rng)
    return synthesize_sequential(tabs, sets, domain_sizes, n, rng)


def marginal_fit(
    records: np.ndarray,
    tables: list[np.ndarray],
    sets: Sequence[AttrSet],
    domain_sizes: Sequence[int],
) -> float:
    """Mean SSE between the records' marginals and the published ones (a generator check)."""

    return float(
        np.mean(
            [
                np.sum((marginal_table(records, domain_sizes, s) - t) ** 2)
                for t, s in zip(tables, sets, strict=True)
            ]
        )
    )


def write_csv(path: str | Path, records: np.ndarray, attributes: Sequence[str]) -> Path:
    """Write records as CSV with a header of attribute names (values are domain codes)."""
    x = np.asarray(records, dtype=np.int64)
    if x.ndim != 2 or x.shape[1] != len(attributes):
        raise ValueError(f"write_csv: records of shape {x.shape} for {len(attributes)} attributes")
    p = Path(path)
    with p.open("w") as fh:
        fh.write(",".join(attributes) + "\n")
        np.savetxt(fh, x, fmt="%d", delimiter=",")
    return p


__all__ = ["synthesize", "synthesize_joint", "synthesize_sequential", "write_csv", "marginal_fit"]
