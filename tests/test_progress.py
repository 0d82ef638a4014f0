"""Progress bars move with the work (issue 43 item 5): during a small mix-net run every mix
server reports its hops done and its decryption shares checked with intermediate values, and the
client party its submissions sent server by server; no bar jumps from 0 straight to done."""

from __future__ import annotations

import asyncio

import numpy as np

from parties.mixnet.analyzer import receive_result
from parties.mixnet.client import run_clients
from parties.mixnet.server import run_mix_server
from parties.mixnet.state import MixnetConfig
from parties.runtime.memlink import MemoryNetwork
from protocols.base import BatchSpec

SERVERS = ["mix1", "mix2", "mix3"]


def _events() -> list[tuple[str, str, int, int]]:
    cfg = MixnetConfig(session_id="progress", servers=SERVERS, specs=[BatchSpec("a", 1, 8)])
    rows = {"a": np.random.default_rng(0).integers(0, 8, (6, 1))}
    net = MemoryNetwork(SERVERS + [cfg.clients, cfg.analyzer], timeout=30.0)

    async def main() -> list:
        return await asyncio.gather(
            *(run_mix_server(net.context(s), cfg, i) for i, s in enumerate(SERVERS, 1)),
            run_clients(net.context(cfg.clients), cfg, rows),
            receive_result(net.context(cfg.analyzer), cfg),
            return_exceptions=True,
        )

    for r in asyncio.run(main()):
        assert not isinstance(r, BaseException), r
    return net.progress


def _bar(events, party: str, label: str) -> list[tuple[int, int]]:
    return [(d, t) for p, lab, d, t in events if p == party and lab == label]


def test_the_bars_move_with_hops_shares_and_submissions():
    events = _events()
    for s in SERVERS:
        hops = _bar(events, s, "mix hops")
        assert hops == [(0, 3), (1, 3), (2, 3), (3, 3)], hops  # one step per server's hop
    # the combiner (the decryption set's first server) checks the set's shares one by one
    shares = _bar(events, "mix1", "decryption shares checked")
    assert shares[0][0] == 0 and shares[-1][0] == shares[-1][1] >= 2, shares
    assert any(0 < d < t for d, t in shares), shares
    sent = _bar(events, "clients", "submissions sent to servers")
    assert sent == [(1, 3), (2, 3), (3, 3)], sent
    for p, lab, d, t in events:  # every bar counts up within its total
        assert 0 <= d <= t, (p, lab, d, t)
