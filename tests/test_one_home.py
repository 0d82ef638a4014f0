"""Issue 39, item 4: each formula that used to be written several times now has one home.

Each test fails if a copy comes back: it checks by identity (the callers use the one function)
or by searching the layers' sources for the formula's text outside its home.
"""

from __future__ import annotations

import datetime
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("mpc", "protocols", "parties")


def _sources() -> dict[str, str]:
    out = {}
    for layer in LAYERS:
        for p in (ROOT / layer).rglob("*.py"):
            out[str(p.relative_to(ROOT))] = p.read_text()
    return out


def _files_matching(pattern: str) -> list[str]:
    rx = re.compile(pattern)
    return sorted(path for path, text in _sources().items() if rx.search(text))


def test_blanket_bound_lives_in_balle_only() -> None:
    # 14 ln(2/delta) (Balle et al.'s blanket constant) written out anywhere but its home
    assert _files_matching(
        r"(14(\.0)?|BLANKET_CONST)\s*\*\s*(k\s*\*\s*)?math\.log\(2(\.0)?\s*/"
    ) == ["protocols/accountant/balle.py"]
    from protocols.accountant import balle
    from protocols.hp_sdp.protocol import blanket_capacity, theorem1_epsilon
    from protocols.multidim.calculate import balle_x, eps_c_from_local

    # the callers agree with the home to the last bit (same expression, called)
    assert theorem1_epsilon(1.3, 7, 10_001, 1e-6) == balle.blanket_epsilon(1.3, 10_001, 1e-6, 7)
    assert eps_c_from_local(1.3, 1e-6, 10_001, 7) == balle.blanket_epsilon(1.3, 10_001, 1e-6, 7)
    assert blanket_capacity(0.5, 1e-6, 10_001) == balle.blanket_capacity(0.5, 10_001, 1e-6)
    assert balle_x(0.5, 1e-6, 10_001) == balle.blanket_capacity(0.5, 10_001, 1e-6)


def test_murs_condition_and_mse_have_one_home() -> None:
    from protocols.histograms import murs as survey_murs
    from protocols.hp_sdp import murs as hp_murs

    assert survey_murs.murs_eps_local is hp_murs.murs_eps_local
    assert survey_murs.murs_mse is hp_murs.murs_mse
    assert _files_matching(r"def murs_eps_local|def murs_mse") == ["protocols/hp_sdp/murs.py"]


def test_grr_report_variance_has_one_home() -> None:
    assert _files_matching(r"q \* \(1 - q\) \+ f \* \(p - q\) \* \(1 - p - q\)") == [
        "protocols/oracles/grr.py"
    ]


def test_accountant_has_one_bisection_loop_and_one_dispatch() -> None:
    acc = {p: t for p, t in _sources().items() if p.startswith("protocols/accountant/")}
    loops = sorted(p for p, t in acc.items() if re.search(r"mid = 0\.5 \* \(", t))
    assert loops == ["protocols/accountant/search.py"]
    from protocols.accountant import fmt21, search, variation_ratio

    assert not hasattr(variation_ratio, "_last_true")
    assert "max_local_for_target" in inspect.getsource(fmt21.fmt21_max_local_epsilon)
    assert "max_local_for_target" in inspect.getsource(variation_ratio.pair_max_local_epsilon)
    assert search.bisect_last_true(lambda x: x <= 0.3, 0.0, 1.0, abs_tol=1e-9) == pytest.approx(
        0.3, abs=1e-8
    )


def test_accountant_dispatch_is_one_table() -> None:
    import protocols.accountant as acc

    fwd = inspect.getsource(acc._amplify)
    inv = inspect.getsource(acc._max_local)
    for body in (fwd, inv):  # both ask the one router; neither re-derives its conditions
        assert "_route(bound, mechanism, k)" in body
        assert "_neutral_free" not in body and "k == 2" not in body


def test_lagrange_and_feldman_have_one_home_with_the_guard() -> None:
    from mpc import dkg, elgamal, threshold
    from mpc.mixnet import decryption, proof_checks
    from mpc.mixnet.proofs import dleq

    assert not hasattr(proof_checks, "lagrange0")
    assert not hasattr(proof_checks, "_eval_commit")
    assert not hasattr(elgamal, "lagrange_at_zero")
    assert dleq.lagrange_at_zero is threshold.lagrange_at_zero
    assert decryption.lagrange_at_zero is threshold.lagrange_at_zero
    assert proof_checks.commitment_at is threshold.commitment_at
    assert dkg.commitment_at is threshold.commitment_at
    # the guard the verifier's copy had lost: repeated evaluation points are refused
    with pytest.raises(ValueError, match="distinct and nonzero"):
        dleq.weighted_key(b"\x00" * 32, 1, [1, 1, 2])


