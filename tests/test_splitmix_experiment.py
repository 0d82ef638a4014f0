"""Split-Mix workload registration and the Adult experiment (small, fast settings)."""

from __future__ import annotations

import numpy as np
import pytest

import protocols.summation.workload as wl
from protocols.base import trusted_shuffle
from protocols.datasets.categorical import default_data_dir
from protocols.workloads import WORKLOADS

HAVE_ADULT = (default_data_dir() / "adult" / "adult.data.gz").is_file()


def test_workload_registered_and_runs_both_variants():
    for variant in ("splitmix", "single"):
        w = WORKLOADS["splitmix-sum"]({"users": 5000, "variant": variant, "epsilon": 1.0})
        rng = np.random.default_rng(0)
        est = w.protocol.analyze(trusted_shuffle(w.protocol.encode(w.records, rng), rng))
        rep = w.report(est)
        assert rep["abs_error_mean"] < 0.02
        assert w.truth()["mean"] == pytest.approx(w.records.mean())


def test_workload_rejects_bad_params():
    with pytest.raises(ValueError, match="variant"):
        WORKLOADS["splitmix-sum"]({"users": 100, "variant": "bogus"})
    with pytest.raises(ValueError, match="data"):
        WORKLOADS["splitmix-sum"]({"users": 100, "data": "nope"})


@pytest.mark.skipif(not HAVE_ADULT, reason="raw Adult not available")
def test_adult_encoding_and_small_experiment():
    from parties.reproduce.seed004 import splitmix as ex

    x = wl.adult_age_values()
    assert x.size == 32_561 and 0 < x.min() and x.max() <= 1
    assert (wl.load_adult_ages()[:3] == [39, 50, 38]).all()
    res = ex.run(reps=3, seed=1, data_dir=None, n_limit=3000)
    names = [r["estimator"] for r in res["rows"]]
    assert names[:3] == ["split-and-mix", "single message", "central Laplace"]
    mae = {r["estimator"]: r["mae"] for r in res["rows"]}
    # split-mix is eps-DP noised: error of order 1/(n eps); single message is far worse
    assert mae["split-and-mix"] < 10 / 3000
    assert mae["single message"] > mae["split-and-mix"]
    b = res["bytes_per_user"]["split-and-mix"]
    assert b["mpc_field_bytes"] == b["messages"] * 3 * 4
    md = ex.markdown(res)
    assert "| split-and-mix |" in md and "published" in md


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_ADULT, reason="raw Adult not available")
def test_full_adult_experiment_matches_expectations():
    from parties.reproduce.seed004 import splitmix as ex

    res = ex.run(reps=50, seed=0, data_dir=None, n_limit=None)
    mae = {r["estimator"]: r["mae"] for r in res["rows"]}
    n = res["n"]
    # eps-DP split-mix: discrete Laplace of scale ~1/eps on the sum -> MAE ~ 1/(n eps)
    assert 0.5 / n < mae["split-and-mix"] < 2.0 / n
    assert 0.5 / n < mae["central Laplace"] < 2.0 / n
    # the anchor's noise parameterization is almost noiseless: rounding error only (~1.1e-5)
    assert mae["split-and-mix (published noise)"] < 2e-5
    assert 2e-4 < mae["single message"] < 1e-3
