"""Plaintext GS ("simulated parties") and the centralized reference of seed 001.

``gs_plain`` runs the same LM/Newton solver as the secure two-site GS with the plaintext oracle
(``lm.PlainOracle``); ``reference_counts`` is the centralized optimum. Both run without
processes or keys; the secure two-site GS (``parties.txpub.gs_sites``) must match them.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np

from protocols.txpub import global_solution as gsol
from protocols.txpub import lm
from protocols.txpub.model import TxData, check_feasible, floor_counts, reference_solve, theta


def gs_plain(
    data: TxData,
    eps: float,
    delta: float,
    *,
    mode: str = "fb",
    form: str = "v",
    max_iter: int = 2000,
    tol: float = 1e-10,
    method: str = "newton",
) -> dict[str, Any]:
    """Plaintext GS ('simulated parties', same solver, ``PlainOracle``); ``method`` as in
    ``global_solution.gs_solve``."""
    th = theta(eps, delta)
    o = lm.PlainOracle(data.D, form=form)
    t0 = time.perf_counter()
    if mode == "fb":
        res = asyncio.run(gsol.gs_solve(o, th, "fb", tol=tol, max_iter=max_iter, method=method))
    else:
        res = asyncio.run(lm.lm_solve(o, th, "paper", tol=tol, max_iter=max_iter))
    x = o.to_counts(res.X)
    return {
        "counts": floor_counts(x),
        "counts_real": x,
        "lm": res.summary(),
        "W": res.W,
        "seconds": time.perf_counter() - t0,
        "kkt": gsol.kkt_check(data.D, data.counts, th, x, res.W).as_dict(),
        "feasible": check_feasible(data.D, floor_counts(x), eps, delta).as_dict(),
    }


def reference_counts(data: TxData, eps: float, delta: float) -> np.ndarray:
    """Centralized reference optimum (unfloored)."""
    return reference_solve(data.D, theta(eps, delta))
