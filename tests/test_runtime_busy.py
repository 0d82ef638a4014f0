"""A receive tells a slow peer from a withholding one (parties/runtime/busy.py, issue 43 item 3):
``_busy`` beats from the peer it waits for start its timer again; silence ends it after the
timeout; the run's deadline ends it whatever the beats; a beat is never written between the
frames of a half-sent message."""

from __future__ import annotations

import asyncio
import time

import pytest

from parties.runtime.busy import BUSY, BusyBeat, Liveness, wait_while_busy
from parties.runtime.link import PeerError


def _wait(fut_result_after: float | None, beats: list[float], timeout: float, deadline: float):
    """(outcome, seconds): wait for a future set after ``fut_result_after`` s (never if None)
    while the peer beats at the given times."""

    async def main():
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        live = Liveness()
        if fut_result_after is not None:
            loop.call_later(fut_result_after, fut.set_result, b"ok")
        for at in beats:
            loop.call_later(at, live.heard, "mix-2")
        t0 = time.monotonic()
        try:
            out = await wait_while_busy(fut, "mix-2", timeout, t0 + deadline, live)
        except asyncio.TimeoutError:
            return "timeout", time.monotonic() - t0, fut.cancelled()
        return out, time.monotonic() - t0, False

    return asyncio.run(main())


def test_beats_extend_a_wait_past_the_timeout():
    # the message comes after 0.9 s, three timeouts of 0.3 s; the peer beats every 0.2 s
    out, took, _ = _wait(0.9, [0.2, 0.4, 0.6, 0.8], 0.3, 10.0)
    assert out == b"ok" and took >= 0.85


def test_silence_ends_the_wait_one_timeout_after_the_last_beat():
    out, took, cancelled = _wait(None, [0.2, 0.4], 0.3, 10.0)
    assert out == "timeout" and cancelled
    assert took >= 0.65  # the last beat at 0.4 s, then 0.3 s of silence


def test_without_beats_a_wait_is_one_timeout():
    out, took, _ = _wait(None, [], 0.3, 10.0)
    assert out == "timeout" and took < 5.0


def test_the_runs_deadline_ends_a_wait_whatever_the_beats():
    out, took, _ = _wait(None, [0.1 * i for i in range(1, 40)], 0.3, 0.7)
    assert out == "timeout" and 0.65 <= took < 3.5


def test_a_beat_skips_a_half_sent_peer_and_a_gone_peer_is_no_error():
    sent: list[tuple[str, str, bytes]] = []

    async def send(peer: str, ty: str, payload: bytes) -> None:
        if peer == "gone":
            raise PeerError("gone")
        sent.append((peer, ty, payload))

    async def main():
        beat = BusyBeat(send, lambda p: p == "half", ["mix-1", "half", "gone"], 0.05, "mixing")
        with beat:
            await asyncio.sleep(0.18)
        n = len(sent)
        await asyncio.sleep(0.12)
        return beat.beats, n

    beats, n = asyncio.run(main())
    assert {p for p, _, _ in sent} == {"mix-1"}
    assert all(ty == BUSY and payload == b"mixing" for _, ty, payload in sent)
    assert beats == n >= 2
    assert len(sent) == n  # nothing after stop


@pytest.mark.parametrize("period", [0.0, -1.0])
def test_a_beat_period_must_be_positive(period):
    async def main():
        async def send(*_a):
            return None

        BusyBeat(send, lambda p: False, ["x"], period, "w")

    with pytest.raises(ValueError, match="period"):
        asyncio.run(main())


def test_a_cancelled_wait_cancels_its_future():
    # recv_first_then_rest cancels the waits it no longer needs: their futures must go too,
    # or a message that arrives later is taken by a future nobody reads (lost)
    async def main():
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        task = asyncio.ensure_future(
            wait_while_busy(fut, "p", 5.0, time.monotonic() + 9, Liveness())
        )
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return fut.cancelled()

    assert asyncio.run(main())


def test_a_wait_cancelled_as_its_message_arrives_returns_the_message() -> None:
    """A caller that cancels a wait and gathers it (``recv_first_then_rest``) keeps a message
    that arrived in the same loop step: an in-process mix-net run with a delegated combiner
    lost the other servers' ``mix.result`` this way and waited out every patience timeout."""
    import math

    from parties.runtime.busy import Liveness, wait_while_busy

    async def main() -> list[object]:
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        task = asyncio.ensure_future(wait_while_busy(fut, "p", 30.0, math.inf, Liveness()))
        await asyncio.sleep(0)
        fut.set_result(b"message")
        task.cancel()
        return await asyncio.gather(task, return_exceptions=True)

    assert asyncio.run(main()) == [b"message"]


@pytest.mark.parametrize("rnd, waits", [(0, True), (1, False)])
def test_the_analyzer_beats_to_whoever_waits_for_its_next_state(rnd: int, waits: bool) -> None:
    """``beat_until_state``: during round 0 of two, a client's wait for the state outlasts
    several phase timeouts of the analyzer waiting on its shuffler (the client then blames
    nobody: the shuffler party the analyzer waits for is named by the analyzer); after the last
    round there is no state and no beat (chaos: a stalled MPC server was blamed on the
    analyzer by the clients' shorter wait)."""
    from parties.runtime.busy import beat_until_state
    from parties.runtime.memlink import MemoryNetwork

    async def main() -> bytes | str:
        net = MemoryNetwork(["analyzer", "client-1"], timeout=0.3)
        analyzer, client = net.context("analyzer"), net.context("client-1")

        async def analyze() -> None:
            with beat_until_state(analyzer, ["client-1"], rnd, 2):
                await asyncio.sleep(1.0)  # > 3 phase timeouts: waiting on the shuffler
                await analyzer.send("client-1", "state", b"state")

        task = asyncio.ensure_future(analyze())
        try:
            return await client.recv("analyzer", "state")
        except PeerError as exc:
            return str(exc)
        finally:
            await task

    got = asyncio.run(main())
    assert (got == b"state") is waits, got
