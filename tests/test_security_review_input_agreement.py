"""Issue 25 item 5 (review N5): a mix server that lies in the input agreement cannot drop a
client party, and is the one named.

Server 3 reports, for client party ``client-1``, a list digest other than the one it received.
On 27f5c45 the honest servers saw "not received identically by all" and left ``client-1`` out,
the record blaming the party. Now every list is signed by its party and every report by its
server: the lie is proven by server 3's own signed report (a digest ``client-1`` never signed),
echoed to every server; the honest servers keep ``client-1``, exclude server 3 from the rest of
the run, and the record's evidence names it, as does ``sdp verify``'s input-agreement check.
A party that really signs two different lists is still left out, on that evidence.
"""

from __future__ import annotations

import asyncio

import numpy as np

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
    from parties.mixnet.evidence import sign
    from parties.verify.evidence import digest as _dg
    from parties.verify.mixnet import input_agreement
except ImportError:  # 27f5c45: nothing was signed
    sign = _dg = input_agreement = None

SERVERS = ["mix1", "mix2", "mix3"]
CLIENTS = ["client-1", "client-2"]
ROWS = [np.array([[1], [2], [3]]), np.array([[4], [5]])]


class Rewriting:
    """A party's context whose sends of ``msg_type`` pass through ``rule(peer, payload)``."""

    def __init__(self, ctx, msg_type, rule) -> None:
        self.ctx, self.msg_type, self.rule, self.name = ctx, msg_type, rule, ctx.name
        self.signer = getattr(ctx, "signer", None)
        self.public_keys = getattr(ctx, "public_keys", {})

    def phase(self, name, round=0) -> None:
        self.ctx.phase(name, round)

    async def send(self, peer, msg_type, payload, *, public=False) -> None:
        if msg_type == self.msg_type:
            payload = self.rule(peer, payload)
        await self.ctx.send(peer, msg_type, payload, public=public)

    async def recv(self, peer, msg_type):
        return await self.ctx.recv(peer, msg_type)

    def busy(self, peers, what):
        return self.ctx.busy(peers, what)

    def progress(self, label, done, total):
        self.ctx.progress(label, done, total)


def _run(session, wrap_server=None, wrap_client=None, mix_patience=2):
    cfg = MixnetConfig(
        session,
        SERVERS,
        [BatchSpec("attr0", 1, 8)],
        clients="client-1",
        client_parties=CLIENTS,
        mix_patience=mix_patience,
    )
    net = MemoryNetwork(SERVERS + CLIENTS + [cfg.analyzer], timeout=2.0)

    async def main():
        tasks = []
        for i, s in enumerate(SERVERS, 1):
            ctx = net.context(s)
            tasks.append(
                run_mix_server(wrap_server(ctx) if i == 3 and wrap_server else ctx, cfg, i)
            )
        for c, rows in zip(CLIENTS, ROWS):
            ctx = net.context(c)
            ctx = wrap_client(ctx) if c == "client-1" and wrap_client else ctx
            tasks.append(run_clients(ctx, cfg, {"attr0": rows}))
        tasks.append(receive_result(net.context(cfg.analyzer), cfg))
        return await asyncio.gather(*tasks, return_exceptions=True)

    return asyncio.run(main()), net


def test_a_server_lying_in_the_input_agreement_is_named_not_the_party() -> None:
    def lie(ctx):
        def rule(peer, payload):
            msg = codec.loads(payload)
            if "report" not in msg:  # 27f5c45: an unsigned {party: digest} map
                return codec.dumps({**msg, "client-1": "00" * 32})
            report = dict(msg["report"])
            report["client-1"] = {**report["client-1"], "digest": "00" * 32}
            return codec.dumps({"report": report, "sig": sign(ctx, "report", session, _dg(report))})

        return Rewriting(ctx, "mix.inputs", rule)

    session = "lying-input-report"
    res, net = _run(session, wrap_server=lie)
    honest = [r for r in res[:2] if isinstance(r, ServerState)]
    assert len(honest) == 2, res[:3]
    for st in honest:
        assert [p["party"] for p in st.inputs] == CLIENTS, st.faults  # client-1 kept
        assert not [f for f in st.faults if "left out" in f], st.faults
        assert any(f.startswith("server 3 (mix3) lied in the input agreement") for f in st.faults)
    st = next(st for st in honest if st.delegated is None and st.plaintexts)
    rec = public_record(st)
    assert rec["decryption_set"] == [1, 2] and [m["server"] for m in rec["mixes"]] == [1, 2]
    assert verify_record(rec).ok
    ok, detail = input_agreement(rec, SERVERS, net.public_keys)
    assert ok and "server 3 (mix3) lied" in detail and "client-1" in detail, detail
    shuffled, users = res[-1]
    assert sorted(shuffled["attr0"][:, 0].tolist()) == [1, 2, 3, 4, 5] and users == 5
    forged = {**rec, "inputs": [{**rec["inputs"][0], "users": 9}, rec["inputs"][1]]}
    ok, detail = input_agreement(forged, SERVERS, net.public_keys)
    assert not ok and "client-1" in detail  # a list its party did not sign is caught


def test_a_party_that_signs_two_lists_is_left_out_on_that_evidence() -> None:
    session = "equivocating-party"

    def equivocate(ctx):
        def rule(peer, payload):
            if peer != "mix1":
                return payload
            msg = codec.loads(payload)
            body = {"users": msg["users"] + 1, "submissions": msg["submissions"]}
            return codec.dumps({**body, "sig": sign(ctx, "inputs", session, _dg(body))})

        return Rewriting(ctx, "mix.submissions", rule)

    res, net = _run(session, wrap_client=equivocate)
    states = [r for r in res[:3] if isinstance(r, ServerState)]
    assert len(states) == 3, res[:3]
    for st in states:
        assert [p["party"] for p in st.inputs] == ["client-2"]
        assert any("client-1 left out: it signed two different lists" in f for f in st.faults)
    rec = public_record(next(st for st in states if st.delegated is None and st.plaintexts))
    ok, detail = input_agreement(rec, SERVERS, net.public_keys)
    assert ok and "client party client-1 equivocated" in detail, detail
    assert verify_record(rec).ok
    assert sorted(res[-1][0]["attr0"][:, 0].tolist()) == [4, 5]


class Dropping(Rewriting):
    """A client party that dies mid-send: its list never reaches ``mix3``."""

    async def send(self, peer, msg_type, payload, *, public=False) -> None:
        if msg_type == "mix.submissions" and peer == "mix3":
            return
        await self.ctx.send(peer, msg_type, payload, public=public)


def test_a_list_one_server_missed_is_forwarded_not_dropped() -> None:
    # (the analyzer waits past the servers' wait for the missing list)
    res, _ = _run("forwarded-list", wrap_client=lambda c: Dropping(c, None, None), mix_patience=8)
    states = [r for r in res[:3] if isinstance(r, ServerState)]
    assert len(states) == 3, res[:3]
    for st in states:
        assert [p["party"] for p in st.inputs] == CLIENTS, st.faults
    rec = public_record(next(st for st in states if st.delegated is None and st.plaintexts))
    assert verify_record(rec).ok
    assert sorted(res[-1][0]["attr0"][:, 0].tolist()) == [1, 2, 3, 4, 5]
