"""Every seed-004 workload builds, runs through ``simulate`` with the privacy gate, fits the
shufflers' message bounds, and states its messages and bits per user."""

from __future__ import annotations

import pytest

from mpc.elgamal import message_layout
from parties.mpc_shuffle.wire import SENTINEL
from protocols.base import simulate
from protocols.rng import experiment_rng
from protocols.workloads import get_workload

CASES = {
    "cnt_rr": {"users": 3000},
    "cnt_2m": {"users": 3000},
    "cnt_sgm": {"users": 3000},
    "cnt_bn": {"users": 3000, "gamma": 0.9},
    "hist_kr": {"users": 10_000, "domain": 4},
    "hist_mm": {"users": 10_000, "domain": 4},
    "slh": {"users": 10_000, "domain": 4},
    "murs": {"users": 10_000, "domain": 4},
    "rsum_rr": {"users": 10_000},
    "rsum_kr": {"users": 10_000},
    "rsum_rm": {"users": 10_000},
    "rsum_dsg": {"users": 10_000, "gamma": 0.9},
    "range": {"users": 5000, "domain": 16, "branching": 4, "bound": "vr"},
    "put": {"users": 5000, "domain": 8},
    "aut": {"users": 5000, "domain": 8},
    "distinct": {"users": 3000, "domain": 64},
    "hist_lwy": {"users": 10_000, "domain": 4},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_workload_runs_gated_and_fits_the_shufflers(name):
    w = get_workload(name, dict(CASES[name]))
    p = w.protocol
    for spec in p.batch_specs():
        assert 2 <= spec.bound <= SENTINEL  # MPC field GF(2^31 - 1), mix-net embedding
        assert message_layout(spec.width, spec.bound)[1] >= 1
    assert p.messages_per_user() > 0 and p.bits_per_user() > 0
    ledger: list = []
    est = simulate(p, w.records, experiment_rng(16, name), ledger=ledger)
    assert len(ledger) == 1 and ledger[0].eps > 0
    report = w.report(est)
    assert report["privacy"] == p.privacy()
    assert w.truth()
