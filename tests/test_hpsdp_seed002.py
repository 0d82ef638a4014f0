"""sdp reproduce seed002: grid points, real-run validation, report (small scale; full CLI is slow)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from parties.reproduce.seed002.report import write_report
from parties.reproduce.seed002.runs import METHODS, grid_point, real_runs, run_grid
from protocols.hp_sdp import data as hp_sdp_data


def test_grid_point_empirical_matches_theory() -> None:
    ds = hp_sdp_data.load("zipf", 200_000)
    counts = np.bincount(ds.values, minlength=ds.d)
    for m in METHODS:
        pt = grid_point(m, ds, counts, 1.0, 1e-6, "paper", 12, np.random.default_rng(0))
        assert pt["feasible"] and pt["mse"] > 0
        if m != "hp-sdp":  # POP is biased: its MSE is below the unbiased variance
            assert 0.6 < pt["mse"] / pt["theory"] < 1.6, m
        else:
            assert pt["mse"] <= 1.2 * pt["theory"]
    bad = grid_point(
        "hp-sdp",
        hp_sdp_data.load("zipf", 2000),
        counts[:600] * 0 + 4,
        0.1,
        1e-9,
        "paper",
        1,
        np.random.default_rng(1),
    )
    assert bad["feasible"] is False and bad["mse"] is None


def test_small_reproduction_report(tmp_path: Path) -> None:
    datasets = {
        "zipf": hp_sdp_data.load("zipf", 30_000),
        "normal": hp_sdp_data.load("normal", 30_000),
    }
    grid = run_grid(datasets, (0.5, 1.0), (1e-6,), (), 2, 0)
    assert len(grid) == 2 * 2 * len(METHODS)
    real = real_runs(datasets["zipf"], [(0.5, 1e-6, "paper"), (0.05, 1e-6, "paper")], 2, 0)
    assert real[0]["feasible"] and 0.5 < real[0]["ratio"] < 1.5 and real[0]["pop_gain"] >= 0.99
    assert real[1]["feasible"] is False
    res = {
        "quick": True,
        "reps": 2,
        "seed": 0,
        "elapsed_seconds": 1.0,
        "datasets": {s: {"n": d.n, "d": d.d, "source": d.source} for s, d in datasets.items()},
        "eps_grid": [0.5, 1.0],
        "deltas": [1e-6],
        "tight_deltas": [],
        "grid": grid,
        "real": real,
        "timing": [],
    }
    json.dumps(res)
    write_report(res, tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert "C12" in text and "| zipf | paper | 0.5 |" in text
    assert (
        "Public parameters derived from the data, as in the paper, not private" in text
        and "914" in text
    )
    assert (tmp_path / "mse_zipf_paper.png").stat().st_size > 1000
    assert not (tmp_path / "mse_normal_tight.png").exists()  # no tight deltas requested


@pytest.mark.slow
def test_quick_cli(tmp_path: Path) -> None:
    from parties.reproduce.reproduce import main

    assert main(["seed002", "--quick", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "results.json").read_text())
    head = [r for r in res["real"] if r["dataset"] == "zipf" and r["accounting"] == "paper"][0]
    assert abs(head["ratio"] - 1) < 0.2
    assert "within 20 %" in (tmp_path / "report.md").read_text()
