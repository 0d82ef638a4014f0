"""Shuffler-side defences: the noisy threshold's minimum-batch guarantee and the fakes' blanket."""

from __future__ import annotations

import math

import numpy as np
import pytest

from protocols.base import BatchSpec
from protocols.defences import fake_messages as fm
from protocols.defences import noisy_threshold as nt
from protocols.rng import experiment_rng


def test_threshold_beta_exact_and_simulated():
    t = nt.threshold_for_minimum(1000, 0.5, 1e-3)
    beta = nt.release_probability_below(1000, t, 0.5)
    assert beta <= 1e-3 < nt.release_probability_below(1000, t - 1, 0.5)
    a = math.exp(-0.5)
    assert beta == pytest.approx(a ** (t - 999) / (1 + a))
    rng = experiment_rng(15, "thr")
    rel = [nt.threshold_release(999, t, 0.5, rng)[0] for _ in range(20_000)]
    assert np.mean(rel) < 1e-3 + 4 * math.sqrt(1e-3 / 20_000)
    big = [nt.threshold_release(t + 40, t, 0.5, rng)[0] for _ in range(500)]
    assert np.mean(big) > 0.99
    assert nt.accounted_with_threshold(0.9, 1e-6, 0.1, 1e-7) == pytest.approx((1.0, 1.1e-6))


def test_fakes_blanket_and_injection():
    base = fm.blanket_epsilon_with_fakes(6.0, 32, 10**6, 0, 1e-6)
    more = fm.blanket_epsilon_with_fakes(6.0, 32, 10**6, 50_000, 1e-6)
    assert more < base  # fakes only add blanket
    assert fm.fake_only_epsilon(32, 10**6, 1e-6) == pytest.approx(
        math.sqrt(14 * 32 * math.log(2e6) / 1e6)
    )
    assert fm.fake_only_epsilon(32, 100, 1e-6) is None  # > 1: outside Theorem 4
    assert fm.fakes_per_shuffler(10**6, 0.01, 3) == 3334
    spec = BatchSpec("reports", 2, 50)
    rng = experiment_rng(15, "fakes")
    out = fm.shuffle_with_fakes(
        {"reports": np.zeros((100, 2), dtype=np.int64)}, [spec], {"reports": 1000}, rng
    )
    r = out["reports"]
    assert r.shape == (1100, 2) and r.max() < 50
    assert abs(np.mean(r[r[:, 0] != 0, 0]) - 25) < 2
