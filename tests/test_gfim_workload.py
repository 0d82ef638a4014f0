"""``sdp run gfim`` workload: parameters, report table, datasets; networked run (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import result_of, sdp_run_to

from protocols.base import simulate
from protocols.datasets.categorical import default_data_dir
from protocols.workloads import get_workload

DATA = default_data_dir()


def test_gfim_workload_report_lists_topk_next_to_truth():
    wl = get_workload(
        "gfim", {"dataset": "laplace-50k", "users": 4000, "k": 5, "epsilon": 4.0, "shuffle": False}
    )
    assert wl.records.shape == (4000, 50) and wl.protocol.ell == 50 and wl.protocol.k_max == 10
    est = simulate(wl.protocol, wl.records, np.random.default_rng(0), populations=2)
    rep = wl.report(est)
    table = rep["table"]
    assert len(table["rows"]) == 5 and table["columns"][1] == "estimated item"
    assert [r[0] for r in table["rows"]] == [1, 2, 3, 4, 5]
    truth = wl.truth()["top_k"]
    assert [r[5] for r in table["rows"]] == [str(v) for v in truth]
    hits = sum(r[4] == "yes" for r in table["rows"])
    assert rep["precision"] == pytest.approx(hits / 5)
    assert 0 <= rep["ncr"] <= 1 and rep["relative_error"] >= 0
    assert len(rep["std_of_reported_frequencies"]) == 5
    json.dumps(rep)  # the launcher prints / stores it


@pytest.mark.parametrize(
    "params,name",
    [
        ({"method": "ldpminer", "shuffle": False}, "ldpminer"),
        ({"method": "one-phase", "shuffle": "false"}, "one-phase"),
        ({"shuffle": "true", "epsilon": 1.0}, "gfim-shuffle"),
        ({"epsilon": 1.0}, "gfim-shuffle"),  # the shuffle model is the default
        ({"shuffle": True, "method": "ldpminer"}, "ldpminer-shuffle"),
        ({"combination": "ivw", "shuffle": False}, "gfim"),
    ],
)
def test_gfim_workload_variants(params, name):
    wl = get_workload("gfim", {"dataset": "normal-50k", "users": 3000, "k": 3, **params})
    assert wl.protocol.name == name
    est = simulate(wl.protocol, wl.records, np.random.default_rng(1))
    assert len(wl.report(est)["table"]["rows"]) == 3
    if str(params.get("shuffle", True)).lower() == "true":
        assert wl.protocol.privacy()["model"] == "shuffle" and wl.protocol.eps1 > 1.0


def test_ldpminer_alias_and_errors():
    assert get_workload("ldpminer", {"users": 2000}).protocol.name == "ldpminer-shuffle"
    assert get_workload("ldpminer", {"users": 2000, "shuffle": False}).protocol.name == "ldpminer"
    with pytest.raises(ValueError, match="unknown dataset"):
        get_workload("gfim", {"dataset": "nope"})
    with pytest.raises(ValueError, match="k must lie"):
        get_workload("gfim", {"users": 2000, "k": 600})
    with pytest.raises(ValueError, match="unknown method"):
        get_workload("gfim", {"users": 2000, "method": "svim"})
    with pytest.raises(ValueError, match="bound vr or fmt21"):
        get_workload("gfim", {"users": 2000, "shuffle": 1, "bound": "paper"})


@pytest.mark.skipif(not (DATA / "fimi").is_dir(), reason="shared datasets not available")
def test_real_set_datasets_load():
    from protocols.gfim.setvalued_data import check_records, load_set_dataset

    t10 = load_set_dataset("t10i4d100k")
    # the public universe of 1,000 generator items (870 occur), never the items present
    assert t10.n == 100_000 and t10.d == 1000 and t10.records.shape[1] == 29
    assert len(np.unique(t10.records[t10.records >= 0])) == 870
    check_records(t10.records[:2000], t10.d)
    kos = load_set_dataset("kosarak")
    assert kos.n == 36_683 and kos.ell() == 15
    sub = load_set_dataset("kosarak", n=1000, seed=2)
    assert sub.n == 1000 and sub.d == kos.d and "1000 users sampled" in sub.source
    with pytest.raises(ValueError, match="users must lie"):
        load_set_dataset("kosarak", n=10**6)


@pytest.mark.slow
@pytest.mark.skipif(not (DATA / "census-income-kdd").is_dir(), reason="no Census-Income")
def test_census_income_item_sets():
    from protocols.gfim.setvalued_data import check_records, load_set_dataset

    ds = load_set_dataset("census-income")
    assert ds.n == 299_285 and ds.records.shape == (299_285, 41) and ds.ell() == 41
    check_records(ds.records, ds.d)
    assert (ds.sizes == 41).all() and ds.labels[0] == "age=0s"


@pytest.mark.slow
def test_networked_gfim_run(tmp_path: Path):
    out = tmp_path / "run"
    args = ("--shuffler", "trusted", "--param", "k=5", "--epsilon", "2.0", "--seed", "3")
    sdp_run_to(out, "gfim", *args, "--users", "20000", "--json")
    res = result_of(out)
    est = res["estimate"]
    assert len(est["top_k"]) == 5 and est["n1"] + est["n2"] == 20_000
