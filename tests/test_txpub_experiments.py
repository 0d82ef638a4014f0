"""Seed 001 reproduction driver: grid claims on a small instance; quick run (slow)."""

import numpy as np
import pytest

from parties.reproduce.seed001 import runs as seed001
from protocols.txpub.model import TxData


def test_grid_claims_small():
    rng = np.random.default_rng(2)
    d = TxData(rng.random((300, 6)) < rng.uniform(0.1, 0.5, 6), 3)
    g = seed001.grid(d)
    assert len(g) == 25
    for r in g:
        assert r["gs_A"] <= r["bound_A"] + 1e-12 and r["gs_B"] <= r["bound_B"] + 1e-12
        assert r["ls_A"] >= r["gs_A"] - 1e-9 and r["ls_B"] >= r["gs_B"] - 1e-9
        assert r["gs_total_real"] >= r["lsc_total_real"] - 1e-6
    # the optimum depends on (eps, delta) only through theta: flat in delta for e^eps <= 1.1
    for ee in (1.01, 1.1):
        vals = {round(r["gs_all"], 12) for r in g if r["exp_eps"] == ee}
        assert len(vals) == 1
    # non-decreasing in e^eps at fixed delta
    for dl in seed001.DELTAS:
        col = [r["gs_all"] for r in g if r["delta"] == dl]
        assert all(b >= a - 1e-12 for a, b in zip(col, col[1:]))


@pytest.mark.slow
def test_quick_reproduction_writes_report(tmp_path):
    assert seed001.main(["--quick", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "report.md").read_text()
    assert "Fig. 3" in text and "cannot be reproduced" in text
    assert (tmp_path / "fig3_grid_synthetic.png").stat().st_size > 0
