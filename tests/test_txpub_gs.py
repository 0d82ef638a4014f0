"""Seed 001 GS: Jacobian, structured LM step, convergence to the reference, spurious roots."""

import asyncio

import numpy as np
import pytest

from protocols.txpub import global_solution as gs
from protocols.txpub import lm
from protocols.txpub.data import load_fimi
from protocols.txpub.model import reference_solve, theta


def _problem(seed=0, n=40, m=6):
    rng = np.random.default_rng(seed)
    D = rng.random((n, m)) < 0.3
    return D, D.sum(0).astype(float)


@pytest.mark.parametrize("mode", lm.MODES)
@pytest.mark.parametrize("form", lm.FORMS)
def test_jacobian_matches_finite_differences(mode, form):
    D, C = _problem()
    rng = np.random.default_rng(1)
    th = -0.3
    z = np.concatenate([rng.uniform(0, 0.3, 6) * C, rng.uniform(0.1, 1, 40)])
    J = gs.kkt_jacobian_dense(D, C, th, z, mode, form)
    e = 1e-6
    Jn = np.zeros_like(J)
    for q in range(len(z)):
        dz = np.zeros_like(z)
        dz[q] = e
        Jn[:, q] = (
            gs.kkt_residual_dense(D, C, th, z + dz, mode, form)
            - gs.kkt_residual_dense(D, C, th, z - dz, mode, form)
        ) / (2 * e)
    assert np.abs(J - Jn).max() < 1e-6


@pytest.mark.parametrize("mode", lm.MODES)
@pytest.mark.parametrize("form", lm.FORMS)
def test_structured_step_equals_dense_solve(mode, form):
    D, C = _problem(2)
    rng = np.random.default_rng(3)
    th, alpha, m = -0.3, 1e-3, 6
    z = np.concatenate([rng.uniform(0, 0.3, m) * C, rng.uniform(0.1, 1, 40)])
    o = lm.PlainOracle(D, form=form)

    async def go():
        pt = await lm._evaluate(o, z[:m], z[m:], None, th, mode, 0, False, 0.0)
        return await lm.lm_step(o, pt, alpha, mode)

    dX, dW, _ = asyncio.run(go())
    J = gs.kkt_jacobian_dense(D, C, th, z, mode, form)
    F = gs.kkt_residual_dense(D, C, th, z, mode, form)
    N = J.T @ J
    dg = np.diag(N).copy()
    # the same floors as lm_step (per block)
    for sl in (slice(0, m), slice(m, None)):
        dg[sl] = np.maximum(dg[sl], 1e-12 * dg[sl].max())
    d = np.linalg.solve(N + alpha * np.diag(dg), -J.T @ F)
    assert np.abs(np.concatenate([dX, dW]) - d).max() <= 1e-8 * np.abs(d).max()


@pytest.mark.parametrize("form", lm.FORMS)
def test_fb_gs_reaches_reference(form):
    rng = np.random.default_rng(7)
    D = rng.random((200, 8)) < rng.uniform(0.05, 0.5, 8)
    th = theta(np.log(1.4), 0.5)
    o = lm.PlainOracle(D, form=form)
    res = asyncio.run(gs.gs_solve(o, th, "fb"))
    x = o.to_counts(res.X)
    x_ref = reference_solve(D, th)
    assert res.converged
    assert np.abs(x - x_ref).max() <= 1e-6 * x_ref.max()
    assert gs.kkt_check(D, D.sum(0), th, x, res.W).max_violation < 1e-7


def test_paper_mode_root_is_flagged_when_spurious():
    # spec §3.2.2: plain (8)-(9) converges, but the verifier must flag infeasible roots
    rng = np.random.default_rng(3)
    D = rng.random((60, 6)) < rng.uniform(0.1, 0.5, 6)
    th = theta(np.log(1.4), 0.5)
    o = lm.PlainOracle(D, form="x")
    res = asyncio.run(gs.gs_solve(o, th, "paper", max_iter=300))
    rep = gs.kkt_check(D, D.sum(0), th, res.X, res.W)
    x_ref = reference_solve(D, th)
    if np.abs(res.X - x_ref).max() > 1e-4 * x_ref.max():
        assert not rep.ok and rep.reasons


def test_kkt_check_accepts_true_optimum():
    rng = np.random.default_rng(11)
    D = rng.random((120, 6)) < 0.35
    th = theta(np.log(1.4), 0.5)
    o = lm.PlainOracle(D, form="x")
    res = asyncio.run(gs.gs_solve(o, th, "fb"))
    assert res.converged
    assert gs.kkt_check(D, D.sum(0), th, res.X, res.W).ok


@pytest.mark.slow
def test_fb_gs_fimi_2000x20_equals_reference():
    d = load_fimi(n=2000, m=20)
    th = theta(0.336, 0.5)
    o = lm.PlainOracle(d.D)
    res = asyncio.run(gs.gs_solve(o, th, "fb"))
    x = o.to_counts(res.X)
    x_ref = reference_solve(d.D, th)
    assert res.converged and np.abs(x - x_ref).max() <= 1e-6 * x_ref.max()
