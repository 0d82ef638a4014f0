"""Adversarial tests of the DKG's blame and agreement (issue 16, item 4): a malicious dealer or
complainer must not make honest servers blame each other or end with different keys."""

from __future__ import annotations

import asyncio

import pytest

from mpc.mixnet.proof_checks import verify_dkg
from parties.mixnet.dkg import run_dkg
from parties.runtime import codec
from parties.runtime.link import PeerError
from parties.runtime.memlink import MemoryContext, MemoryNetwork

SERVERS = ["mix1", "mix2", "mix3"]


class Malicious:
    """A server's context whose sends pass through ``rule(peer, type, payload)``: ``None``
    drops the message, bytes replace it (a malicious party controls what it sends)."""

    def __init__(self, ctx: MemoryContext, rule) -> None:
        self.ctx, self.rule, self.name = ctx, rule, ctx.name

    def phase(self, name: str, round: int = 0) -> None:
        self.ctx.phase(name, round)

    async def send(self, peer: str, msg_type: str, payload: bytes, *, public: bool = False) -> None:
        out = self.rule(peer, msg_type, payload)
        if out is not None:
            await self.ctx.send(peer, msg_type, out, public=public)

    async def recv(self, peer: str, msg_type: str) -> bytes:
        return await self.ctx.recv(peer, msg_type)

    def busy(self, peers, what):
        return self.ctx.busy(peers, what)


def _dkg(rules: dict[int, object], session: str) -> list:
    net = MemoryNetwork(SERVERS, timeout=0.5)

    async def main():
        tasks = []
        for me, s in enumerate(SERVERS, 1):
            ctx = net.context(s)
            if me in rules:
                ctx = Malicious(ctx, rules[me])
            tasks.append(run_dkg(ctx, SERVERS, me, 2, session))
        return await asyncio.gather(*tasks, return_exceptions=True)

    return asyncio.run(main())


@pytest.mark.parametrize("answers", [True, False], ids=["dealer-answers", "dealer-silent"])
def test_dealer_withholding_a_share_is_blamed_not_the_honest_servers(answers: bool) -> None:
    """Dealer 3 never sends server 1 its share. Server 1 complains publicly; dealer 3 either
    reveals the share (and stays qualified) or does not (and is disqualified). Either way the
    honest servers 1 and 2 agree on QUAL and the key, and no honest server is blamed."""

    def withhold(peer, ty, payload):
        if ty == "dkg.share" and peer == "mix1":
            return None
        if ty == "dkg.reveal" and not answers:
            msg = codec.loads(payload)
            msg["shares"] = {}
            return codec.dumps(msg)
        return payload

    res = _dkg({3: withhold}, f"withhold-{answers}")
    honest = res[:2]
    assert all(not isinstance(r, BaseException) for r in honest), honest
    assert honest[0].pk == honest[1].pk and honest[0].record == honest[1].record
    assert honest[0].qual == ([1, 2, 3] if answers else [1, 2])
    assert [(c["by"], c["against"]) for c in honest[0].record["complaints"]] == [(1, 3)]
    verify_dkg(f"withhold-{answers}", 3, 2, honest[0].record)  # the public record agrees
    if answers:  # the dealer's revealed share completes server 1's key share
        assert honest[0].x != 0 and honest[0].vks[1] == honest[1].vks[1]


def test_complaint_hidden_from_the_accused_does_not_split_the_key() -> None:
    """Server 1 accuses dealer 3 to server 2 only. Dealer 3 cannot answer a complaint it never
    saw; server 2 would disqualify it while dealer 3 would not. The echoed records differ, so
    every honest server aborts, naming the complaint, instead of ending with different keys."""

    def accuse_behind_back(peer, ty, payload):
        if ty == "dkg.complain":
            if peer == "mix3":
                return None
            return codec.dumps({"against": [3]})
        return payload

    res = _dkg({1: accuse_behind_back}, "hidden-complaint")
    honest = res[1:]
    keys = {r.pk for r in honest if not isinstance(r, BaseException)}
    assert len(keys) <= 1, "honest servers ended with different keys"
    # the accused dealer sees that the others disqualified it over a complaint it never got
    assert isinstance(res[2], PeerError), res[2]
    assert "complaint of server 1 against dealer 3" in str(res[2])
    if not isinstance(res[1], BaseException):  # server 2 goes on without dealer 3
        assert res[1].qual == [1, 2]


def test_dealer_equivocating_commitments_is_named() -> None:
    """Dealer 3 sends server 1 different commitments (a fresh dealing) than everyone else."""
    from mpc.dkg import deal

    other = deal("equivocate", 3, 2)

    def equivocate(peer, ty, payload):
        if ty == "dkg.commit" and peer == "mix1":
            return codec.dumps({"c": other.commitments, "pok": other.pok})
        return payload

    res = _dkg({3: equivocate}, "equivocate")
    honest = res[:2]
    keys = {r.pk for r in honest if not isinstance(r, BaseException)}
    assert len(keys) <= 1
    for r in honest:
        if isinstance(r, BaseException):
            assert "dealer" in str(r) and "3" in str(r), r
        else:
            assert 3 not in r.qual
