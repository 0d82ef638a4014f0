"""Issue 43 item 6: each party's ledger records its peak resident memory and its process-pool
workers' (read from /proc, kept after the pool shut down)."""

from __future__ import annotations

import sys

import pytest

from mpc.pools import peak_rss, process_pool
from parties.runtime.cost_ledger import CostLedger, bench_peak_rss

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

MB = 1 << 20


def _hold(mb: int) -> int:
    block = bytearray(mb * MB)
    block[::4096] = b"\x01" * len(block[::4096])  # touch every page: resident
    return len(block)


def test_a_workers_peak_is_kept_after_its_pool_shut_down() -> None:
    ledger = CostLedger("p")
    pool = process_pool(1)
    assert pool.submit(_hold, 120).result() == 120 * MB
    pool.shutdown()
    mem = ledger.to_json()["memory"]
    assert mem["pool_workers"] >= 1
    # the worker touched 120 MB: its high-water mark holds it, whatever it held before
    assert max(mem["pool_workers_peak_rss_bytes"]) >= 120 * MB
    assert mem["pool_workers_peak_rss_sum_bytes"] >= max(mem["pool_workers_peak_rss_bytes"])
    assert mem["peak_rss_bytes"] == pytest.approx(peak_rss(), rel=0.5)


def test_the_partys_own_peak_grows_with_what_it_held() -> None:
    before = peak_rss()
    assert before is not None and before > 0
    _hold(80)
    assert peak_rss() >= before + 60 * MB or peak_rss() >= 80 * MB
    assert peak_rss(2**22 + 12345) is None  # no such process: None, not an error


def test_bench_scripts_report_one_entry_per_party() -> None:
    out = bench_peak_rss("bench")
    assert set(out) == {"bench"} and out["bench"]["peak_rss_bytes"] > 0
