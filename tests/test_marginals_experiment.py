"""sdp reproduce seed000-marginals: the report machinery on a small run, and the quick run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATASETS

from parties.reproduce.seed000 import marginals as E
from parties.reproduce.seed000 import marginals_report as R
from protocols.datasets import categorical as D


def small_dataset() -> D.CategoricalDataset:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, (6000, 5))
    a[:, 1] = a[:, 0] ^ (rng.random(6000) < 0.2)
    return D.CategoricalDataset(
        "kosarak-synthetic", a.astype(np.int64), (2,) * 5, tuple("abcde"), "test"
    )


def test_marginal_experiment_and_report(tmp_path) -> None:  # noqa: ANN001
    ds = small_dataset()
    methods = ["calm", "ft", "srr-ms/paper", "arr-ss/paper", "psrr-ss/paper", "psrr-ss/tight"]
    res = E.marginal_experiment(ds, (0.5, 1.0), 1, 0, lambda m: None, methods)
    pts = res["points"]
    assert set(pts) == set(methods)
    # 6,000 users at eps_c = 0.5: the closed-form bound leaves SRR-MS without a local epsilon
    assert pts["srr-ms/paper"]["0.5"]["sse"] is None and "infeasible" in pts["srr-ms/paper"]["0.5"]
    assert pts["psrr-ss/tight"]["1.0"]["sse"] < pts["calm"]["1.0"]["sse"]
    assert R.ratio(res, "calm", "psrr-ss/tight", 1.0) > 1
    results = {
        "quick": True,
        "seed": 0,
        "reps": 1,
        "census_reps": 1,
        "seconds": 1.0,
        "marginals": {"kosarak-synthetic": res},
    }
    R.write_report(tmp_path, results, (0.5, 1.0), (1.0,), (1.0,))
    text = (tmp_path / "report.md").read_text()
    assert (
        "Public parameters derived from the data, as in the paper, not private" in text
        and "training split" in text
    )
    assert (
        "C10" in text
        and "Calm_PSRR-SS" in text
        and (tmp_path / "sse3_kosarak-synthetic.png").exists()
    )
    assert any("kosarak-synthetic, eps_c = 1, tight" in line for line in R.checks(results))


@pytest.mark.slow
@pytest.mark.skipif(not (DATASETS / "census-income-kdd").exists(), reason="datasets not available")
def test_quick_reproduction(tmp_path) -> None:  # noqa: ANN001
    assert E.main(["--quick", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "results.json").read_text())
    assert set(res["marginals"]) == {"kosarak-synthetic", "census-income"}
    text = (tmp_path / "report.md").read_text()
    assert text.count("**PASS**") == 5
