"""Every protocol describes its releases; with dropout it refuses or re-accounts (issue 21 item 1).

Each workload runs through ``simulate`` (which always gates): the ledger is non-empty and every
entry holds at the count received. With half the users dropped, the protocol either refuses
(one line, nothing analyzed) or every entry is re-accounted at the count received, and the
re-accounted epsilon is checked against the accountant recomputed independently here (never the
statement for n).
"""

from __future__ import annotations

import numpy as np
import pytest

from protocols.accountant import amplify
from protocols.base import simulate
from protocols.privacy.ledger import PrivacyRefusal, Release, compose
from protocols.workloads import get_workload

SMALL = {
    "grr": {"users": 4000},
    "srr-ms": {"users": 20000, "accounting": "tight"},
    "arr-ss": {"users": 6000, "accounting": "tight"},
    "psrr-ss": {"users": 6000, "accounting": "tight"},
    "sue-ms": {"users": 20000, "accounting": "tight"},
    "oue-ldp": {"users": 3000},
    "calm-psrr-ss": {"dataset": "adult", "users": 20000, "accounting": "tight"},
    "calm-srr-ms": {"dataset": "adult", "users": 20000, "accounting": "tight"},
    "calm-arr-ss": {"dataset": "adult", "users": 20000, "accounting": "tight"},
    "hp-sdp": {"users": 20000, "dataset": "zipf"},
    "gfim": {"users": 4000, "k": 3, "ell": 8},
    "ldpminer": {"users": 4000, "k": 3, "ell": 8},
    "splitmix-sum": {"users": 3000},
}
HP_METHODS = ["hp-sm", "sh", "aue", "pure-dump", "mix-dump", "murs"]


def _workload(name: str, extra: dict | None = None):
    params = dict(SMALL.get(name, {}))
    params.update(extra or {})
    return get_workload(name, params)


def _check_reaccounted(r: Release) -> None:
    """A re-accounted entry: at the count received, and the accountant agrees independently."""
    assert r.reaccounted and r.n_accounted == r.n_received and r.holds
    assert "calibrated for" in r.note


CASES = [(n, {}) for n in SMALL] + [("hp-sdp", {"method": m}) for m in HP_METHODS]
CASES += [("gfim", {"shuffle": "true", "epsilon": 2.0}), ("ldpminer", {"shuffle": "true"})]
CASES += [("splitmix-sum", {"variant": "single"})]


@pytest.mark.parametrize("name,extra", CASES, ids=lambda x: str(x))
def test_every_protocol_publishes_a_ledger_that_holds(name, extra) -> None:
    w = _workload(name, extra)
    ledger: list[Release] = []
    simulate(w.protocol, w.records, np.random.default_rng(1), populations=3, ledger=ledger)
    assert ledger, f"{name}: no release"
    for r in ledger:
        assert r.n_received >= r.n_accounted and not r.reaccounted
        assert r.delta < 1.0 / w.n_users or r.delta == 0.0
    total = compose(ledger)
    cap = w.protocol.max_epsilon
    assert cap is None or total["eps"] <= cap * (1 + 1e-12)


@pytest.mark.parametrize("name,extra", CASES, ids=lambda x: str(x))
def test_half_dropout_refuses_or_reaccounts(name, extra) -> None:
    w = _workload(name, {**extra, "max_epsilon": 1e6})
    ledger: list[Release] = []
    try:
        simulate(w.protocol, w.records, np.random.default_rng(2), dropout=0.5, ledger=ledger)
    except PrivacyRefusal as exc:
        assert "\n" not in str(exc) and "refusing" in str(exc)
        return
    assert ledger
    for r in ledger:
        if r.n_accounted == 0:  # pure LDP or a data-independent output: holds at any count
            assert r.bound.startswith(("pure LDP", "data-independent")) and r.delta == 0.0
            continue
        _check_reaccounted(r)


def test_reaccounted_epsilon_is_the_accountant_at_the_count_received() -> None:
    w = _workload("grr", {"max_epsilon": 100})
    ledger: list[Release] = []
    simulate(w.protocol, w.records, np.random.default_rng(3), dropout=0.5, ledger=ledger)
    (r,) = ledger
    amp = amplify(w.protocol.eps_local, r.n_received, r.delta, bound="vr", mechanism="grr", k=10)
    assert r.n_received == w.n_users // 2 and r.eps == pytest.approx(amp.eps_central)
    assert r.eps > 1.0  # the statement for n (1.0) would have been wrong


def test_default_max_epsilon_refuses_what_min_users_does_not_cover() -> None:
    w = _workload("srr-ms")
    with pytest.raises(PrivacyRefusal, match="max_epsilon"):
        simulate(w.protocol, w.records, np.random.default_rng(4), dropout=0.3)
    # calibrated for 60 % of the users: a 30 % dropout is covered at the target epsilon
    w = _workload("srr-ms", {"min_users": int(0.6 * 20000)})
    ledger: list[Release] = []
    simulate(w.protocol, w.records, np.random.default_rng(4), dropout=0.3, ledger=ledger)
    assert all(not r.reaccounted and r.eps <= 1.0 for r in ledger)


def test_splitmix_refuses_below_min_users_and_needs_whole_users() -> None:
    w = _workload("splitmix-sum", {"min_users": 2000})
    assert w.protocol.params.n_min == 2000
    simulate(w.protocol, w.records, np.random.default_rng(5), dropout=0.3)
    with pytest.raises(PrivacyRefusal, match="Polya"):
        simulate(w.protocol, w.records, np.random.default_rng(5), dropout=0.5)
    # without the users count the gate assumes the worst placement of missing shares
    s = w.protocol.params.shares
    with pytest.raises(PrivacyRefusal):  # 1,001 missing shares may break 1,001 users
        w.protocol.releases(0, {"shares": 3000 * s - 1001})
    (r,) = w.protocol.releases(0, {"shares": 3000 * s - 1000})
    assert r.n_received == 2000
    (r,) = w.protocol.releases(0, {"shares": 3000 * s})
    assert r.n_received == 3000


def test_murs_and_blanket_baselines_need_the_users_count() -> None:
    w = _workload("hp-sdp", {"method": "murs"})
    with pytest.raises(PrivacyRefusal, match="users"):
        w.protocol.releases(0, {"reports": 10**6})


def test_gfim_round0_is_gated_before_round1() -> None:
    """GFIM's round 0 publishes f1 and the candidates: it passes the gate first."""
    w = _workload("gfim", {"shuffle": "true", "epsilon": 2.0})

    class Spy(type(w.protocol)):
        pass

    p = w.protocol
    seen: list[int] = []
    orig = p.analyze_round

    def spy(r, shuffled, public):
        seen.append(r)
        return orig(r, shuffled, public)

    p.analyze_round = spy
    with pytest.raises(PrivacyRefusal):
        simulate(p, w.records, np.random.default_rng(6), dropout=0.5)
    assert seen == []  # refused at round 0: nothing was analyzed, nothing published
