"""Seed 000 Calculate: spec Sec. 12.1 table, Sec. 12.2 thresholds, policies, accountant agreement."""

from __future__ import annotations

import math

import pytest

from parties.reproduce.seed000.reference import SPEC_12_1
from protocols.multidim.calculate import (
    balle_x,
    calculate,
    calculate_eps_local,
    closed_form_eps_local,
    eps_c_from_local,
    feasibility_threshold,
)

N_KOS, D_KOS = 65_536, 8
DELTA_KOS = 1 / N_KOS

# spec Sec. 12.1: eps_c -> (X_s, SRR-MS, ARR-SS, PSRR-SS); the paper's printed numbers
# (closed_form_eps_local), negative entries included; written once, in the reproduction's
# reference values
TABLE_12_1 = SPEC_12_1


def test_log_term():
    assert 14 * math.log(2 / DELTA_KOS) == pytest.approx(164.969, abs=5e-4)


@pytest.mark.parametrize("eps_c", sorted(TABLE_12_1))
def test_table_12_1(eps_c):
    xs, srr, arr, psrr = TABLE_12_1[eps_c]
    assert round(balle_x(eps_c, DELTA_KOS, N_KOS / D_KOS), 3) == xs
    cases = [(N_KOS / D_KOS, 2), (N_KOS, 16), (N_KOS, 2)]
    got = [closed_form_eps_local(eps_c, DELTA_KOS, ne, k) for ne, k in cases]
    assert [round(g, 3) for g in got] == [srr, arr, psrr]
    # strict and paper_lenient: the negative entries are infeasible, the others identical
    for g, (ne, k) in zip(got, cases, strict=True):
        for policy in ("strict", "paper_lenient"):
            b = calculate(eps_c, DELTA_KOS, ne, k, policy)
            assert b.feasible == (g > 0)
            if g > 0:
                assert b.eps_local == pytest.approx(g)


def test_eps_c_0_1():
    assert round(calculate_eps_local(0.1, DELTA_KOS, N_KOS, 2), 3) == 1.089
    assert calculate_eps_local(0.1, DELTA_KOS, N_KOS / D_KOS, 2) is None
    assert calculate_eps_local(0.1, DELTA_KOS, N_KOS, 16) is None
    # below zero argument even lenient gives nothing
    assert calculate(0.1, DELTA_KOS, N_KOS, 16, "paper_lenient").feasible is False


def test_nonpositive_local_epsilon_is_an_error_under_every_policy():
    """Issue 21 item 4: paper_lenient gave eps_l = -0.014 (Kosarak SRR-MS, eps_c = 0.2) and the
    run proceeded claiming eps_c. An eps_l <= 0 is no guarantee: never a feasible budget."""
    b = calculate(0.2, DELTA_KOS, N_KOS / D_KOS, 2, "paper_lenient")
    assert not b.feasible and b.eps_local is None and "no privacy guarantee" in b.reason
    assert closed_form_eps_local(0.2, DELTA_KOS, N_KOS / D_KOS, 2) < 0  # what the paper printed


def test_fallback_policy():
    b = calculate(0.1, DELTA_KOS, N_KOS, 16, "fallback")
    assert b.feasible and b.eps_local == 0.1
    b = calculate(1.0, DELTA_KOS, N_KOS, 2, "fallback")
    assert b.eps_local == pytest.approx(5.982, abs=5e-4)


@pytest.mark.parametrize("eps_l", [0.05, 0.7, 2.0, 5.5])
@pytest.mark.parametrize("n_eff,k", [(8192, 2), (45_222, 41), (200_000 / 13, 9)])
def test_round_trip(eps_l, n_eff, k):
    delta = 1e-5
    eps_c = eps_c_from_local(eps_l, delta, n_eff, k)
    b = calculate(eps_c, delta, n_eff, k)
    if eps_c > 1:  # outside the theorem: no local epsilon from the closed form
        assert b.outside_theorem and not b.feasible
    else:
        assert b.eps_local == pytest.approx(eps_l, abs=1e-9)


