"""Issue 40: a mix server's memory is predicted (it keeps the run's public record: about 12 kB
per message, docs/scale.md "Memory"), so a mix-net run that cannot fit is refused up front."""

from __future__ import annotations

import pytest

from parties.runtime import memory
from parties.runtime.memory import BASE_BYTES, MIX_SERVER_BYTES_PER_MESSAGE, predict


class _OneBatch:
    """A GRR-like protocol: one batch, no ``messages_per_user``."""

    def batch_specs(self) -> list[object]:
        return [object()]


def test_a_mix_server_is_predicted_from_the_batches():
    assert predict(_OneBatch(), 10**6, 2) is None  # trusted: no estimate, as before
    est = predict(_OneBatch(), 10**6, 2, mix_servers=3)
    assert est["mix_server"] == BASE_BYTES + 10**6 * MIX_SERVER_BYTES_PER_MESSAGE
    assert est["mix_server"] > 10e9  # the 10^6 run of docs/scale.md needs > 10 GB per server


def test_a_mixnet_run_over_the_memory_is_refused_with_the_servers_named(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: (16e9, "the memory available"))
    why = memory.memory_refusal(_OneBatch(), 10**6, 2, 8, 200_000, mix_servers=3)
    assert why is not None and "each of the 3 mix servers 13.1 GB" in why
    assert memory.memory_refusal(_OneBatch(), 10**5, 2, 8, 200_000, mix_servers=3) is None


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
