"""Seed 000 datasets: shapes, domains, the bundled Adult copy."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.datasets import categorical as D

RAW = D.default_data_dir()
need_raw = pytest.mark.skipif(not (RAW / "adult").is_dir(), reason="raw datasets not present")


def test_bundled_adult_shape():
    ds = D.load_adult()
    assert (ds.n, ds.d, ds.k_max) == (45_222, 15, 41)
    assert ds.records.dtype == np.int64
    assert round(float(np.mean(np.log2(ds.domain_sizes))), 2) == 3.40  # Table 4, SRR-MS
    ks = np.asarray(ds.domain_sizes)
    assert (ks == 2).sum() == 2 and (ks == 3).sum() == 0  # only sex and income are binary
    assert (ds.records < ks).all() and (ds.records >= 0).all()
    for m in ds.marginals():
        assert m.sum() == pytest.approx(1.0)
    assert D.BUNDLED_ADULT.stat().st_size < 1_000_000


@need_raw
def test_bundle_matches_raw():
    raw, bundled = D.load_adult(RAW), D.load_adult()
    assert raw.domain_sizes == bundled.domain_sizes
    assert raw.attributes == bundled.attributes
    np.testing.assert_array_equal(raw.records, bundled.records)


@need_raw
def test_kosarak():
    k = D.load_kosarak(RAW)
    assert k.d == 8 and k.domain_sizes == (2,) * 8 and k.n > 36_000
    freq = k.records.mean(axis=0)
    assert (np.diff(freq) <= 0).all()  # most frequent item first
    s = D.load_kosarak_synthetic(RAW)
    assert s.n == 65_536
    assert np.abs(s.records.mean(axis=0) - freq).max() < 0.01
    np.testing.assert_array_equal(s.records, D.load_kosarak_synthetic(RAW).records)


@pytest.mark.slow
@need_raw
def test_census_income():
    c = D.load_census_income(RAW)
    assert (c.n, c.d, c.k_max) == (200_000, 13, 9)
    assert all(len(np.unique(c.records[:, j])) == k for j, k in enumerate(c.domain_sizes))


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="data_dir"):
        D.load_kosarak(tmp_path)
    with pytest.raises(ValueError, match="Bank"):
        D.load_dataset("bank")
