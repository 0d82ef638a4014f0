"""Hist_LWY (protocols/almost_single): the exact blanket accountant against the enumerated law
of the real shuffled messages, unbiasedness in both modes, releases, the workload."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import multiset_law
from conftest import sdp_run
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom, multinomial

from protocols.almost_single.blanket import blanket_delta, blanket_rate
from protocols.almost_single.lwy import HistLWY
from protocols.base import simulate, trusted_shuffle
from protocols.oracles.olh import olh_family
from protocols.params import EPSILON_DEFAULT
from protocols.privacy.ledger import USERS, PrivacyRefusal, gate
from protocols.rng import experiment_rng
from protocols.workloads import get_workload


def _identity_real_delta(eps: float, n: int, rho: float) -> float:
    """Hockey-stick divergence of the real histogram of messages over [3] (identity mode):
    target on 0 vs 1, the n - 1 others on 2; n floor(rho) + Bin(n, frac) uniform blanket."""
    whole, frac = math.floor(rho), rho - math.floor(rho)
    e, total = math.exp(eps), 0.0
    for extra in range(n + 1):
        pt = binom.pmf(extra, n, frac) if frac > 0 else float(extra == 0)
        if pt < 1e-300:
            continue
        t = n * whole + extra
        a = np.arange(t + 2)[:, None]
        b = np.arange(t + 2)[None, :]
        ok = a + b <= t
        pm = np.where(
            ok,
            multinomial.pmf(
                np.stack(np.broadcast_arrays(a, b, t - a - b), -1).clip(0), t, [1 / 3] * 3
            ),
            0.0,
        )
        # under X the observed (o0, o1) = (a + 1, b); under X' it comes from (a + 1, b - 1)
        px = pm[:-1, 1:]  # blanket (a, b) with b >= 1 shifted view
        pxp = pm[1:, :-1]
        lone = pm[:-1, 0].sum()  # b = 0: impossible under X' (the target's 1 is missing)
        total += pt * (float(np.maximum(px - e * pxp, 0).sum()) + float(lone))
    return total


def test_identity_accountant_equals_the_enumerated_real_output():
    n, eps, delta = 24, 1.0, 1e-3
    p = HistLWY(3, n, eps, delta, c=0.5)  # g = n/ln(n)^c >= 3: identity
    assert not p.hashed and p.g == 3
    real = _identity_real_delta(eps, n, p.rho)
    assert real == pytest.approx(blanket_delta(eps, n, p.rho, 3), rel=1e-6)
    assert real <= delta
    # the test can fail: half the blanket breaks the stated delta
    assert _identity_real_delta(eps, n, p.rho / 2) > 3 * delta


def _multiset_law(x: int, other: int, fam, eps: float) -> dict[tuple[int, ...], float]:
    """Exact law of the multiset of 4 hashed messages: two users (values x, other), one blanket
    message each (rho = 1), message = (a, b, y) coded as an integer."""
    P, g = fam.P, fam.g
    a, b = np.meshgrid(np.arange(1, P), np.arange(P), indexing="ij")
    a, b = a.ravel(), b.ravel()
    code = lambda a_, b_, y_: ((a_ - 1) * P + b_) * g + y_  # noqa: E731
    real_x = code(a, b, fam.hash(a, b, x))
    real_o = code(a, b, fam.hash(a, b, other))
    return multiset_law(real_x, real_o, (P - 1) * P * g)


def test_hashed_accountant_bounds_the_enumerated_real_output():
    fam = olh_family(5, 2, prime=5)
    lx, lxp = _multiset_law(0, 2, fam, 1.0), _multiset_law(1, 2, fam, 1.0)
    for eps in (0.5, 1.0, 2.0):
        real = sum(max(p - math.exp(eps) * lxp.get(k, 0.0), 0.0) for k, p in lx.items())
        bound = blanket_delta(eps, 2, 1.0, 2, fam.collision)
        assert 0 < real <= bound + 1e-12


@pytest.mark.parametrize("d,n", [(16, 20_000), (2048, 20_000)])
def test_unbiased_with_the_stated_variance(d, n):
    p = HistLWY(d, n, 1.0, 1e-6)
    assert p.hashed == (d > 20_000 / math.log(20_000) ** 2)
    x = np.arange(n) % min(d, 10)
    truth = np.bincount(x, minlength=d)
    errs = np.array(
        [
            np.asarray(p.analyze(p.encode(x, experiment_rng(4, "lwy", d, r)))["counts"]) - truth
            for r in range(20)
        ]
    )
    var = p.count_variance(truth)
    z = errs.mean(axis=0) / np.sqrt(var / errs.shape[0])
    assert np.abs(z).max() < 5
    assert 0.8 < errs.var(axis=0).mean() / var.mean() < 1.25
    assert p.messages_per_user() == pytest.approx(1 + p.rho)
    assert p.rho < 1  # almost a single message


def test_rate_meets_delta_and_is_below_lwys_constant():
    rho = blanket_rate(0.9, 1e-6, 100_000, 64)
    assert blanket_delta(0.9, 100_000, rho, 64) <= 1e-6 < blanket_delta(0.9, 100_000, 0.9 * rho, 64)
    mu = 100_000 * rho / 64
    assert mu < 32 * math.log(2 / 1e-6) / 0.9**2 / 5


def test_permutation_invariance_malformed_and_releases():
    p = HistLWY(32, 5000, 1.0, 1e-6)
    rng = np.random.default_rng(2)
    b = p.encode(np.arange(5000) % 32, rng)
    assert p.analyze(trusted_shuffle(b, rng))["counts"] == pytest.approx(p.analyze(b)["counts"])
    bad = {"reports": np.vstack([b["reports"], [[32], [-1]]])}
    assert p.analyze(bad)["invalid"] == 2
    rows = b["reports"].shape[0]
    full = gate(p, 0, {"reports": rows, USERS: 5000})
    assert full[0].eps == pytest.approx(1.0) and full[0].delta == 1e-6
    fewer = gate(p, 0, {"reports": rows // 2, USERS: 2500}, max_epsilon=10)
    assert fewer[0].reaccounted and fewer[0].eps > 1.0 and fewer[0].delta == 1e-6
    with pytest.raises(PrivacyRefusal):  # over the operator's cap
        gate(p, 0, {"reports": rows // 2, USERS: 2500}, max_epsilon=1.0)
    with pytest.raises(ValueError, match="domain"):
        HistLWY(1, 100, 1.0, 1e-6)
    with pytest.raises(ValueError, match="delta"):
        HistLWY(4, 100, 1.0, 0.0)


def test_workload_simulates_through_the_gate():
    w = get_workload("hist_lwy", {"users": 20_000, "domain": 16})
    ledger: list = []
    est = simulate(w.protocol, w.records, experiment_rng(16, "hist_lwy"), ledger=ledger)
    assert len(ledger) == 1 and ledger[0].eps == pytest.approx(EPSILON_DEFAULT)
    rep = w.report(est)
    assert rep["rmse"] < 3 * rep["expected_rmse"]


def test_sdp_run_hist_lwy_trusted(tmp_path):
    sdp_run(tmp_path, "hist_lwy", "trusted", "--users", "5000", "--domain", "16")


@pytest.mark.slow
@pytest.mark.parametrize("shuffler,users", [("mixnet", "1000"), ("mpc", "5000")])
def test_sdp_run_hist_lwy_networked(tmp_path, shuffler, users):
    sdp_run(tmp_path, "hist_lwy", shuffler, "--users", users, "--domain", "8")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(*[st.integers(-3, 5000)] * 3), max_size=30))
def test_hashed_analyzer_decodes_any_rows_without_crashing(rows):
    p = HistLWY(3000, 2000, 1.0, 1e-3)
    assert p.hashed
    f = p.family
    out = p.analyze({"reports": np.array(rows, dtype=np.int64).reshape(-1, 3)})
    ok = sum(1 <= a < f.P and 0 <= b < f.P and 0 <= y < f.g for a, b, y in rows)
    assert out["invalid"] == len(rows) - ok and len(out["counts"]) == 3000
