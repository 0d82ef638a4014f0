"""Pure epsilon (delta = 0) of shuffled views, by exact enumeration (protocols/pure_dp/exact.py).

The laws (protocols/pure_dp/laws.py) are each protocol's per-user law over (zeros, ones) message counts, written from
its parameters and checked against its real encoder's frequencies; the enumeration then gives
the exact pure epsilon of the shuffled multiset at small n. Findings: shuffled Boolean RR is pure
only at its local epsilon (never at the amplified central one), and Cnt_BN and Cnt_2M are not
pure at any n (the event "no message 1" has probability 0 for a user holding 1).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from protocols.accountant.survey import rr_lambda
from protocols.counting.cnt_2m import Cnt2M, two_message_counts
from protocols.counting.cnt_bn import CntBN
from protocols.counting.cnt_rr import CntRR
from protocols.pure_dp.audit import pure_audit
from protocols.pure_dp.exact import empirical_law, face_bound, pure_epsilon, view_law
from protocols.pure_dp.laws import bit_plus_noise_law, counting_laws, rr_law, two_message_law
from protocols.rng import experiment_rng

SAMPLES = 200_000


def _close(law: np.ndarray, emp: np.ndarray) -> None:
    assert ((emp > 0) <= (law > 0)).all(), "the encoder sent a count vector the law excludes"
    assert np.abs(law - emp).max() < 5 * math.sqrt(0.25 / SAMPLES)


def test_shuffled_rr_is_pure_exactly_at_its_local_epsilon_never_at_its_central_one():
    proto = CntRR(2000, 0.9, 1e-6)
    rng = experiment_rng(3, "pure-rr")
    for x in (0, 1):
        bits = proto.encode(np.full(SAMPLES, x), rng)["bits"][:, 0]
        _close(rr_law(proto.lam, x), empirical_law(np.stack([1 - bits, bits], 1), (2, 2)))
    laws = [rr_law(proto.lam, 0), rr_law(proto.lam, 1)]
    for n in (1, 2, 5, 12):
        eps = pure_epsilon(laws, n).eps
        assert eps == pytest.approx(proto.eps_l, rel=1e-12)
    assert face_bound(laws) == pytest.approx(proto.eps_l, rel=1e-12)
    assert proto.eps_c < 0.5 * proto.eps_l  # amplification is only approximate DP


def test_cnt_bn_and_cnt_2m_are_not_pure_at_any_n():
    bn = CntBN(3000, 0.9, 1e-6)
    rng = experiment_rng(3, "pure-bn")
    shape = (bn.t + 2, bn.t + 2)
    for x in (0, 1):
        msgs = bn.encode(np.full(SAMPLES, x), rng)["bits"].reshape(SAMPLES, 1 + bn.t)
        ones = msgs.sum(axis=1)
        emp = empirical_law(np.stack([1 + bn.t - ones, ones], 1), shape)
        _close(bit_plus_noise_law(bn.t, bn.p, x), emp)
    laws = [bit_plus_noise_law(bn.t, bn.p, 0), bit_plus_noise_law(bn.t, bn.p, 1)]
    assert math.isinf(face_bound(laws))
    assert math.isinf(pure_epsilon(laws, 4).eps)

    two = Cnt2M(200_000, 0.9, 1e-6)
    for x in (0, 1):
        k = two_message_counts(np.full(SAMPLES, x), two.p, rng)
        _close(two_message_law(two.p, x), empirical_law(k[:, None], (3,)))
    laws = [two_message_law(two.p, 0), two_message_law(two.p, 1)]
    assert math.isinf(face_bound(laws)) and math.isinf(pure_epsilon(laws, 4).eps)


def test_a_wrong_parameter_is_caught():
    """RR claimed pure at eps = 0.5 but run with the lambda of eps = 0.6: the check fails."""
    claimed = 0.5
    good = [rr_law(rr_lambda(claimed, 2), x) for x in (0, 1)]
    wrong = [rr_law(rr_lambda(0.6, 2), x) for x in (0, 1)]
    assert pure_epsilon(good, 6).eps <= claimed + 1e-12
    assert pure_epsilon(wrong, 6).eps > claimed + 0.05


def test_k_ary_rr_pure_epsilon_over_three_inputs():
    k, eps_l = 3, 1.1
    lam = rr_lambda(eps_l, k)
    laws = []
    for x in range(k):
        law = np.zeros((2, 2, 2))  # one message of type 0, 1 or 2
        for y in range(k):
            idx = [0, 0, 0]
            idx[y] = 1
            law[tuple(idx)] = 1 - lam + lam / k if y == x else lam / k
        laws.append(law)
    cert = pure_epsilon(laws, 4)
    assert cert.eps == pytest.approx(eps_l, rel=1e-12) and cert.datasets == math.comb(5, 2)


def test_epsilon_is_non_increasing_in_n_and_above_the_face_bound():
    rng = np.random.default_rng(5)
    for _ in range(5):
        laws = [rng.random((3, 3)) + 0.05 for _ in range(2)]
        laws = [law / law.sum() for law in laws]
        eps = [pure_epsilon(laws, n).eps for n in range(1, 7)]
        assert all(b <= a + 1e-12 for a, b in zip(eps, eps[1:], strict=False))
        assert face_bound(laws) <= eps[-1] + 1e-12


def test_view_law_sums_to_one_and_bad_input_is_refused():
    laws = [rr_law(0.4, 0), rr_law(0.4, 1)]
    assert view_law(laws, [2, 3]).sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="shape"):
        pure_epsilon([np.ones(2) / 2, np.ones(3) / 3], 2)
    with pytest.raises(ValueError, match="probability"):
        pure_epsilon([np.ones(2), np.ones(2) / 2], 2)
    with pytest.raises(ValueError, match="n must be"):
        pure_epsilon(laws, 0)


def test_underflow_is_refused_not_skipped():
    m, lam = 3, 0.02
    laws = []
    for x in (0, 1):
        law = np.full(m + 1, lam / (m + 1))
        law[1 + x] += 1 - lam
        laws.append(law)
    with pytest.raises(ArithmeticError, match="underflow"):
        pure_epsilon(laws, 200)


def test_audit_of_the_catalogue_counting_protocols():
    a = pure_audit(100_000, 0.9, 1e-6)
    rr = a["cnt_rr"]
    assert rr["exact_every_n"] and rr["pure_eps_lower_every_n"] == pytest.approx(rr["eps_local"])
    assert rr["pure_eps_lower_every_n"] > 2 * 0.9
    for name in ("cnt_bn", "cnt_2m"):
        assert a[name]["pure_eps_lower_every_n"] is None and a[name]["exact_every_n"]
    assert counting_laws(CntRR(1000, 0.9, 1e-6))[0].shape == (2, 2)
    with pytest.raises(TypeError, match="no per-user law"):
        counting_laws(object())


def test_seed004_c5_evidence_carries_the_audit():
    from parties.reproduce.seed004 import report

    text = report._pure_evidence(pure_audit(50_000, 0.9, 1e-6))
    assert "pure only at its local eps_l" in text and "not pure at any n" in text
    assert report._pure_evidence(None) == ""
