"""FE1 (protocols/almost_single/fe1.py): the authors' reference values, the hash family and its
decoders against direct evaluation, the estimator's bias and variance, the exact enumeration of
the shuffled multiset against the stated (eps, delta), the workload and ``sdp run fe1``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import multiset_law
from conftest import sdp, sdp_run

from protocols.almost_single.binomial_mu import authors_mu, binomial_condition
from protocols.almost_single.blanket import blanket_delta
from protocols.almost_single.fe1 import FE1, FE1Parameters, fe1_parameters
from protocols.almost_single.fe1_workload import error_quantiles
from protocols.almost_single.modhash import (
    collision_probability,
    count_candidates,
    decode_range,
    fe1_hash,
    invmod,
    mulmod,
)
from protocols.base import simulate, trusted_shuffle
from protocols.oracles.olh import olh_family
from protocols.privacy.record import Published
from protocols.rng import experiment_rng
from protocols.workloads import get_workload


@pytest.mark.parametrize(
    "c,b,pcol,messages", [(1, 8685, 1.1508e-4, 9.508), (3, 65, 0.0153846, 1.0637)]
)
def test_the_authors_reference_values(c, b, pcol, messages):
    """n = 10^5, B = 2^24, eps = 1, delta = 1e-10 (result/fe,aol01,... of hkustDB/SDPFE)."""
    p = FE1(1 << 24, 100_000, 1.0, 1e-10, c=c)
    assert (p.p.b, p.p.q) == (b, 16777259)
    assert p.p.mu == pytest.approx(97.9614, abs=1e-4)
    assert p.p.pcol == pytest.approx(pcol, rel=1e-4)
    assert p.messages_per_user() == pytest.approx(messages, abs=5e-4)


def test_binomial_condition_holds_at_mu_and_fails_below():
    n, eps, delta = 2000, 1.0, 1e-6
    mu = authors_mu(eps, delta, n)
    assert binomial_condition(mu / n, n, eps) <= delta < binomial_condition((mu - 1) / n, n, eps)


def test_collision_probability_is_the_residue_class_sum():
    for q, b in ((5, 2), (4099, 263), (16777259, 8685), (16777259, 65)):
        assert collision_probability(q, b) == pytest.approx(
            olh_family(q - 1, b, prime=q).collision, rel=1e-12
        )


def test_mulmod_and_inverse_are_exact_up_to_2_to_48():
    rng = np.random.default_rng(1)
    for q in (5, 16777259, (1 << 47) + 5, (1 << 48) - 59):
        a, x = rng.integers(0, q, 200), rng.integers(0, q, 200)
        assert mulmod(a, x, q).tolist() == [int(i) * int(j) % q for i, j in zip(a, x)]
        a = np.maximum(a, 1)
        assert ((mulmod(invmod(a, q), a, q)) == 1).all()
    with pytest.raises(ValueError, match="2\\^48"):
        mulmod(np.array([1]), 1, 1 << 49)


@pytest.mark.parametrize("q,b", [(5, 2), (1031, 37), (4099, 263)])
def test_full_decoding_equals_direct_evaluation(q, b):
    rng = np.random.default_rng(q)
    m = 300
    u, v, w = rng.integers(1, q, m), rng.integers(0, q, m), rng.integers(0, b, m)
    ids = np.arange(q)
    direct = (fe1_hash(u[:, None], v[:, None], ids[None, :], q, b) == w[:, None]).sum(axis=0)
    assert decode_range(u, v, w, q, b, 0, q).tolist() == direct.tolist()
    assert decode_range(u, v, w, q, b, 1, q - 1).tolist() == direct[1 : q - 1].tolist()
    assert count_candidates(u, v, w, q, b, ids[::7]).tolist() == direct[::7].tolist()


def test_unbiased_with_the_stated_variance():
    n, B = 5000, 512
    p = FE1(B, n, 1.0, 1e-6, c=1)
    x = np.arange(n) % 11
    truth = np.bincount(x, minlength=B)
    errs = np.array(
        [
            np.asarray(p.analyze(p.encode(x, experiment_rng(7, "fe1", r)))["counts"]) - truth
            for r in range(30)
        ]
    )
    var = p.count_variance(truth)
    z = errs.mean(axis=0) / np.sqrt(var / errs.shape[0])
    assert np.abs(z).max() < 5
    assert 0.85 < errs.var(axis=0).mean() / var.mean() < 1.15


def _law(x: int, other: int, q: int, b: int) -> dict[tuple[int, ...], float]:
    """Exact law of the multiset of 4 messages of FE1 with 2 users (ids x, other) and one dummy
    each (rho = 1): every (u, v) of the real messages and every dummy enumerated."""
    u, v = np.meshgrid(np.arange(1, q), np.arange(q), indexing="ij")
    u, v = u.ravel(), v.ravel()
    code = lambda u_, v_, w_: ((u_ - 1) * q + v_) * b + w_  # noqa: E731
    rx, ro = code(u, v, fe1_hash(u, v, x, q, b)), code(u, v, fe1_hash(u, v, other, q, b))
    return multiset_law(rx, ro, (q - 1) * q * b)


def test_exact_enumeration_of_the_shuffled_multiset_meets_the_stated_guarantee():
    q, b = 5, 2  # ids 1..3 of a domain B = 3
    params = FE1Parameters(
        n=2, B=3, c=1.0, b=b, q=q, mu=1.0, pcol=collision_probability(q, b), blanket="authors"
    )
    assert params.rho == 1.0
    p = FE1.from_parameters(params, eps_c=1.0, delta=0.3)
    lx, lxp = _law(1, 3, q, b), _law(2, 3, q, b)
    real = lambda e: sum(max(pr - math.exp(e) * lxp.get(k, 0.0), 0.0) for k, pr in lx.items())  # noqa: E731
    g = p.guarantee(2)
    assert real(g.eps) <= g.delta
    assert real(g.eps) <= blanket_delta(g.eps, 2, 1.0, b, params.pcol) + 1e-12
    assert real(0.0) > g.delta  # the enumeration can fail: no privacy at eps = 0


def test_malformed_messages_and_bad_input():
    p = FE1(64, 500, 1.0, 1e-4)
    b = p.encode(np.arange(500) % 64, np.random.default_rng(0))
    q = p.p.q
    bad = {"reports": np.vstack([b["reports"], [[0, 1, 1], [1, q, 0], [1, 1, p.p.b]]])}
    assert p.analyze(bad)["invalid"] == 3
    assert p.analyze(trusted_shuffle(b, np.random.default_rng(1)))["counts"] == pytest.approx(
        p.analyze(b)["counts"]
    )
    with pytest.raises(ValueError, match="values"):
        p.encode(np.array([64]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="candidate"):
        FE1(1 << 25, 500, 1.0, 1e-4)
    with pytest.raises(ValueError, match="blanket"):
        fe1_parameters(500, 64, 1.0, 1e-4, 1.0, "other")


def test_candidate_list_estimates_equal_the_full_decoding():
    p = FE1(4096, 3000, 1.0, 1e-5)
    cand = np.array([0, 5, 4095, 77])
    pc = FE1(4096, 3000, 1.0, 1e-5, candidates=cand)
    batches = p.encode(np.arange(3000) % 100, np.random.default_rng(3))
    full = np.asarray(p.analyze(batches)["counts"])
    out = pc.analyze(batches)
    assert out["candidates"] == cand.tolist()
    assert out["counts"] == pytest.approx(full[cand].tolist())


def test_error_quantiles_follow_the_authors_indexing():
    q = error_quantiles(np.arange(10, dtype=float), np.zeros(10))
    assert q == {"p50": 4.0, "p90": 8.0, "p99": 9.0, "linf": 9.0}


def test_workload_simulates_through_the_gate_with_our_accountant():
    w = get_workload("fe1", {"users": 3000, "domain": 1024})
    ledger: list = []
    est = simulate(w.protocol, w.records, experiment_rng(3, "fe1w"), ledger=ledger)
    assert (
        len(ledger) == 1 and ledger[0].eps <= 1.0 and ledger[0].delta == pytest.approx(1 / 3000**2)
    )
    rep = w.report(est)
    assert rep["p50"] < 2 * rep["expected_rmse"]
    priv = rep["privacy"]
    assert isinstance(priv, Published)  # built by the privacy-statement record
    assert priv["mu_exact"] < priv["mu_authors"] and priv["smaller_mu"] == "exact accountant"
    assert priv["exact_delta_at_target"] <= priv["delta"]


def run_and_verify(tmp_path, name: str, shuffler: str, *extra: str) -> dict:
    """``sdp run NAME`` (verified at the end of the run), then ``sdp verify`` on its directory
    with its trust anchor, which must pass too."""
    res = sdp_run(tmp_path, name, shuffler, *extra)
    run_dir = tmp_path / f"{name}-{shuffler}"
    trust = run_dir.with_name(run_dir.name + ".trust.json")
    out = sdp("verify", str(run_dir), "--trust", str(trust), timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "verified" in out.stdout
    return res


def test_sdp_run_fe1_trusted(tmp_path):
    run_and_verify(tmp_path, "fe1", "trusted", "--users", "2000", "--domain", "256")


@pytest.mark.slow
@pytest.mark.parametrize("shuffler,users", [("mixnet", "300"), ("mpc", "2000")])
def test_sdp_run_fe1_networked(tmp_path, shuffler, users):
    run_and_verify(
        tmp_path, "fe1", shuffler, "--users", users, "--domain", "64", "--param", "hash_exponent=3"
    )
