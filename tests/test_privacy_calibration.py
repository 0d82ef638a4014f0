"""Calibration that could state a guarantee it does not have (issue 21 item 4), one test each.

(The closed form outside its theorem and eps_l <= 0 are tested in test_multidim_calculate.py:
``test_outside_the_theorem_gives_no_closed_form_budget`` and
``test_nonpositive_local_epsilon_is_an_error_under_every_policy``.)
"""

from __future__ import annotations

import numpy as np
import pytest

from protocols.accountant import amplify
from protocols.base import simulate
from protocols.multidim.baselines import SUEMS
from protocols.privacy.ledger import PrivacyRefusal, Release
from protocols.privacy.statements import default_delta
from protocols.workloads import get_workload


def test_srr_ms_above_one_is_routed_to_the_accountant_and_says_so() -> None:
    """``sdp run srr-ms --epsilon 8`` claimed eps_c = 8 from the closed form outside its theorem."""
    w = get_workload("srr-ms", {"epsilon": 8.0, "accounting": "paper"})
    for b in w.protocol.budgets:
        assert b.outside_theorem and "eps_c <= 1" in b.reason
    assert "accountant:vr" in str(w.protocol.privacy()["bound"])
    ledger: list[Release] = []
    simulate(w.protocol, w.records, np.random.default_rng(0), ledger=ledger)
    j = 0
    r = ledger[j]
    eps_l = w.protocol.eps_local[j]
    k = w.protocol.domain_sizes[j]
    amp = amplify(eps_l, r.n_accounted, r.delta, bound="vr", mechanism="grr", k=k)
    assert amp.eps_central <= 8.0 and "accountant" in r.bound


@pytest.mark.parametrize("name,extra", [("grr", {}), ("gfim", {"shuffle": "true", "ell": 8})])
def test_local_epsilon_override_states_its_own_guarantee(name, extra) -> None:
    """grr with local_epsilon 7.58 and target 1.0 was accepted silently."""
    params = {"users": 4000, "epsilon": 1.0, "local_epsilon": 7.58, **extra}
    w = get_workload(name, params)
    priv = w.protocol.privacy()
    assert priv["target_missed"] and priv["eps_central"] > 1.0
    with pytest.raises(PrivacyRefusal, match="max_epsilon"):
        simulate(w.protocol, w.records, np.random.default_rng(1))
    w = get_workload(name, {**params, "max_epsilon": 100})
    ledger: list[Release] = []
    simulate(w.protocol, w.records, np.random.default_rng(1), ledger=ledger)
    assert all(r.eps > 1.0 and "missed" in r.note for r in ledger)


def test_ldpminer_honours_local_epsilon() -> None:
    params = {"users": 4000, "epsilon": 1.0, "shuffle": "true", "ell": 8, "k": 3}
    base = get_workload("ldpminer", params).protocol
    w = get_workload("ldpminer", {**params, "local_epsilon": 3.0, "max_epsilon": 50})
    assert w.protocol.eps == pytest.approx(3.0) and base.eps != pytest.approx(3.0)
    assert w.protocol.privacy()["eps_local"] == pytest.approx(3.0)


@pytest.mark.parametrize(
    "name,params",
    [
        ("grr", {"users": 3000}),
        ("srr-ms", {}),
        ("arr-ss", {}),
        ("psrr-ss", {}),
        ("calm-psrr-ss", {"dataset": "adult", "accounting": "tight"}),
        ("hp-sdp", {"users": 20000}),
        ("gfim", {"users": 3000, "ell": 5, "shuffle": "true", "epsilon": 2.0}),
        ("splitmix-sum", {"users": 3000}),
    ],
)
def test_default_delta_is_strictly_below_one_over_n(name, params) -> None:
    """SRR-MS, ARR-SS, PSRR-SS and the marginals defaulted to delta = 1/n."""
    w = get_workload(name, params)
    ledger: list[Release] = []
    simulate(w.protocol, w.records, np.random.default_rng(2), ledger=ledger)
    n = w.n_users
    assert all(0 <= r.delta <= default_delta(n) * (1 + 1e-9) for r in ledger)
    assert default_delta(n) < 1.0 / n
    with pytest.raises(ValueError, match="1/n"):
        get_workload(name, {**params, "delta": 1.0 / n})


def test_sue_ms_paper_accounting_is_the_decomposition_bound() -> None:
    """Spec Sec. 7's candidate (two bits as independent binary RR) is dropped (issue 26,
    tests/test_privacy_leaks_suems.py): ``paper`` calibrates SUE-MS with the blanket
    decomposition bound for whole SUE vectors, and the stated guarantee is (eps_c, delta)."""
    from protocols.accountant import max_local_epsilon

    n, delta, eps_c = 45_222, 1e-7, 0.9
    proto = SUEMS([4] * 15, n, eps_c, delta)
    want = max_local_epsilon(eps_c, n // 15, delta, bound="decomposition", mechanism="sue")
    assert proto.eps_local[0] == pytest.approx(want)
    assert proto.privacy()["bound"].startswith("accountant:decomposition/sue")
