"""Issue 40: a mix server's memory is predicted (about 7 kB per message at its peak, 4.2 kB of
a whole run's fullest moment: docs/scale.md "Memory"), so a mix-net run that cannot fit is
refused up front, and the 10^6-user run of docs/scale.md fits a 16 GB host."""

from __future__ import annotations

import os
import platform

import pytest

from parties.runtime import memory
from parties.runtime.memory import (
    BASE_BYTES,
    MIX_SERVER_AT_ONCE_BYTES_PER_MESSAGE,
    MIX_SERVER_BYTES_PER_MESSAGE,
    predict,
)


class _OneBatch:
    """A GRR-like protocol: one batch, no ``messages_per_user``."""

    def batch_specs(self) -> list[object]:
        return [object()]


def test_a_mix_server_is_predicted_from_the_batches():
    assert predict(_OneBatch(), 10**6, 2) is None  # trusted: no estimate, as before
    est = predict(_OneBatch(), 10**6, 2, mix_servers=3)
    assert est["mix_server"] == BASE_BYTES + 10**6 * MIX_SERVER_BYTES_PER_MESSAGE
    assert est["mix_server_at_once"] == 10**6 * MIX_SERVER_AT_ONCE_BYTES_PER_MESSAGE
    assert 5e9 < est["mix_server"] < 10e9  # 12.6 kB per user before the record was streamed


def test_a_mixnet_run_over_the_memory_is_refused_with_the_servers_named(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: (16e9, "the memory available"))
    why = memory.memory_refusal(_OneBatch(), 2 * 10**6, 2, 8, 200_000, mix_servers=3)
    assert why is not None and "each of the 3 mix servers 15.1 GB at its peak" in why
    assert "(8.4 GB at the run's fullest moment)" in why
    assert memory.memory_refusal(_OneBatch(), 10**6, 2, 8, 200_000, mix_servers=3) is None


def test_one_server_over_the_address_space_limit_is_refused(monkeypatch):
    monkeypatch.setattr(
        memory,
        "available_bytes",
        lambda: (6e9, "the address-space limit (RLIMIT_AS) of every party"),
    )
    why = memory.memory_refusal(_OneBatch(), 10**6, 2, 8, 200_000, mix_servers=3)
    assert why is not None and "8.07 GB at its peak" in why


@pytest.mark.parametrize("servers", [0, 3])
def test_the_estimate_grows_linearly_with_n(servers):
    class P:
        def messages_per_user(self) -> float:
            return 2.0

    a, b = predict(P(), 1000, 2, mix_servers=servers), predict(P(), 2000, 2, mix_servers=servers)
    if servers:
        assert b["mix_server"] - BASE_BYTES == 2 * (a["mix_server"] - BASE_BYTES)
    else:
        assert a["mix_server"] == 0.0


def test_the_allocator_bound_reaches_the_pool_workers(monkeypatch):
    for k in memory.MALLOC_ENV:
        monkeypatch.delenv(k, raising=False)
    applied = memory.bound_allocator()
    assert {k: os.environ[k] for k in memory.MALLOC_ENV} == memory.MALLOC_ENV  # children
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert applied  # and this process (mallopt)
