"""Issue 40: chunked, memory-bounded simulations (``protocols.simulation.chunked``): the same
estimate whatever the chunking and the executor, bad input refused, and on a real Dask cluster
(slow)."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from functools import lru_cache

import numpy as np
import pytest

from protocols.grr.workload import GRRProtocol, calibrate, zipf_values
from protocols.privacy.ledger import PrivacyRefusal
from protocols.simulation.chunked import ZipfRecords, simulate_chunked
from protocols.workloads import get_workload

N, K, BLOCK = 20_000, 10, 1_000


@lru_cache
def _grr(n: int = N, k: int = K) -> GRRProtocol:
    eps_l, privacy = calibrate(1.0, None, n, 1e-6, k, "vr")
    return GRRProtocol(k, eps_l, n, privacy)


def _run(chunk: int, executor=None, seed: int = 11, n: int = N) -> dict:  # noqa: ANN001
    return simulate_chunked(_grr(n), n, ZipfRecords(K), seed, chunk, executor, BLOCK)


def test_same_estimate_for_every_chunking_and_executor():
    ref = _run(BLOCK)
    assert ref["reports"] == N and ref["chunks"] == N // BLOCK
    with ThreadPoolExecutor(2) as threads, ProcessPoolExecutor(2) as procs:
        for chunk, ex in [(3 * BLOCK, None), (7 * BLOCK, threads), (N, procs), (2 * N, procs)]:
            got = _run(chunk, ex)
            assert got["frequencies"] == ref["frequencies"], (chunk, ex)
            assert got["chunks"] == -(-N // chunk)
    # the seed matters: another seed gives other noise
    assert _run(BLOCK, seed=12)["frequencies"] != ref["frequencies"]


def test_a_ragged_last_block_counts_every_user():
    n = 5 * BLOCK + 17
    assert _run(2 * BLOCK, n=n)["reports"] == n


def test_estimate_is_unbiased_enough():
    n = 200_000
    est = np.asarray(_run(10 * BLOCK, n=n)["frequencies"])
    p = 1.0 / np.arange(1, K + 1) ** 1.1
    truth = p / p.sum()
    assert np.abs(est - truth).max() < 0.02, (est, truth)
    assert np.asarray(zipf_values(10, K, 1.1, 0)).max() < K  # the law the source draws from


def test_chunks_must_be_whole_blocks():
    with pytest.raises(ValueError, match="multiple of block_users"):
        simulate_chunked(_grr(), N, ZipfRecords(K), 1, chunk_users=1500, block_users=BLOCK)
    with pytest.raises(ValueError, match="n must be >= 1"):
        simulate_chunked(_grr(), 0, ZipfRecords(K), 1)


def test_a_protocol_needing_more_than_a_histogram_is_refused():
    w = get_workload("psrr-ss", {"users": 2000})
    with pytest.raises(ValueError, match="needs more than a histogram"):
        simulate_chunked(w.protocol, 2000, ZipfRecords(K), 1)


def test_a_bad_record_source_is_named():
    def short(first: int, count: int, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(count - 1, np.int64)

    with pytest.raises(ValueError, match="record source gave 999 records for 1000 users"):
        simulate_chunked(_grr(), N, short, 1, BLOCK, None, BLOCK)


def test_the_gate_refuses_fewer_users_than_calibrated():
    # calibrated at 10x the users simulated: the guarantee does not cover the count received
    with pytest.raises(PrivacyRefusal):
        simulate_chunked(_grr(10 * N), N, ZipfRecords(K), 1, BLOCK, None, BLOCK, max_epsilon=1.0)


@pytest.mark.slow
def test_same_estimate_on_a_dask_cluster(tmp_path):
    pytest.importorskip("distributed")
    from test_dask_pool import DaskCluster

    from parties.runtime.pools import open_pool

    cluster = DaskCluster(tmp_path)
    try:
        with open_pool(cluster.spec, 1) as pool:
            got = _run(2 * BLOCK, pool.executor)
        assert got["frequencies"] == _run(5 * BLOCK)["frequencies"]
    finally:
        cluster.close()
