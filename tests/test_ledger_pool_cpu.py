"""The cost ledger counts the CPU of the party's process-pool workers."""

from __future__ import annotations

import sys

import pytest

from mpc.pools import process_pool
from parties.runtime.cost_ledger import CostLedger


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_worker_cpu_goes_to_the_phase_that_used_it() -> None:
    ledger = CostLedger("p")
    with process_pool(2) as pool:
        pool.submit(int).result()  # start the workers
        ledger.enter("idle")
        ledger.enter("work")
        list(pool.map(_spin, [3_000_000, 3_000_000]))  # ~0.2-1 s of CPU in the workers
        ledger.enter("after")
        rows = {p["phase"]: p["totals"] for p in ledger.to_json()["phases"]}
    # the party process itself only waited, so the CPU must come from the workers
    assert rows["work"]["cpu_s"] > 0.15
    assert rows["idle"]["cpu_s"] < 0.1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_worker_cpu_of_a_pool_shut_down_inside_the_phase_is_kept() -> None:
    ledger = CostLedger("q")
    ledger.enter("work")
    pool = process_pool(1)
    pool.submit(_spin, 3_000_000).result()
    pool.shutdown()  # before the phase ends: the workers' CPU was read at shutdown
    ledger.enter("after")
    ledger.enter("later")  # the shut-down workers' CPU is not counted a second time
    rows = {p["phase"]: p["totals"] for p in ledger.to_json()["phases"]}
    assert rows["work"]["cpu_s"] > 0.1
    assert rows["after"]["cpu_s"] < 0.1 and rows["later"]["cpu_s"] < 0.1
