"""Registered seed-000 workloads: sliced encoding as in a networked run, reports, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import protocols.multidim.workloads  # noqa: F401  (registers the workloads)
from protocols.base import block_state, trusted_shuffle
from protocols.workloads import WORKLOADS, get_workload


def _run_sliced(w, populations=3, seed=0):
    rng = np.random.default_rng(seed)
    slices = [w.user_slice(i, populations) for i in range(populations)]
    parts = [
        w.protocol.encode_round(0, w.records[s], rng, {}, block_state(s.start, s.stop - s.start, 7))
        for s in slices
    ]
    merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return w.protocol.analyze(trusted_shuffle(merged, rng))


@pytest.mark.parametrize("name", ["srr-ms", "arr-ss", "psrr-ss", "sue-ms", "oue-ldp"])
def test_workload_end_to_end(name):
    assert name in WORKLOADS
    # paper accounting (the closed form); ARR-SS has none at the default delta on Adult
    acc = "tight" if name == "arr-ss" else "paper"
    w = get_workload(name, {"dataset": "adult", "epsilon": "1.0", "accounting": acc})
    assert w.n_users == 45_222
    est = _run_sliced(w)
    json.dumps(est)
    rep = w.report(est)
    json.dumps(rep)
    truth = w.truth()
    assert set(truth["marginals"]) == set(rep["sse_per_attribute"])
    assert len(rep["table"]["rows"]) == sum(len(m) for m in truth["marginals"].values())
    assert rep["sse_total"] > 0 and rep["expected_sse"] > 0
    # one noisy run: within a factor 3 of its expectation
    assert rep["expected_sse"] / 3 < rep["sse_total"] < 3 * rep["expected_sse"]
    priv = w.protocol.privacy()
    # the project default min(1e-6, 0.01/n), no longer the paper's 1/n
    assert priv["eps_c"] == 1.0 and priv["delta"] == pytest.approx(0.01 / 45_222)


def test_infeasible_is_a_clear_error():
    with pytest.raises(ValueError, match="no feasible local epsilon"):
        get_workload("arr-ss", {"epsilon": 0.5, "accounting": "paper"})
    w = get_workload("arr-ss", {"epsilon": 0.5, "policy": "fallback", "accounting": "paper"})
    assert w.protocol.eps_local == 0.5


def test_tight_and_estimator_params():
    pytest.importorskip("protocols.accountant")
    w = get_workload("psrr-ss", {"epsilon": 0.5, "accounting": "tight", "estimator": "observed"})
    assert w.protocol.privacy()["accounting"] == "tight"
    assert w.protocol.estimator == "observed"
    rep = w.report(_run_sliced(w))
    assert rep["attributes_estimated"] == 15


def test_launcher_params_users_and_bound():
    pytest.importorskip("protocols.accountant")
    w = get_workload("psrr-ss", {"users": 5000, "bound": "tight"})
    assert w.n_users == 5000 and w.protocol.n == 5000
    assert w.protocol.delta == pytest.approx(1e-6)
    assert w.protocol.accounting == "tight" and w.protocol.tight_bound == "vr"
    w2 = get_workload("psrr-ss", {"users": 5000, "bound": "fmt21"})
    assert w2.protocol.tight_bound == "fmt21"
    np.testing.assert_array_equal(w.records, w2.records)  # same sample for the same data_seed
    assert get_workload("srr-ms", {"bound": "balle"}).protocol.accounting == "paper"
    with pytest.raises(ValueError, match="bound"):
        get_workload("psrr-ss", {"bound": "magic"})
    with pytest.raises(ValueError, match="users"):
        get_workload("psrr-ss", {"users": 10**7})
    with pytest.raises(ValueError, match="domain"):
        get_workload("psrr-ss", {"domain": 5})
