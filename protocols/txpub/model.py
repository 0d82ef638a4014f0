"""The sampling model of seed 001: privacy parameter, per-transaction constraints, reference solver.

Problem (spec §2.4): maximise sum_j x_j subject to, for every transaction i,
``sum_j D[i,j] ln(1 - x_j / c_j) >= theta`` and ``0 <= x_j < c_j``, with
``theta(eps, delta) = max(-eps, ln(1 - delta))``.

The reference solver uses the convex y-form ``y_j = -ln(1 - x_j/c_j)``:
``max sum_j c_j (1 - exp(-y_j))  s.t.  D y <= -theta,  y >= 0`` (strictly concave objective, so
the optimum x is unique). Duplicate and dominated rows (subsets of another row) are redundant and
are removed before solving; that is safe for a centralized or local solver (spec §3.3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize


def theta(eps: float, delta: float) -> float:
    """theta(eps, delta) = max(-eps, ln(1 - delta)) (spec §2.3)."""
    if not (eps > 0 and np.isfinite(eps)):
        raise ValueError(f"theta: epsilon must be a positive finite number, got {eps!r}")
    if not (0 < delta < 1):
        raise ValueError(f"theta: delta must lie in (0, 1), got {delta!r}")
    return float(max(-eps, np.log1p(-delta)))


def composed_site_params(eps: float, delta: float) -> tuple[float, float]:
    """Per-site (eps_s, delta_s) whose two-site composition (Theorem 2) is (eps, delta)."""
    theta(eps, delta)  # validates
    return eps / 2.0, 1.0 - float(np.sqrt(1.0 - delta))


@dataclass
class TxData:
    """A 0/1 transaction table split vertically: site A owns columns [0, m1), site B the rest."""

    D: np.ndarray  # (n, m) bool
    m1: int
    ids: np.ndarray | None = None  # transaction ids (default 0..n-1)
    item_names: list[str] | None = None

    def __post_init__(self) -> None:
        D = np.asarray(self.D)
        if D.ndim != 2:
            raise ValueError(f"TxData: D must be 2-D, got shape {D.shape}")
        if D.dtype != bool:
            if not np.isin(D, (0, 1)).all():
                raise ValueError("TxData: D must be 0/1")
            D = D.astype(bool)
        self.D = D
        if not 0 <= self.m1 <= D.shape[1]:
            raise ValueError(f"TxData: m1={self.m1} outside [0, {D.shape[1]}]")
        if self.ids is None:
            self.ids = np.arange(D.shape[0], dtype=np.int64)
        elif len(self.ids) != D.shape[0]:
            raise ValueError("TxData: ids length does not match the number of transactions")

    @property
    def n(self) -> int:
        return int(self.D.shape[0])

    @property
    def m(self) -> int:
        return int(self.D.shape[1])

    @property
    def counts(self) -> np.ndarray:
        """Support counts c_j (int64)."""
        return self.D.sum(axis=0).astype(np.int64)

    def site(self, s: str) -> np.ndarray:
        """Columns of site ``'A'`` or ``'B'``."""
        if s == "A":
            return self.D[:, : self.m1]
        if s == "B":
            return self.D[:, self.m1 :]
        raise ValueError(f"TxData.site: site must be 'A' or 'B', got {s!r}")

    def avg_len(self, s: str | None = None) -> float:
        """Average transaction length overall or at one site."""
        M = self.D if s is None else self.site(s)
        return float(M.sum() / max(self.n, 1))


def reduce_rows(D: np.ndarray) -> np.ndarray:
    """Unique maximal rows of a 0/1 matrix (duplicates, empty rows and subsets removed)."""
    D = np.asarray(D, dtype=bool)
    if D.shape[1] == 0:
        return D[:0]
    packed = np.packbits(D, axis=1)
    uniq, idx = np.unique(packed, axis=0, return_index=True)
    R = D[np.sort(idx)]
    R = R[R.any(axis=1)]
    if R.shape[1] > 64 or len(R) < 2:
        return R
    w = (1 << np.arange(R.shape[1], dtype=np.uint64)).astype(np.uint64)
    bits = (R.astype(np.uint64) * w).sum(axis=1, dtype=np.uint64)
    order = np.argsort(-R.sum(axis=1), kind="stable")
    bits, R = bits[order], R[order]
    keep = np.ones(len(R), dtype=bool)
    chunk = 1024
    for s in range(0, len(R), chunk):
        b = bits[s : s + chunk, None]
        # row r dominated if some other row q (with q != r) has r & q == r
        sub = (b & bits[None, :]) == b
        sub &= b != bits[None, :]
        keep[s : s + chunk] = ~sub.any(axis=1)
    return R[keep]


def x_from_y(y: np.ndarray, C: np.ndarray) -> np.ndarray:
    """x = c (1 - exp(-y))."""
    return C * -np.expm1(-y)


def y_from_x(x: np.ndarray, C: np.ndarray) -> np.ndarray:
    """y = -ln(1 - x/c) (0 where c = 0)."""
    out = np.zeros_like(np.asarray(x, dtype=float))
    pos = C > 0
    out[pos] = -np.log1p(-x[pos] / C[pos])
    return out


def reference_solve(
    D: np.ndarray,
    th: float,
    C: np.ndarray | None = None,
    tol: float = 1e-13,
    maxiter: int = 2000,
    chunk: int = 200,
) -> np.ndarray:
    """Centralized optimum x of problem (5) via the y-form, SLSQP plus an active-set polish.

    SLSQP runs on a working set of (reduced) rows, grown by the ``chunk`` most violated rows
    until all rows hold (constraint generation; the result is the optimum of the full problem).

    Items with c_j = 0 get x_j = 0. Returns the unique optimal x (float, not floored).
    """
    D = np.asarray(D, dtype=bool)
    if not th < 0:
        raise ValueError(f"reference_solve: theta must be negative, got {th}")
    C = D.sum(axis=0).astype(float) if C is None else np.asarray(C, dtype=float)
    if C.shape != (D.shape[1],):
        raise ValueError(f"reference_solve: C has shape {C.shape}, expected ({D.shape[1]},)")
    x = np.zeros(D.shape[1])
    live = np.flatnonzero(C > 0)
    if len(live) == 0:
        return x
    R = reduce_rows(D[:, live]).astype(float)
    c = C[live]
    b = -th
    if len(R) == 0:
        raise ValueError(
            "reference_solve: unconstrained items (every live item needs a transaction)"
        )
    y0 = np.full(len(live), 0.5 * b / R.sum(axis=1).max())
    # constraint generation: solve on a working set of rows, add the most violated rows, repeat
    # (exact: stops only when every row of R holds to 1e-12 relative)
    work = np.argsort(-R.sum(axis=1), kind="stable")[:chunk]
    cs = c / (c.sum() * b)  # objective O(1) for SLSQP (it solves in z = y / b)
    for _ in range(200):
        Rw = R[work]
        load = float((Rw @ y0).max())
        if load > b:  # feasible start for the working set (scale towards y = 0)
            y0 = y0 * (b / load)
        y0 = _solve_working_set(Rw, cs, b, y0, tol, maxiter)
        viol = R @ y0 - b
        bad = np.setdiff1d(np.flatnonzero(viol > 1e-12 * b), work)
        if len(bad) == 0:
            if viol.max() > 1e-9 * b:
                raise RuntimeError("reference_solve: working-set solve left violated rows")
            break
        work = np.union1d(work, bad[np.argsort(-viol[bad])][:chunk])
    y = _polish(y0, R, c, b)
    x[live] = x_from_y(y, c)
    return x


def _solve_working_set(
    Rw: np.ndarray, cs: np.ndarray, b: float, y0: np.ndarray, tol: float, maxiter: int
) -> np.ndarray:
    """max sum cs (1 - e^-y) s.t. Rw y <= b, y >= 0: SLSQP, falling back to trust-constr.

    Solved in z = y / b (constraints Rw z <= 1): for small |theta| SLSQP otherwise stops far
    from the optimum (measured: e^eps = 1.01, 20,000 x 50, objective 1e-3 below the optimum).
    """

    def f(z):
        return -np.sum(cs * -np.expm1(-b * z))

    def jac(z):
        return -cs * b * np.exp(-b * z)

    z0 = y0 / b
    res = optimize.minimize(
        f,
        z0,
        jac=jac,
        method="SLSQP",
        bounds=[(0.0, None)] * len(cs),
        constraints=[{"type": "ineq", "fun": lambda z: 1.0 - Rw @ z, "jac": lambda z: -Rw}],
        options={"ftol": tol, "maxiter": maxiter},
    )
    z = np.maximum(res.x, 0.0)
    if res.success and (Rw @ z - 1.0).max() <= 1e-9:
        return z * b
    res = optimize.minimize(
        f,
        z0,
        jac=jac,
        hess=lambda z: np.diag(cs * b * b * np.exp(-b * z)),
        method="trust-constr",
        bounds=optimize.Bounds(0.0, np.inf),
        constraints=[optimize.LinearConstraint(Rw, -np.inf, 1.0)],
        options={"gtol": 1e-13, "xtol": 1e-15, "maxiter": 5000},
    )
    return np.maximum(res.x, 0.0) * b


def _polish(y: np.ndarray, R: np.ndarray, c: np.ndarray, b: float) -> np.ndarray:
    """Newton polish on the active set found by SLSQP (keeps y if the polish is not better)."""
    for _ in range(5):
        slack = b - R @ y
        act = np.flatnonzero(slack < 1e-7 * max(b, 1e-300))
        free = y > 1e-8 * max(y.max(), 1e-300)
        if len(act) == 0:
            return y
        # rows equal on the free coordinates are one constraint (at tight theta thousands of
        # rows can be active on a single free item)
        A = np.unique(R[np.ix_(act, free)], axis=0)
        # Newton-KKT for max sum c(1-e^-y) on free coords s.t. A y_free = b:
        # H d + A^T lam = g, A d = r, by the Schur complement (A H^-1 A^T) lam = A H^-1 g - r
        # (a least-squares solve if A is rank-deficient); more accurate than the full KKT lstsq
        yf = y[free]
        H = c[free] * np.exp(-yf)  # minus Hessian diagonal of the objective
        g = c[free] * np.exp(-yf)
        r = b - A @ yf
        AH = A / H[None, :]
        lam, *_ = np.linalg.lstsq(AH @ A.T, AH @ g - r, rcond=1e-13)
        d = (g - A.T @ lam) / H
        ynew = np.zeros_like(y)
        ynew[free] = yf + d
        if (
            (ynew < -1e-12).any()
            or (b - R @ ynew < -1e-12 * max(b, 1)).any()
            or (lam < -1e-9).any()
        ):
            return y
        y = np.maximum(ynew, 0.0)
        if np.abs(d).max() < 1e-15:
            break
    return y


def constraint_sums(D: np.ndarray, x: np.ndarray, C: np.ndarray) -> np.ndarray:
    """s_i = sum_j D[i,j] ln(1 - x_j/c_j) per transaction (-inf if some x_j >= c_j)."""
    C = np.asarray(C, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.where(C > 0, np.log1p(-np.where(C > 0, x / np.where(C > 0, C, 1), 0.0)), 0.0)
    lg = np.where(np.isnan(lg), -np.inf, lg)
    return np.asarray(D, dtype=float) @ np.where(np.isinf(lg), -1e300, lg)


@dataclass
class Feasibility:
    """Result of ``check_feasible``."""

    ok: bool
    worst_sum: float  # min_i s_i (must be >= theta)
    max_inclusion: float  # max_i 1 - prod(1 - x/c) (must be <= delta)
    max_ratio: float  # max_i 1 / prod(1 - x/c) (must be <= e^eps)
    bounds_ok: bool

    def as_dict(self) -> dict[str, float | bool]:
        return dict(self.__dict__)


def check_feasible(
    D: np.ndarray,
    x: np.ndarray,
    eps: float,
    delta: float,
    C: np.ndarray | None = None,
    tol: float = 1e-9,
) -> Feasibility:
    """Check published counts x against every transaction's (eps, delta) constraint (spec §7.1.5)."""
    D = np.asarray(D, dtype=bool)
    C = D.sum(axis=0) if C is None else np.asarray(C)
    x = np.asarray(x, dtype=float)
    if x.shape != C.shape:
        raise ValueError(f"check_feasible: x has shape {x.shape}, expected {C.shape}")
    bounds_ok = bool((x >= 0).all() and (x <= C).all() and (x[C == 0] == 0).all())
    s = constraint_sums(D, np.minimum(x, C), C)
    worst = float(s.min()) if len(s) else 0.0
    prod_min = float(np.exp(worst))
    incl = 1.0 - prod_min
    ratio = np.inf if prod_min == 0 else 1.0 / prod_min
    ok = bounds_ok and incl <= delta + tol and ratio <= np.exp(eps) * (1 + tol)
    return Feasibility(bool(ok), worst, incl, float(ratio), bounds_ok)


def utility_bound(th: float, avg_len: float) -> float:
    """Upper bound on the output-size ratio: -theta / average transaction length (spec §2.4)."""
    if avg_len <= 0:
        raise ValueError("utility_bound: average length must be positive")
    return -th / avg_len


def floor_counts(x: np.ndarray) -> np.ndarray:
    """Published counts: floor(max(x, 0)) (solver round-off below 0 must not become -1)."""
    return np.floor(np.maximum(np.asarray(x, dtype=float), 0.0))
