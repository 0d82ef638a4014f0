"""HP-SDP's comparison methods: calibration conditions, unbiasedness, exact variance, samplers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from protocols.base import simulate
from protocols.hp_sdp.baselines import (
    AUEProtocol,
    MixDUMPProtocol,
    PureDUMPProtocol,
    SHProtocol,
    blanket_mass,
    laplace_histogram,
    laplace_mse,
)
from protocols.hp_sdp.methods import SHUFFLE_BASELINES
from protocols.hp_sdp.murs import MURSProtocol
from protocols.hp_sdp.workload import build_protocol

N, D = 20_000, 30


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, D + 1) ** 1.1
    v = rng.choice(D, size=N, p=p / p.sum())
    c = np.bincount(v, minlength=D)
    return v, c, c / N


@pytest.mark.parametrize("method", ["sh", "aue", "murs", "pure-dump", "mix-dump", "hp-sm"])
@pytest.mark.parametrize("accounting", ["paper", "tight"])
def test_unbiased_exact_variance_and_sampler(method: str, accounting: str) -> None:
    v, c, f = _data()
    proto = build_protocol(method, D, N, 1.0, 1e-6, accounting)
    assert getattr(proto, "feasible", True)
    rng = np.random.default_rng(1)
    R = 30
    real = np.array([simulate(proto, v, rng)["raw_frequencies"] for _ in range(R)])
    var = proto.variance(f)
    z = (real.mean(0) - f) / np.sqrt(var / R)
    assert np.abs(z).max() < 4.5
    ratio = np.mean((real - f) ** 2) / var.mean()
    assert 0.7 < ratio < 1.4
    drawn = np.array([proto.sample(c, rng) for _ in range(R)])  # the experiments' sampler
    assert 0.7 < np.mean((drawn - f) ** 2) / var.mean() < 1.4


def test_sh_gamma_and_infeasible_policy() -> None:
    n, d, eps, delta = 600_000, 600, 0.5, 1e-6
    sh = SHProtocol(d, n, eps, delta)
    B = blanket_mass(eps, delta)
    assert sh.gamma_required == pytest.approx(max(B * d / (n - 1), 27 * d / ((n - 1) * eps)))
    assert sh.feasible and sh.gamma == pytest.approx(0.81, abs=0.01)  # spec 14 table
    bad = SHProtocol(d, n, 0.1, delta)
    assert not bad.feasible and bad.gamma_required > 20
    v, c, f = _data()
    small = SHProtocol(D, N, 0.1, 1e-6)
    assert not small.feasible
    out = simulate(small, v, np.random.default_rng(2))
    np.testing.assert_allclose(out["frequencies"], np.full(D, 1 / D))
    assert out["feasible"] is False
    np.testing.assert_allclose(small.variance(f), (f - 1 / D) ** 2)


def test_blanket_conditions_hold() -> None:
    n, d, eps, delta = 600_000, 600, 0.3, 1e-7
    B = blanket_mass(eps, delta)
    aue = AUEProtocol(d, n, eps, delta)
    assert aue.q * (n - 1) == pytest.approx(B)
    pure = PureDUMPProtocol(d, n, eps, delta)
    assert pure.s * (n - 1) / d >= B > (pure.s - 1) * (n - 1) / d
    mix = MixDUMPProtocol(d, n, eps, delta)
    assert 1 <= mix.s <= pure.s
    assert (mix.gamma + mix.s) * (n - 1) / d >= B * (1 - 1e-12)
    murs = MURSProtocol(d, n, eps, delta)
    blanket = (n - 1) / (math.exp(murs.eps_l) + murs.g - 1) + murs.r * (n - 1) / murs.g
    assert blanket >= B * (1 - 1e-9)


def test_communication() -> None:
    n, d = 600_000, 600
    assert SHProtocol(d, n, 0.5, 1e-6).messages_per_user() == 1
    pure = PureDUMPProtocol(d, n, 0.5, 1e-6)
    assert pure.messages_per_user() == 1 + pure.s
    assert pure.bits_per_user() == (1 + pure.s) * math.ceil(math.log2(d))
    aue = AUEProtocol(d, n, 0.5, 1e-6)
    assert aue.messages_per_user() == pytest.approx(1 + d * aue.q)


def test_murs_fakes_counted_by_analyzer() -> None:
    v, c, f = _data(3)
    murs = MURSProtocol(D, N, 0.5, 1e-6)
    out = simulate(murs, v, np.random.default_rng(4))
    assert out["fakes"] == out["reports"] - N
    assert abs(out["fakes"] - murs.r * N) < 6 * math.sqrt(N) + 1
    with pytest.raises(ValueError, match="valid messages"):
        murs.analyze({"reports": murs.encode(v[:100], np.random.default_rng(5))["reports"]})


def test_laplace_sensitivity_two() -> None:
    _, c, f = _data()
    rng = np.random.default_rng(6)
    errs = [np.mean((laplace_histogram(c, 0.5, rng) - f) ** 2) for _ in range(400)]
    assert laplace_mse(N, 0.5) == pytest.approx(8 / (N**2 * 0.25), rel=3e-3)  # grid: +2^-10
    assert 0.9 < np.mean(errs) / laplace_mse(N, 0.5) < 1.1


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="accounting"):
        SHProtocol(10, 100, 0.5, 1e-6, "fancy")
    with pytest.raises(ValueError, match="domain size"):
        AUEProtocol(1, 100, 0.5, 1e-6)
    with pytest.raises(ValueError, match="eps_c"):
        PureDUMPProtocol(10, 100, -1.0, 1e-6)
    with pytest.raises(ValueError, match="unknown method"):
        build_protocol("nope", 10, 100, 0.5, 1e-6, "paper")
    with pytest.raises(ValueError, match=r"values must lie"):
        SHProtocol(10, 1000, 1.0, 1e-6).encode(np.array([10]), np.random.default_rng(0))
    assert set(SHUFFLE_BASELINES) == {"sh", "aue", "murs", "pure-dump", "mix-dump"}


def test_workload_methods_report() -> None:
    from protocols.workloads import get_workload

    for method in ("hp-sdp", "aue", "murs"):
        w = get_workload(
            "hp-sdp", {"users": 5000, "epsilon": 1.0, "method": method, "dataset": "normal"}
        )
        rep = w.report(simulate(w.protocol, w.records, np.random.default_rng(7)))
        assert rep["method"] == method and len(rep["table"]["rows"]) == 20
        assert rep["mse"] > 0 and rep["expected_mse_before_pop"] > 0


@pytest.mark.parametrize("cls", [MixDUMPProtocol, MURSProtocol])
def test_tight_never_worse_than_paper(cls: type) -> None:
    f = np.full(600, 1 / 600)
    for eps in (0.2, 1.0):
        paper = cls(600, 600_000, eps, 1e-6, "paper")
        tight = cls(600, 600_000, eps, 1e-6, "tight")
        assert tight.variance(f).mean() <= paper.variance(f).mean() * (1 + 1e-12)
