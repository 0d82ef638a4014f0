"""HHD (protocols/heavy_hitters/hhd.py): the authors' reference settings, the message limbs and
malformed rows, recall of planted heavy hitters, the workload and ``sdp run hhd``."""

from __future__ import annotations

import numpy as np
import pytest
from test_fe1 import run_and_verify

from protocols.base import simulate
from protocols.heavy_hitters.hhd import HHD, hhd_parameters
from protocols.heavy_hitters.workload import recall_precision, true_heavy_hitters
from protocols.rng import experiment_rng
from protocols.workloads import get_workload


def test_the_authors_reference_settings():
    """n = 10^7, B = 2^48, phi = 0.005, eps = 1, delta = 1e-14 (result/hhd.out: the dummy
    messages per user printed as "filter messages = 0.401024")."""
    p = hhd_parameters(10**7, 1 << 48, 0.005, 1.0, 1e-14)
    assert (p.s, p.t, p.b, p.fen, p.Delta) == (27, 48, 18494, 238095, 43)
    assert p.pf == pytest.approx(0.0357686, rel=1e-5)
    assert p.rho * p.pf == pytest.approx(0.401024, abs=1e-6)
    assert p.primes[0] == 134217757 and all(q > 1 << lv for lv, q in zip(range(27, 48), p.primes))
    proto = HHD(1 << 48, 10**7, 1.0, 1e-14, 0.005)
    assert proto.messages_per_user() == pytest.approx((1 + p.rho) * p.pf)


@pytest.mark.slow  # minutes of CPU on 2 cores: out of the fast suite
def test_planted_heavy_hitters_are_found_and_rows_are_checked():
    n, B = 30_000, 1 << 30
    rng = np.random.default_rng(5)
    heavy = np.array([123456789, 987654321, 5])
    x = np.concatenate([np.repeat(heavy, 2000), rng.integers(0, B, n - 6000)])
    p = HHD(B, n, 1.0, 1e-8, 0.05)
    batches = p.encode(rng.permutation(x), rng)
    assert batches["reports"].max() < 1 << 24 and batches["reports"].shape[1] == 6
    out = p.analyze(batches)
    assert set(heavy.tolist()) <= set(out["heavy_hitters"])
    rows = batches["reports"]
    bad = rows[:3].copy()
    bad[0, 0] = p.p.t  # a level outside s..t-1
    bad[1, 5] = p.p.b  # w outside the hash range
    bad[2, 1:3] = 0  # u = 0
    assert p.analyze({"reports": np.vstack([rows, bad])})["invalid"] == 3
    with pytest.raises(ValueError, match="values"):
        p.encode(np.array([B]), rng)
    with pytest.raises(ValueError, match="phi"):
        HHD(B, n, 1.0, 1e-8, 1.5)


@pytest.mark.slow  # minutes of CPU on 2 cores: out of the fast suite
def test_recall_precision_follow_the_authors_rates():
    truth = true_heavy_hitters(np.array([1, 1, 1, 2, 3, 3, 3, 3]), 0.3)
    assert truth.tolist() == [1, 3]
    assert recall_precision([1, 2, 7, 9], truth) == {"recall": 50.0, "precision": 25.0}
    assert recall_precision([], np.array([])) == {"recall": 100.0, "precision": 100.0}


def test_noise_warning_when_the_threshold_is_below_an_absent_prefix():
    assert HHD(1 << 16, 3000, 1.0, 1e-7, 0.05).noise_warning() is not None
    assert HHD(1 << 48, 10**7, 1.0, 1e-14, 0.005).noise_warning() is None


@pytest.mark.slow
def test_workload_simulates_through_the_gate():
    w = get_workload("hhd", {"users": 100_000, "domain": 1 << 24, "phi": 0.05})
    ledger: list = []
    est = simulate(w.protocol, w.records, experiment_rng(4, "hhd"), ledger=ledger)
    assert len(ledger) == 1 and ledger[0].eps <= 1.0
    rep = w.report(est)
    assert rep["true_heavy_hitters"] >= 3 and rep["recall"] == 100.0


@pytest.mark.slow  # minutes of CPU on 2 cores: out of the fast suite
def test_sdp_run_hhd_trusted(tmp_path):
    run_and_verify(
        tmp_path, "hhd", "trusted", "--users", "3000", "--domain", "65536", "--param", "phi=0.05"
    )


@pytest.mark.slow
@pytest.mark.parametrize("shuffler,users", [("mixnet", "600"), ("mpc", "3000")])
def test_sdp_run_hhd_networked(tmp_path, shuffler, users):
    run_and_verify(
        tmp_path, "hhd", shuffler, "--users", users, "--domain", "65536", "--param", "phi=0.1"
    )


@pytest.mark.slow
def test_the_authors_reference_run_at_ten_million_users():
    """n = 10^7, B = 2^48, phi = 0.005 (authors: recall 100%, precision 21.9%)."""
    w = get_workload("hhd", {"users": 10**7, "domain": 1 << 48, "phi": 0.005, "items": 10**6})
    rep = w.report(simulate(w.protocol, w.records, experiment_rng(0, "hhd_reference")))
    assert rep["true_heavy_hitters"] >= 5 and rep["recall"] == 100.0
    assert rep["precision"] > 10.0
