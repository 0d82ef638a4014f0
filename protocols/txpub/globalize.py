"""Globalisation of the FB-mode GS: undamped (alpha = 0) steps by row elimination, Armijo search.

Why (measured on T10I4D100K, 20,000 x 50): the damped step of ``global_solution.lm_step``
eliminates the n x n multiplier block with Woodbury, dividing by lambda_i = a_i^2 + alpha s_i
where a_i = d phi / d w_i -> 0 on active transactions (w_i >> b_i). It is accurate only while the
damping stays large (relative error 64 against a dense solve at alpha = 7e-11, n = 2,000), so
the old schedule kept alpha ~ 1e-3..1 times diag(J^T J): short, gradient-like steps, halved on
most iterations, and an iteration count growing with n (3,000 iterations did not converge).

The fix keeps the KKT system, the oracle and the smoothing continuation, and changes how a step
is obtained:
* ``newton_step``: the LM step with alpha = 0 (for the square J it is the Newton step) by
  eliminating each transaction row, dW_i = -(l_i + p_i (G dX)_i) / a_i, into an m x m system
  (diag(kappa) - diag(tau) Gamma(p/a)) dX = -k + tau G^T(l/a) -- the normal-equation form of
  interior-point methods, whose large weights p/a on active rows are benign (relative error
  < 1e-5 against a dense solve along the whole trajectory). Oracle calls: one weighted Gram
  with a single non-negative weight vector (the damped step needs four, some signed), and
  G^T / G products with public vectors, i.e. the same kinds of quantities as before.
* Armijo line search on the merit Psi = ||F_nu||^2 / 2, which is C^1 for the FB function:
  accept t when Psi(z + t d) <= Psi(z) + sigma t F.(J d).
* If the undamped step is not a good descent direction (singular system, F.(J d) > -rho ||F||^2)
  or its search fails, the damped Marquardt step of ``lm_step`` is used instead, with
  alpha = mu ||F|| and the old mu schedule.
* Continuation: nu0, nu0 f, nu0 f^2, ... (nu is tightened when ||F_nu||_inf < nu_tol nu, or
  after ``stage_iter`` iterations), then nu = 0; stop when the *unsmoothed* ||F_0||_inf < tol.
  Measured at 20,000 x 50 (T10I4D100K | synthetic): 55 | 64 iterations with the defaults
  (nu0 0.1, f 0.01, nu_tol 0.1); 48-73 | 58-67 over nu0 in [0.01, 1], f in [1e-4, 0.1],
  nu_tol in [0.1, 10]; without smoothing (nu0 = 0) 215 | 306. The Armijo search shortens the
  step mostly in the first iterations after nu is tightened.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from protocols.txpub import lm as gsol


async def newton_step(
    oracle: gsol.Oracle, pt: Any, a_floor: float = 1e-10
) -> tuple[np.ndarray, np.ndarray, float]:
    """Undamped step (dX, dW) at ``pt`` (FB mode) and the directional derivative F.(J d).

    ``a_floor`` bounds a_i below so the weights p/a stay finite (a_i = 0 only when w_i > 0 and
    b_i = 0 exactly). Raises ``np.linalg.LinAlgError`` if the m x m system is singular.
    """
    P = pt.parts
    kap = gsol._kappa(pt, "fb")
    tau, p, lt, k = P["tau"], P["p"], P["l"], P["r"]
    a = np.maximum(P["a"], a_floor)
    (Gw,) = await oracle.gram((p / a)[None, :])
    M = np.diag(kap) - tau[:, None] * Gw
    gla = (await oracle.gt((lt / a)[:, None]))[:, 0]
    dX = np.linalg.solve(M, -k + tau * gla)
    GdX = (await oracle.gapply(dX[:, None]))[:, 0]
    dW = -(lt + p * GdX) / a
    # J d, item part needs G^T dW; transaction part is p G dX + a_true dW
    gtdw = (await oracle.gt(dW[:, None]))[:, 0]
    Jd = np.concatenate([kap * dX + tau * gtdw, p * GdX + P["a"] * dW])
    return dX, dW, float(pt.F @ Jd)


async def fb_solve(
    oracle: gsol.Oracle,
    th: float,
    tol: float = 1e-10,
    max_iter: int = 500,
    nu0: float = 1e-1,
    nu_factor: float = 1e-2,
    nu_min: float = 1e-13,
    stage_iter: int = 100,
    sigma: float = 1e-4,
    rho: float = 0.1,
    max_backtracks: int = 30,
    mu0: float = 1e-2,
    a_floor: float = 1e-10,
    nu_tol: float = 0.1,
    start: tuple | None = None,
    on_iter: Any = None,
) -> gsol.LMResult:
    """FB-mode GS: smoothing continuation, undamped steps with Armijo search, LM fallback.

    Every iteration computes one step (``newton_step``; on failure ``lm_step``) and searches
    along it; the history records per iteration: iter, kind ('newton' | 'lm'), alpha (0 for
    undamped), nu, step, residual_inf (unsmoothed), residual_nu, seconds.
    """
    if not th < 0:
        raise ValueError(f"fb_solve: theta must be negative, got {th}")
    if not (nu0 >= 0 and 0 < nu_factor < 1 and 0 < sigma < 0.5 and 0 < rho <= 1):
        raise ValueError(
            f"fb_solve: need nu0 >= 0, 0 < nu_factor < 1, 0 < sigma < 1/2, 0 < rho <= 1; got "
            f"nu0={nu0}, nu_factor={nu_factor}, sigma={sigma}, rho={rho}"
        )
    X, W, _ = start if start is not None else gsol.start_point(oracle.n, oracle.m, "fb")
    nu = nu0
    pt = await gsol._evaluate(oracle, X, W, None, th, "fb", 0, False, nu)
    if pt is None:
        raise ValueError("fb_solve: start point outside the domain X < C")
    mu = mu0
    history: list[dict[str, Any]] = []
    it = stage = 0
    res0 = float(np.abs(gsol._refresh(pt, th, "fb", 0.0).F).max())
    while res0 >= tol and it < max_iter:
        # continuation: tighten the smoothing once the smoothed system is solved well enough
        while nu > 0 and (float(np.abs(pt.F).max()) < nu_tol * nu or stage >= stage_iter):
            nu = nu * nu_factor if nu * nu_factor >= nu_min else 0.0
            pt, stage = gsol._refresh(pt, th, "fb", nu), 0
        it += 1
        stage += 1
        t0 = time.perf_counter()
        begin = getattr(oracle, "begin_iteration", None)
        if begin is not None:  # lets a networked oracle attribute costs to this iteration
            begin(it)
        phi = float(pt.F @ pt.F)
        new, t, kind, alpha = None, 0.0, "newton", 0.0
        try:
            dX, dW, slope = await newton_step(oracle, pt, a_floor)
            good = bool(np.isfinite(slope) and slope <= -rho * phi)
            good = good and bool(np.isfinite(dX).all() and np.isfinite(dW).all())
        except np.linalg.LinAlgError:
            good = False
        if good:
            new, t = await _search(
                oracle, pt, th, nu, dX, dW, phi, slope, sigma, max_backtracks, it
            )
        if new is None:  # damped Marquardt step (old schedule), plain decrease test
            kind = "lm"
            alpha = mu * np.sqrt(phi)
            dX, dW, _ = await gsol.lm_step(oracle, pt, alpha, "fb")
            new, t = await _search(oracle, pt, th, nu, dX, dW, phi, 0.0, 0.0, max_backtracks, it)
            mu = max(mu / 4.0, 1e-10) if (new is not None and t == 1.0) else mu * 4.0
        if new is not None:
            pt = new
        res0 = float(np.abs(gsol._refresh(pt, th, "fb", 0.0).F).max())
        rec = {
            "iter": it,
            "kind": kind,
            "alpha": float(alpha),
            "nu": nu,
            "step": t if new is not None else 0.0,
            "residual_inf": res0,
            "residual_nu": float(np.abs(pt.F).max()),
            "seconds": time.perf_counter() - t0,
        }
        history.append(rec)
        if on_iter is not None:
            on_iter(rec)
        if new is None and kind == "lm" and mu > 1e30:
            break
    return gsol.LMResult(pt.X, pt.W, None, res0 < tol, it, res0, history, "fb")


async def _search(
    oracle: gsol.Oracle,
    pt: Any,
    th: float,
    nu: float,
    dX: np.ndarray,
    dW: np.ndarray,
    phi: float,
    slope: float,
    sigma: float,
    max_backtracks: int,
    it: int,
) -> tuple[Any, float]:
    """Backtracking: first t in 1, 1/2, ... with ||F(z + t d)||^2 <= phi + 2 sigma t slope
    (strict decrease when sigma = 0); returns (point, t), or (None, 0) with the oracle reset to
    ``pt``."""
    t = 1.0
    for _ in range(max_backtracks + 1):
        new = await gsol._evaluate(
            oracle, pt.X + t * dX, pt.W + t * dW, None, th, "fb", it, True, nu
        )
        if new is not None:
            val = float(new.F @ new.F)
            if (val <= phi + 2.0 * sigma * t * slope) if sigma > 0 else (val < phi):
                return new, t
        t *= 0.5
    await oracle.set_point(pt.X, pt.W, None, it, False)  # the oracle's point must be pt again
    return None, 0.0
