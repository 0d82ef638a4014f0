"""The matrix-mechanism analyzer for range queries (survey section 6.4, [64, 67-68]).

Users' data Y = hist(X) over [d]; a query is w in {0,1}^d (ones on [j, j']). With a strategy
matrix M (rows = the values users report, e.g. the nodes of a tree), a frequency oracle returns
an unbiased estimate z of M Y with independent errors of variance v_r per row. The answer is
<w, Y-hat> with Y-hat the generalized least-squares estimate

    Y-hat = (M^T V^-1 M)^-1 M^T V^-1 z,   i.e.  <w, Y-hat> = <w M^+_V, z>,

which for a square invertible M is the survey's <w M^-1, M Y + noise>. ``gls_answer`` is the
dense form (any M with full column rank; O(d^3), for checking); ``tree_consistent_leaves`` is the
same estimator for the hierarchical M in linear time: a bottom-up pass combines every node's own
measurement with the sum of its children's subtree estimates by inverse-variance weighting, a
top-down pass spreads the parent's residual over the children in proportion to their variances
(Gaussian belief propagation on a tree; with equal variances it is Hay et al.'s constrained
inference). The root count, when known (the number of users), enters as a zero-variance row.
"""

from __future__ import annotations

import numpy as np


def gls_estimate(m: np.ndarray, variances: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Y-hat = (M^T V^-1 M)^-1 M^T V^-1 z (dense; M must have full column rank)."""
    mm = np.asarray(m, dtype=np.float64)
    w = 1.0 / np.asarray(variances, dtype=np.float64)
    a = mm.T @ (mm * w[:, None])
    b = mm.T @ (w * np.asarray(z, dtype=np.float64))
    return np.linalg.solve(a, b)


def gls_answer(
    m: np.ndarray, variances: np.ndarray, z: np.ndarray, queries: np.ndarray
) -> np.ndarray:
    """<w M^+_V, z> for every query row w of ``queries`` (dense reference)."""
    return np.asarray(queries, dtype=np.float64) @ gls_estimate(m, variances, z)


def tree_consistent_leaves(
    levels: list[np.ndarray], level_var: list[float], branching: int, root: float | None = None
) -> np.ndarray:
    """GLS leaf estimates from per-level node estimates of a complete ``branching``-ary tree.

    ``levels[l]`` holds the b^(l+1) node estimates of level l+1 (level 0 is the root) and
    ``level_var[l]`` their common variance; ``root`` is the exact total if known.
    """
    b = int(branching)
    depth = len(levels)
    z = [np.asarray(lv, dtype=np.float64) for lv in levels]
    s = [np.full(lv.shape, float(v)) for lv, v in zip(z, level_var)]
    for lv in range(depth):
        if z[lv].size != b ** (lv + 1):
            raise ValueError(f"tree: level {lv + 1} needs {b ** (lv + 1)} nodes, got {z[lv].size}")
    # bottom-up: subtree estimate of every node and its variance
    for lv in range(depth - 2, -1, -1):
        child_sum = z[lv + 1].reshape(-1, b).sum(axis=1)
        child_var = s[lv + 1].reshape(-1, b).sum(axis=1)
        wt = 1.0 / s[lv] + 1.0 / child_var
        z[lv] = (z[lv] / s[lv] + child_sum / child_var) / wt
        s[lv] = 1.0 / wt
    top_sum, top_var = z[0].sum(), s[0].sum()
    total = float(root) if root is not None else top_sum
    # top-down: distribute each parent's residual in proportion to the children's variances
    parent = np.array([total])
    parent_sub = np.array([top_sum])
    parent_var = np.array([top_var])
    for lv in range(depth):
        zc = z[lv].reshape(-1, b)
        sc = s[lv].reshape(-1, b)
        resid = (parent - parent_sub)[:, None]
        final = zc + resid * sc / parent_var[:, None]
        if lv + 1 < depth:
            parent = final.reshape(-1)
            parent_sub = z[lv + 1].reshape(-1, b).sum(axis=1)
            parent_var = s[lv + 1].reshape(-1, b).sum(axis=1)
        else:
            return final.reshape(-1)
    raise AssertionError("unreachable")


def range_answers(leaves: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Answers of [j, j'] queries (rows of an (q, 2) int array, inclusive) from leaf counts."""
    q = np.asarray(queries, dtype=np.int64)
    if q.ndim != 2 or q.shape[1] != 2 or (q.size and (q[:, 0] > q[:, 1]).any()):
        raise ValueError("range queries must be (q, 2) rows [j, j'] with j <= j'")
    c = np.concatenate([[0.0], np.cumsum(np.asarray(leaves, dtype=np.float64))])
    return c[q[:, 1] + 1] - c[q[:, 0]]
