"""GS: Levenberg-Marquardt on the KKT system of problem (5) (spec §3.2), structured for two sites.

Unknowns z = (X, W): X the per-item variable, W the per-transaction multipliers; G = D diag(beta)
(n x m, private per site by columns); s = sum_j D_ij ln(1 - x_j/c_j); b = s - theta.
Two parametrizations of the item variable (``form``):
* ``"x"``: X = counts x (the paper's unknowns), beta_j = 1/(X_j - C_j);
* ``"v"`` (default): X = v = -c ln(1 - x/c) (a count-like variable, v ~ x for small x), for which
  the constraints are linear, beta_j = -1/c_j, and no domain safeguard X < C is needed.
Modes:
* ``"paper"``: F = [h; l] with h = h0 + G^T w (eq. 8; h0 = 1 in form x) and l = w * b (eq. 9);
* ``"fb"`` (default): Fischer-Burmeister, k = phi(X, -h) for the bound X >= 0 (its multiplier
  u = -h is eliminated, same KKT system as the spec's [O] fix) and l = phi(w, b).
A Jacobian row block is [diag(kappa), diag(tau) G^T] for items and [diag(p) G, diag(a)] for
transactions; the exact LM step uses 4 weighted Grams Gamma(c) = G^T diag(c) G, G^T of 2 public
vectors, G of 3 m-vectors and (G o G) tau^2 -- an *oracle*. ``PlainOracle`` computes them in the
clear; the secure two-site oracle (``parties.txpub.gs_sites``) computes the A x B blocks of Gamma
with Paillier. Always run ``kkt_check``: paper mode converges to spurious roots (w < 0, g > 0).
This module is the LM core (residual, damped step, one LM run); the GS driver ``gs_solve`` and
the KKT checks are in :mod:`protocols.txpub.global_solution`, which also dispatches FB mode to
the globalization of :mod:`protocols.txpub.globalize` (that imports this module).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

MODES = ("fb", "paper")


# ----------------------------------------------------------------------------- FB function
def fb(a: np.ndarray, b: np.ndarray, nu: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fischer-Burmeister phi(a,b) = a + b - sqrt(a^2 + b^2 + 2 nu) and its partials.

    ``nu > 0`` is the smoothed FB function (its root is a, b > 0 with a b = nu); at the kink of
    the plain function the generalized derivative 1 - 1/sqrt(2) is used.
    """
    r = np.sqrt(a * a + b * b + 2.0 * nu)
    zero = r == 0
    rs = np.where(zero, 1.0, r)
    phi = a + b - r
    da = np.where(zero, 1.0 - 1.0 / np.sqrt(2.0), 1.0 - a / rs)
    db = np.where(zero, 1.0 - 1.0 / np.sqrt(2.0), 1.0 - b / rs)
    return phi, da, db


# ----------------------------------------------------------------------------- oracle
FORMS = ("x", "v")


def log_terms(X: np.ndarray, C: np.ndarray, form: str) -> np.ndarray:
    """Per-item ln(1 - x_j/c_j): from counts (form 'x') or from v = -c ln(1 - x/c) (form 'v')."""
    return np.log1p(-X / C) if form == "x" else -X / C


