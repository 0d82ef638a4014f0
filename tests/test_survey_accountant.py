"""Survey accountant (Theorems 1-4, 9; composition; robust gamma) against hand-computed values,
the published anchor numbers, and its "not valid" answers."""

from __future__ import annotations

import math

import pytest

from protocols.accountant import survey


def test_theorem1_hand_value_and_conditions():
    # 12 * 0.5 * sqrt(ln(1e9)/1e4) = 6 * sqrt(20.7233/1e4)
    b = survey.theorem1(0.5, 10**4, 1e-9)
    assert b.valid and b.value == pytest.approx(6 * math.sqrt(math.log(1e9) / 1e4), rel=1e-12)
    assert b.value == pytest.approx(0.2731, abs=1e-4)
    for args, needle in (
        ((0.5, 999, 1e-9), "n >= 1000"),
        ((0.5, 10**4, 0.02), "delta <= 0.01"),
        ((0.6, 10**4, 1e-9), "eps_l <= 0.5"),
    ):
        bad = survey.theorem1(*args)
        assert not bad.valid and bad.value is None and needle in bad.reason
        assert bad.reason.startswith("not valid")
    inv = survey.theorem1_inverse(0.05, 10**5, 1e-9)
    assert inv.value == pytest.approx(0.05 / (12 * math.sqrt(math.log(1e9) / 1e5)))
    assert survey.theorem1_inverse(5.0, 10**5, 1e-9).value == 0.5  # regime cap


def test_theorem2_matches_the_published_blanket_numbers():
    # anchors-dp.md section 1.2 (BBGN-Bennett, generic randomizer, delta = 1e-6)
    for n, e, want in ((10**4, 1, 0.166), (10**4, 2, 0.518), (10**5, 1, 0.0485), (10**5, 4, 2.21)):
        assert survey.theorem2(e, n, 1e-6).value == pytest.approx(want, rel=0.01)
    assert survey.theorem2_inverse(1.0, 10**5, 1e-6).value == pytest.approx(3.64, rel=0.01)
    out = survey.theorem2(10.0, 10**4, 1e-6)
    assert not out.valid and "ln(n/ln(1/delta))/2" in out.reason
    # Hoeffding's explicit form is looser than Bennett's
    h = survey.theorem2(2.0, 10**5, 1e-6, method="hoeffding").value
    assert h > survey.theorem2(2.0, 10**5, 1e-6).value


def test_theorem3_hand_value_inverse_and_conditions():
    eps_l = math.log(3)  # lambda = 2/(3 + 1) = 1/2
    b = survey.theorem3(eps_l, 10**5, 1e-6)
    want = math.sqrt(32 * math.log(4e6) / (0.5 * 1e5)) * 0.5
    assert b.valid and b.blanket == pytest.approx(0.5) and b.value == pytest.approx(want)
    low = survey.theorem3(12.0, 10**4, 1e-6)  # lambda = 2/(e^12+1) below 14 ln(4/delta)/n
    assert not low.valid and "14 ln(4/delta)/n" in low.reason
    inv = survey.theorem3_inverse(0.9, 10**6, 1e-6)
    fwd = survey.theorem3(inv.value, 10**6, 1e-6)
    assert fwd.value <= 0.9 and fwd.value == pytest.approx(0.9, rel=1e-6)
    assert survey.theorem3_inverse(0.1, 10**4, 1e-9).value == pytest.approx(0.645, abs=1e-3)


def test_theorem3_loose_is_the_dropped_factor_version():
    tight = survey.theorem3(4.0, 10**6, 1e-6).value
    loose = survey.theorem3_loose(4.0, 10**6, 1e-6).value
    assert loose == pytest.approx(math.sqrt(16 * math.log(4e6) * (math.exp(4) + 1) / 1e6))
    assert tight < loose  # dropping (1 - lambda) <= 1 only loosens
    inv = survey.theorem3_loose_inverse(loose, 10**6, 1e-6)
    assert inv.value == pytest.approx(4.0, rel=1e-9)


def test_theorem4_table_values_and_invalid_cases():
    # the spec's recomputed Table 4 (k = 2, delta = 1e-9)
    for n, e, want in ((10**4, 0.3, 0.694), (10**5, 0.5, 4.411), (10**6, 0.9, 7.901)):
        assert survey.theorem4_inverse(e, n, 1e-9, 2).value == pytest.approx(want, abs=1e-3)
    none = survey.theorem4_inverse(0.1, 10**4, 1e-9, 2)
    assert not none.valid and "lambda" in none.reason and none.blanket > 1
    assert "eps_c <= 1" in survey.theorem4_inverse(1.5, 10**6, 1e-9, 2).reason
    # hand value of Eq. 8 and the forward round trip
    lam = survey.theorem4_lambda(0.5, 10**5, 1e-6, 8)
    assert lam == pytest.approx(
        max(14 * 8 * math.log(2e6) / (99999 * 0.25), 27 * 8 / (99999 * 0.5))
    )
    inv = survey.theorem4_inverse(0.5, 10**5, 1e-6, 8)
    assert inv.value == pytest.approx(math.log1p(8 * (1 - lam) / lam))
    assert survey.theorem4(inv.value, 10**5, 1e-6, 8).value == pytest.approx(0.5, rel=1e-9)
    assert not survey.theorem4(12.0, 10**4, 1e-6, 8).valid


def test_theorem9_composition_and_robust():
    e, d = survey.theorem9(1.0, 1e-6, 1e-10)
    assert e == 1.0 and d == pytest.approx(1e-6 + (1 + math.e) * 1e-10)
    s = survey.theorem9_sigma(0.9, 1e-12)
    assert (1 + math.exp(0.9)) * 2.0**-s <= 1e-12 < (1 + math.exp(0.9)) * 2.0 ** -(s - 1)
    assert survey.sequential([(0.3, 1e-7), (0.5, 2e-7)]) == pytest.approx((0.8, 3e-7))
    assert survey.parallel([(0.3, 1e-7), (0.5, 2e-8)]) == (0.5, 1e-7)
    assert survey.robust_users(1000, 0.9) == 900
    r = survey.robust(survey.theorem4, 5.0, 10**5, 1e-6, 0.5, k=2)
    assert r.value == pytest.approx(survey.theorem4(5.0, 50_000, 1e-6, 2).value)
    assert "ceil(gamma N) = 50000" in r.reason
    with pytest.raises(ValueError):
        survey.robust_users(10, 0.0)


def test_dispatch_and_bad_inputs():
    assert survey.forward("theorem4", 3.0, 10**6, 1e-6, k=4) == survey.theorem4(3.0, 10**6, 1e-6, 4)
    assert survey.inverse("theorem3_loose", 0.5, 10**6, 1e-6).theorem == "theorem3_loose"
    with pytest.raises(ValueError):
        survey.forward("theorem7", 1.0, 10**6, 1e-6)
    with pytest.raises(ValueError):
        survey.theorem4(1.0, 1, 1e-6, 2)
    with pytest.raises(ValueError):
        survey.theorem3(1.0, 10**4, 0.0)
