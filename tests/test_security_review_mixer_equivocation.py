"""Issue 25 item 7, H2: a mixer that equivocates is named, not the honest server after it.

Server 1 sends one valid, proven mix step to server 2 and another valid, proven step (fresh
randomness) to server 3. On 27f5c45 server 3 rejected server 2's honest step built on the other
list and recorded "server 2 mix rejected", blaming the honest server. Now every step is signed
by its mixer and names (signed) the step it built on: server 3 holds two different steps signed
by server 1 and aborts naming server 1; it releases no decryption share.
"""

from __future__ import annotations

import asyncio

import numpy as np

import parties.mixnet.server as server_mod
from mpc.mixnet.record_verifier import verify_record
from parties.mixnet.analyzer import receive_result
from parties.mixnet.client import run_clients
from parties.mixnet.record import public_record
from parties.mixnet.server import run_mix_server
from parties.mixnet.state import MixnetConfig, ServerState
from parties.runtime import codec
from parties.runtime.memlink import MemoryNetwork
from protocols.base import BatchSpec

try:
    from parties.mixnet.evidence import sign_step
    from parties.verify.evidence import proves_step_equivocation
except ImportError:  # 27f5c45: mix steps were not signed
    sign_step = proves_step_equivocation = None

SERVERS = ["mix1", "mix2", "mix3"]


class Equivocating:
    """Server 1's context: its mix step to ``mix3`` is replaced by a second honest step."""

    def __init__(self, ctx, second) -> None:
        self.ctx, self.second, self.name = ctx, second, ctx.name
        self.signer = getattr(ctx, "signer", None)
        self.public_keys = getattr(ctx.net, "public_keys", {})

    def phase(self, name, round=0) -> None:
        self.ctx.phase(name, round)

    async def send(self, peer, msg_type, payload, *, public=False) -> None:
        if msg_type == "mix.output" and peer == "mix3":
            payload = codec.dumps(self.second(codec.loads(payload)))
        await self.ctx.send(peer, msg_type, payload, public=public)

    async def recv(self, peer, msg_type):
        return await self.ctx.recv(peer, msg_type)

    def busy(self, peers, what):
        return self.ctx.busy(peers, what)

    def progress(self, label, done, total):
        self.ctx.progress(label, done, total)


def test_equivocating_mixer_is_named_not_the_honest_next_mixer(monkeypatch, caplog) -> None:
    calls: list = []
    real = server_mod.mix_step

    def recording(*args, **kw):
        calls.append((args, kw))
        return real(*args, **kw)

    monkeypatch.setattr(server_mod, "mix_step", recording)
    cfg = MixnetConfig("equivocating-mixer", SERVERS, [BatchSpec("attr0", 1, 8)], mix_patience=2)
    net = MemoryNetwork(SERVERS + [cfg.clients, cfg.analyzer], timeout=2.0)
    ctx1 = net.context("mix1")

    def second(first):  # a second valid step over the same input, fresh randomness
        args, kw = next(c for c in calls if c[0][1] == 1)
        step = real(*args, **kw)
        step["prev"] = first.get("prev")
        return sign_step(ctx1, cfg.session_id, step) if sign_step else step

    rows = np.random.default_rng(4).integers(0, 8, (6, 1))

    async def main():
        tasks = [run_mix_server(Equivocating(ctx1, second), cfg, 1)]
        tasks += [run_mix_server(net.context(s), cfg, i) for i, s in [(2, "mix2"), (3, "mix3")]]
        tasks.append(run_clients(net.context(cfg.clients), cfg, {"attr0": rows}))
        tasks.append(receive_result(net.context(cfg.analyzer), cfg))
        return await asyncio.gather(*tasks, return_exceptions=True)

    res = asyncio.run(main())
    two, three = res[1], res[2]
    blamed = [f for st in (two, three) if isinstance(st, ServerState) for f in st.faults]
    blamed += [r.getMessage() for r in caplog.records]
    assert not [f for f in blamed if "server 2 mix rejected" in f], f"server 2 blamed: {blamed}"
    assert isinstance(three, Exception), three  # server 3 decrypts nothing
    assert "server 1 equivocated" in str(three), three
    # the abort carries server 1's two signed step headers: sdp verify's check names server 1
    assert proves_step_equivocation(net.public_keys, SERVERS, cfg.session_id, three.evidence) == 1
    if isinstance(two, ServerState) and two.plaintexts and two.delegated is None:
        # servers 1 and 2 may still finish on the chain server 2 verified: it verifies, and
        # the analyzer got each row exactly once
        assert verify_record(public_record(two)).ok
        assert sorted(res[-1][0]["attr0"][:, 0].tolist()) == sorted(rows[:, 0].tolist())