def item_terms(
    dw: np.ndarray, X: np.ndarray, C: np.ndarray, form: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(G^T w, eta, h0) per item from dw = D^T w: h_j = h0_j + (G^T w)_j (+ u_j), eta = dh/dX."""
    if form == "x":
        beta = 1.0 / (X - C)
        return beta * dw, -(beta**2) * dw, np.ones_like(X)
    e = np.exp(-X / C)
    return -dw / C, -e / C, e


class Oracle(Protocol):
    """What the LM solver needs from the data (all methods refer to the last ``set_point``)."""

    n: int
    m: int

    async def set_point(
        self, X: np.ndarray, W: np.ndarray, U: np.ndarray | None, iteration: int, trial: bool
    ) -> bool:
        """Publish the iterate; returns False if some X_j >= C_j (domain violation)."""

    async def sums(self) -> np.ndarray:
        """s (n) at the current point."""

    async def item_stats(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(G^T w, eta, h0) per item, see ``item_terms``."""

    async def gram(self, weights: np.ndarray) -> np.ndarray:
        """Gamma(c) for each row c of ``weights`` (r, n) -> (r, m, m)."""

    async def gt(self, V: np.ndarray) -> np.ndarray:
        """G^T V for V (n, r) -> (m, r)."""

    async def gapply(self, M: np.ndarray) -> np.ndarray:
        """G M for M (m, r) -> (n, r)."""

    async def gsq(self, v: np.ndarray) -> np.ndarray:
        """(G o G) v for v (m) -> (n): row sums of squared, weighted G (Marquardt scaling)."""


class PlainOracle:
    """All data in one place (plaintext GS, 'simulated parties'); ``form`` 'x' or 'v' (see top)."""

    def __init__(self, D: np.ndarray, C: np.ndarray | None = None, form: str = "v") -> None:
        if form not in FORMS:
            raise ValueError(f"PlainOracle: form must be one of {FORMS}, got {form!r}")
        self.form = form
        self.D = np.asarray(D, dtype=bool)
        self.Df = self.D.astype(float)
        self.n, self.m = self.D.shape
        self.C = self.D.sum(axis=0).astype(float) if C is None else np.asarray(C, float)
        if (self.C <= 0).any():
            raise ValueError("PlainOracle: every item needs a positive support count")
        self.calls: dict[str, int] = {}

    def _count(self, k: str) -> None:
        self.calls[k] = self.calls.get(k, 0) + 1

    async def set_point(self, X, W, U, iteration, trial):  # noqa: D102
        if self.form == "x" and (X >= self.C).any():
            return False
        self.X, self.W = X, W
        self.beta = 1.0 / (X - self.C) if self.form == "x" else -1.0 / self.C
        return True

    async def sums(self):  # noqa: D102
        return self.Df @ log_terms(self.X, self.C, self.form)

    async def item_stats(self):  # noqa: D102
        return item_terms(self.Df.T @ self.W, self.X, self.C, self.form)

    def to_counts(self, X: np.ndarray) -> np.ndarray:
        """Counts x from the LM variable."""
        return X if self.form == "x" else self.C * -np.expm1(-X / self.C)

    async def gram(self, weights):  # noqa: D102
        self._count("gram")
        out = np.stack([(self.Df * w[:, None]).T @ self.Df for w in weights])
        return out * np.outer(self.beta, self.beta)[None]

    async def gt(self, V):  # noqa: D102
        return self.beta[:, None] * (self.Df.T @ V)

    async def gapply(self, M):  # noqa: D102
        return self.Df @ (self.beta[:, None] * M)

    async def gsq(self, v):  # noqa: D102
        return self.Df @ (self.beta**2 * v)


# ----------------------------------------------------------------------------- residual
@dataclass
class _Point:
    X: np.ndarray
    W: np.ndarray
    U: np.ndarray | None
    s: np.ndarray
    Gtw: np.ndarray
    eta: np.ndarray
    h0: np.ndarray
    F: np.ndarray  # full residual (concatenated)
    parts: dict[str, np.ndarray]


def residual(X, W, U, s, Gtw, th, mode, nu=0.0, h0=1.0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Residual F = [item rows; transaction rows] and the coefficients of J.

    Item rows: paper mode h = h0 + G^T w (kappa = eta, tau = 1); FB mode k = phi(X, -h)
    (kappa = psa - psb eta, tau = -psb). Transaction rows: l = w b (paper) or phi(w, b) (FB),
    with dl/dw = a and dl/ds = p. ``U`` is unused (bound multipliers are eliminated).
    """
    b = s - th
    h = h0 + Gtw
    if mode == "paper":
        parts = {"r": h, "l": W * b, "a": b, "p": W.copy(), "tau": np.ones_like(h), "h": h}
        return np.concatenate([h, W * b]), parts
    k, psa, psb = fb(X, -h, nu)
    lt, a, p = fb(W, b, nu)
    with np.errstate(divide="ignore"):
        dl = np.where(nu > 0, -1.0 / np.sqrt(W * W + b * b + 2 * nu), 0.0)
        dk = np.where(nu > 0, -1.0 / np.sqrt(X * X + h * h + 2 * nu), 0.0)
    parts = {
        "r": k,
        "l": lt,
        "a": a,
        "p": p,
        "psa": psa,
        "psb": psb,
        "tau": -psb,
        "dl": dl,
        "dk": dk,
        "h": h,
    }
    return np.concatenate([k, lt]), parts


async def _evaluate(oracle: Oracle, X, W, U, th, mode, iteration, trial, nu=0.0) -> _Point | None:
    if not await oracle.set_point(X, W, U, iteration, trial):
        return None
    s = await oracle.sums()
    Gtw, eta, h0 = await oracle.item_stats()
    F, parts = residual(X, W, U, s, Gtw, th, mode, nu, h0)
    return _Point(X, W, U, s, Gtw, eta, h0, F, parts)


# ----------------------------------------------------------------------------- step
def _kappa(pt: _Point, mode: str) -> np.ndarray:
    P = pt.parts
    return pt.eta if mode == "paper" else P["psa"] - P["psb"] * pt.eta


async def lm_step(
    oracle: Oracle, pt: _Point, alpha: float, mode: str
) -> tuple[np.ndarray, np.ndarray, float]:
    """Exact LM step (dX, dW) at ``pt`` and the predicted decrease of ||F||^2 / 2.

    J = [[diag(kappa), diag(tau) G^T], [diag(p) G, diag(a)]]; the W block of J^T J + alpha I is
    Lambda + G T^2 G^T (Lambda = a^2 + alpha), inverted with Woodbury, then a Schur complement
    on X. Needs 4 weighted Grams, 2 G^T products and one G product with 3 columns.
    """
    P = pt.parts
    m = len(pt.X)
    r_it, lt, a, p, tau = P["r"], P["l"], P["a"], P["p"], P["tau"]
    kap = _kappa(pt, mode)
    # Marquardt scaling: damping alpha * diag(J^T J) (floored); W part needs (G o G) tau^2
    dWs = a * a + await oracle.gsq(tau * tau)
    dWs = np.maximum(dWs, 1e-12 * max(float(dWs.max()), 1e-300))
    lam = a * a + alpha * dWs
    ap = a * p
    G1, G2, G3, Gp = await oracle.gram(np.stack([1.0 / lam, ap / lam, ap * ap / lam, p * p]))
    dXs = np.maximum(kap**2 + np.diag(Gp), 1e-12 * max(float((kap**2 + np.diag(Gp)).max()), 1e-300))
    gts = await oracle.gt(np.stack([p * lt, a * lt / lam, ap * a * lt / lam], axis=1))
    gpl, gal, gapl = gts[:, 0], gts[:, 1], gts[:, 2]
    Im = np.eye(m)
    m1 = kap * tau  # M1 = diag(kappa tau), M2 = I
    ghat = tau * r_it
    Nyy = np.diag(kap**2 + alpha * dXs) + Gp
    gY = kap * r_it + gpl
    K = tau[:, None] * np.linalg.solve(Im + tau[:, None] * G1 * tau[None, :], np.diag(tau))
    Zm = m1[:, None] * G1 + G2
    Schur = Nyy - (m1[:, None] * G1 * m1[None, :] + m1[:, None] * G2 + G2 * m1[None, :] + G3)
    Schur += Zm @ K @ Zm.T
    Schur = 0.5 * (Schur + Schur.T)
    q1 = G1 @ ghat + gal
    q2 = G2 @ ghat + gapl
    rhs = -gY + m1 * q1 + q2 - Zm @ (K @ q1)
    dX = np.linalg.solve(Schur, rhs)
    rr = -gal - G1 @ (ghat + m1 * dX) - G2 @ dX
    Gv = await oracle.gapply(np.stack([ghat + m1 * dX + K @ rr, dX, ghat], axis=1))
    dW = (-a * lt - Gv[:, 0] - ap * Gv[:, 1]) / lam
    gW = Gv[:, 2] + a * lt
    g_dot_d = float(dW @ gW + dX @ gY)
    pred = 0.5 * (alpha * float(dW @ (dWs * dW) + dX @ (dXs * dX)) - g_dot_d)
    return dX, dW, pred


# ----------------------------------------------------------------------------- solver
@dataclass
class LMResult:
    """Outcome of ``lm_solve``."""

    X: np.ndarray
    W: np.ndarray
    U: np.ndarray | None
    converged: bool
    iterations: int
    residual_inf: float
    history: list[dict[str, Any]] = field(default_factory=list)
    mode: str = "fb"

    def summary(self) -> dict[str, Any]:
        """Short JSON-able summary."""
        return {
            "mode": self.mode,
            "converged": self.converged,
            "iterations": self.iterations,
            "residual_inf": self.residual_inf,
            "sum_x": float(self.X.sum()),
        }


def start_point(n: int, m: int, mode: str) -> tuple[np.ndarray, np.ndarray, None]:
    """Public, data-independent start: X = 0, W = 0 -- reveals nothing."""
    return np.zeros(m), np.zeros(n), None


def _refresh(pt: _Point, th: float, mode: str, nu: float) -> _Point:
    """Recompute the residual of ``pt`` for a new smoothing parameter (no oracle call)."""
    F, parts = residual(pt.X, pt.W, pt.U, pt.s, pt.Gtw, th, mode, nu, pt.h0)
    return _Point(pt.X, pt.W, pt.U, pt.s, pt.Gtw, pt.eta, pt.h0, F, parts)


async def lm_solve(
    oracle: Oracle,
    th: float,
    mode: str = "fb",
    nu: float = 0.0,
    tol: float = 1e-10,
    max_iter: int = 200,
    mu0: float = 1e-2,
    mu_min: float = 1e-10,
    max_halvings: int = 40,
    start: tuple | None = None,
    on_iter: Any = None,
    iter_offset: int = 0,
) -> LMResult:
    """Levenberg-Marquardt on F_nu(z) = 0 (nu > 0 only in FB mode: smoothed FB function).

    Damping: alpha_k = mu_k ||F_k|| times diag(J^T J) (Marquardt scaling); mu /= 4 (floor
    ``mu_min``) after a full step, mu *= 4 after a shortened step or a failed iteration.
    Safeguards: a trial must keep X_j < C_j (form 'x'; checked by the owning site) and decrease
    ||F_nu||^2, else the step is halved (at most ``max_halvings`` times).
    Stop when ||F_nu||_inf < ``tol`` or after ``max_iter`` iterations.
    """
    if mode not in MODES:
        raise ValueError(f"lm_solve: mode must be one of {MODES}, got {mode!r}")
    if not th < 0:
        raise ValueError(f"lm_solve: theta must be negative, got {th}")
    if nu < 0 or (nu > 0 and mode != "fb"):
        raise ValueError(f"lm_solve: nu must be 0, or positive in FB mode; got {nu}")
    X, W, U = start if start is not None else start_point(oracle.n, oracle.m, mode)
    pt = await _evaluate(oracle, X, W, U, th, mode, iter_offset, False, nu)
    if pt is None:
        raise ValueError("lm_solve: start point outside the domain X < C")
    phi = float(pt.F @ pt.F)
    mu = mu0
    history: list[dict[str, Any]] = []
    it = 0
    res_inf = float(np.abs(pt.F).max())
    converged = res_inf < tol
    while not converged and it < max_iter:
        it += 1
        t0 = time.perf_counter()
        begin = getattr(oracle, "begin_iteration", None)
        if begin is not None:  # lets a networked oracle attribute costs to this iteration
            begin(iter_offset + it)
        alpha = mu * np.sqrt(phi)
        dX, dW, _ = await lm_step(oracle, pt, alpha, mode)
        t_step = 1.0
        accepted = False
        for _ in range(max_halvings + 1):
            new = await _evaluate(
                oracle,
                pt.X + t_step * dX,
                pt.W + t_step * dW,
                None,
                th,
                mode,
                iter_offset + it,
                True,
                nu,
            )
            if new is not None and float(new.F @ new.F) < phi:
                accepted = True
                break
            t_step *= 0.5
        if accepted:
            pt, phi = new, float(new.F @ new.F)
            mu = max(mu / 4.0, mu_min) if t_step == 1.0 else mu * 4.0
        else:
            mu *= 4.0
            await oracle.set_point(pt.X, pt.W, None, iter_offset + it, False)
        res_inf = float(np.abs(pt.F).max())
        rec = {
            "iter": iter_offset + it,
            "alpha": float(alpha),
            "nu": nu,
            "step": t_step if accepted else 0.0,
            "residual_inf": res_inf,
            "seconds": time.perf_counter() - t0,
        }
        history.append(rec)
        if on_iter is not None:
            on_iter(rec)
        converged = res_inf < tol
        if not accepted and mu > 1e30:
            break
    return LMResult(pt.X, pt.W, None, converged, it, res_inf, history, mode)