def test_outside_the_theorem_gives_no_closed_form_budget():
    """Issue 21 item 4: eps_c > 1 used the closed form with only a warning (``sdp run srr-ms
    --epsilon 8`` claimed eps_c = 8); the blanket condition was never checked."""
    b = calculate(1.5, DELTA_KOS, N_KOS, 2)
    assert b.outside_theorem and b.eps_local is None and "eps_c <= 1" in b.reason
    # second condition: (n-1) eps_c >= 27 (e^eps_l + k - 1); at equality it reduces to
    # eps_c <= 14 ln(2/delta)/27, which fails for a huge delta
    b = calculate(1.0, 0.9, 10_000, 2)
    assert b.outside_theorem and "27" in b.reason
    assert closed_form_eps_local(1.0, 0.9, 10_000, 2) > 0


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(eps_c=0.0, delta=0.1, n_eff=100, k_eff=2),
        dict(eps_c=0.5, delta=1.0, n_eff=100, k_eff=2),
        dict(eps_c=0.5, delta=0.1, n_eff=1, k_eff=2),
        dict(eps_c=0.5, delta=0.1, n_eff=100, k_eff=1),
    ],
)
def test_bad_input(kwargs):
    with pytest.raises(ValueError):
        calculate(**kwargs)
    with pytest.raises(ValueError, match="policy"):
        calculate(0.5, 0.1, 100, 2, policy="loose")


# spec Sec. 12.2 (delta = 1/n): (n, n_eff, k_eff, threshold)
THRESHOLDS = [
    (65_536, 65_536, 2, 0.071),  # Kosarak PSRR-SS
    (65_536, 65_536 / 8, 2, 0.201),  # Kosarak SRR-MS
    (45_211, 45_211, 12, 0.206),  # Bank PSRR-SS
    (45_211, 45_211 / 17, 2, 0.347),
    (45_211, 45_211 / 17, 12, 0.849),
    (45_222, 45_222, 41, 0.381),  # Adult PSRR-SS
    (45_222, 45_222 / 15, 2, 0.326),
    (45_222, 45_222 / 15, 41, 1.474),
    (200_000, 200_000, 9, 0.090),  # Mexico PSRR-SS
    (200_000, 200_000 / 13, 2, 0.153),
    (200_000, 200_000 / 13, 9, 0.325),
]


@pytest.mark.parametrize("n,n_eff,k,thr", THRESHOLDS)
def test_thresholds_12_2(n, n_eff, k, thr):
    t = feasibility_threshold(1 / n, n_eff, k)
    assert round(t, 3) == thr
    above = calculate(t * 1.001, 1 / n, n_eff, k)
    assert above.feasible or (t > 1 and above.outside_theorem)
    assert not calculate(t * 0.999, 1 / n, n_eff, k).feasible


@pytest.mark.parametrize("n,coef", [(65_536, 397.3), (45_211, 283.0), (200_000, 1107.5)])
def test_arr_ss_domain_coefficient(n, coef):
    # ARR-SS feasible iff sum k < coef * eps_c^2
    assert round(balle_x(1.0, 1 / n, n), 1) == coef


def test_agrees_with_accountant_balle():
    accountant = pytest.importorskip("protocols.accountant")
    for n, d, ks in [(65_536, 8, [2]), (45_222, 15, [2, 7, 41]), (200_000, 13, [5, 9])]:
        for eps_c in (0.3, 0.5, 0.8, 1.0):
            for n_eff in (n, n // d):
                for k in ks:
                    ours = calculate_eps_local(eps_c, 1 / n, n_eff, k)
                    theirs = accountant.max_local_epsilon(
                        eps_c, n_eff, 1 / n, bound="balle", mechanism="grr", k=k
                    )
                    if theirs > eps_c:  # the closed form certifies amplification
                        # the accountant steps below float rounding so its forward bound
                        # never exceeds eps_c: agreement to 1e-8, never above the closed form
                        assert ours == pytest.approx(theirs, rel=1e-8)
                        assert theirs <= ours
                    else:  # nothing amplifies (or outside the theorem): eps_l = eps_c is the
                        # accountant's answer (never below eps_c), Calculate has none above it
                        assert theirs == eps_c
                        assert ours is None or ours <= eps_c or eps_c > 1