def test_tls_certificates_have_one_builder(tmp_path: Path) -> None:
    from cryptography import x509

    from parties.mpc_shuffle.mpyc_runtime import write_mpyc_party_tls
    from parties.runtime import keys

    assert "CertificateBuilder" not in inspect.getsource(keys)
    assert "CertificateBuilder" not in inspect.getsource(write_mpyc_party_tls)

    def window(pem: bytes) -> datetime.timedelta:
        c = x509.load_pem_x509_certificate(pem)
        return c.not_valid_after_utc - c.not_valid_before_utc

    party = keys.make_party_key("p1", "127.0.0.1", tmp_path / "keys")
    mpyc = write_mpyc_party_tls(str(tmp_path / "mpyc"), 0, days=7)
    # the windows stay what each caller asked for (a parameter, not a second builder)
    assert abs(window(party) - datetime.timedelta(days=3651)) < datetime.timedelta(seconds=5)
    assert abs(window(mpyc) - datetime.timedelta(days=7, minutes=5)) < datetime.timedelta(seconds=5)


def test_lagrange_weights_have_one_home_for_both_fields() -> None:
    from mpc import lagrange, shamir, threshold

    # the weights' numerator product (histogram_arith's basis polynomials are another formula)
    assert _files_matching(r"num = num \* \(") == ["mpc/lagrange.py"]
    assert "lagrange_weights" in inspect.getsource(shamir._lagrange)
    assert "lagrange_weights" in inspect.getsource(threshold.lagrange_at_zero)
    # the same coefficients as interpolating by hand: f(x) = 3 + 5x + 7x^2 at 0 from 1, 2, 4
    xs = [1, 2, 4]
    f = [3 + 5 * x + 7 * x * x for x in xs]
    lam = lagrange.lagrange_weights(xs, 0, shamir.PRIME)
    assert sum(a * b for a, b in zip(lam, f)) % shamir.PRIME == 3
    assert list(shamir.lagrange_coefficients(xs)) == lam
    assert threshold.lagrange_at_zero(xs) == lagrange.lagrange_weights(xs, 0, threshold.L)


def test_binomial_tail_window_has_one_home() -> None:
    import numpy as np

    from protocols.accountant import crowd, gparv

    # the array window (variation_ratio's scalar window on a scipy law is another loop)
    assert _files_matching(r"act = act\[") == ["protocols/accountant/gparv.py"]
    assert not hasattr(gparv, "_window")
    assert "binomial_windows" in inspect.getsource(crowd._windows)
    n = np.array([40, 700])
    lo, hi = crowd._windows(n, 0.3, 1e-12)
    lo2, hi2 = gparv.binomial_windows(n, 0.3, 1e-12, z_extra=1.5, rounds=400)
    assert np.array_equal(lo, lo2) and np.array_equal(hi, hi2)
    # the window's promise: at most ``tail`` outside on each side
    assert (gparv._cdf(lo - 1, n, 0.3) <= 1e-12).all() and (
        gparv._sf(hi + 1, n, 0.3) <= 1e-12
    ).all()


def test_survey_forward_and_inverse_share_one_table() -> None:
    from protocols.accountant import survey
    from protocols.counting import cnt_rr

    assert set(survey._DISPATCH) == set(survey.THEOREMS)
    for t in ("forward", "inverse"):
        assert "_dispatch(" in inspect.getsource(getattr(survey, t))
        assert "if theorem ==" not in inspect.getsource(getattr(survey, t))
    assert "survey.forward(" in inspect.getsource(cnt_rr.central_from_local)
    assert "survey.inverse(" in inspect.getsource(cnt_rr.local_from_central)
    assert survey.inverse("theorem4", 0.5, 10**5, 1e-6, k=3) == survey.theorem4_inverse(
        0.5, 10**5, 1e-6, 3
    )


def test_catalogue_refusals_and_binomial_reaccounting_have_one_home() -> None:
    from protocols.counting import cnt_2m, cnt_bn

    # "no certified value -> ValueError(reason)": once, in the catalogue's base
    assert _files_matching(
        r"if not b\.valid or b\.value is None:\n\s+raise ValueError\(b\.reason\)"
    ) == ["protocols/catalogue/common.py"]
    for cls in (cnt_2m.Cnt2M, cnt_bn.CntBN):
        assert "binomial_reaccounted(" in inspect.getsource(cls.guarantee)
        assert "binomial_epsilon(" not in inspect.getsource(cls.guarantee)
