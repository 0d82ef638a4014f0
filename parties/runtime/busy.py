"""A slow peer is told from a withholding one: ``_busy`` beats (docs/deploy.md, "Deadlines").

A party that computes what its peers wait for (a mix server screening, verifying and mixing
before its ``mix.output``) sends them the runtime control message ``_busy`` (payload: its phase
name, UTF-8; docs/spec/04-payloads.md) every third of a phase timeout. A receive gives up after
``phase_timeout`` seconds of *silence* from the peer it waits for: each ``_busy`` from that peer
starts the wait's timer again, never past the run's deadline. A peer that stops working, or
withholds its message once its work is done, is therefore given up on (a signed ``missed``
entry naming it) one phase timeout after its last beat, however long honest work takes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from parties.runtime.link import PeerError

BUSY = "_busy"
BEATS_PER_TIMEOUT = 3


class Liveness:
    """When each peer last said it was busy (monotonic seconds)."""

    def __init__(self) -> None:
        self._at: dict[str, float] = {}

    def heard(self, peer: str) -> None:
        """A ``_busy`` from ``peer`` arrived now."""
        self._at[peer] = time.monotonic()

    def silent_until(self, peer: str, start: float, timeout: float) -> float:
        """When a wait for ``peer`` begun at ``start`` times out: ``timeout`` after the later
        of its start and the peer's last beat."""
        return max(start, self._at.get(peer, start)) + timeout


async def wait_while_busy(
    fut: asyncio.Future[Any],
    peer: str,
    timeout: float,
    deadline_at: float,
    liveness: Liveness,
) -> Any:
    """The result of ``fut``; ``asyncio.TimeoutError`` after ``timeout`` s of silence from
    ``peer`` (its ``_busy`` beats extend the wait) or at ``deadline_at`` (monotonic), whichever
    is first. ``fut`` is cancelled on a timeout and when the wait itself is cancelled, as by
    ``asyncio.wait_for`` (a message that arrives later is then queued, not lost to it)."""
    start = time.monotonic()
    try:
        while True:
            end = min(liveness.silent_until(peer, start, timeout), deadline_at)
            left = end - time.monotonic()
            if left <= 0:
                raise asyncio.TimeoutError
            done, _ = await asyncio.wait({fut}, timeout=left)
            if done:
                return fut.result()
    except asyncio.CancelledError:
        # cancelled just as fut completed: its message is returned, not dropped (as
        # asyncio.wait_for does), so a caller that cancels a wait and gathers it keeps it
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            return fut.result()
        raise
    finally:
        if not fut.done():
            fut.cancel()


class BusyBeat:
    """Sends ``_busy`` to ``peers`` every ``period`` seconds (the first at once) until stopped.

    ``send(peer, type, payload)`` is the party's send; ``sending(peer)`` says whether a message
    to ``peer`` is half written (its frames are not interleaved with a beat: that beat is
    skipped). A peer that is gone is skipped too. Use as a context manager or call ``stop``."""

    def __init__(
        self,
        send: Callable[[str, str, bytes], Awaitable[None]],
        sending: Callable[[str], bool],
        peers: Iterable[str],
        period: float,
        what: str,
    ) -> None:
        if not period > 0:
            raise ValueError(f"a busy beat's period must be positive seconds, not {period!r}")
        self._send, self._sending = send, sending
        self.peers, self.period, self.what = list(peers), float(period), what
        self.beats = 0
        self._task: asyncio.Task[None] | None = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        payload = self.what.encode()[:200]
        while True:
            for peer in self.peers:
                if self._sending(peer):
                    continue
                try:
                    await self._send(peer, BUSY, payload)
                    self.beats += 1
                except PeerError:  # gone: the protocol finds out by itself
                    pass
            await asyncio.sleep(self.period)

    def stop(self) -> None:
        """No more beats (idempotent)."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def __enter__(self) -> BusyBeat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def beat_until_state(
    ctx: Any, peers: Iterable[str], rnd: int, n_rounds: int
) -> contextlib.AbstractContextManager[Any]:
    """The analyzer's beat to the parties that wait for its state after round ``rnd``: while
    it waits for the shuffler's output and computes the state, they hear ``_busy`` from it, so
    their wait is the analyzer's, itself bounded by the silence of the shuffler party it waits
    for. Without it a client's one-phase wait for the state ran out before the analyzer's wait
    for a stalled MPC server did, and the abort blamed the analyzer, not the stalled server
    (``scripts/chaos.py``). After the last round nobody waits for a state: no beat."""
    if rnd >= n_rounds - 1:
        return contextlib.nullcontext()
    return ctx.busy(list(peers), f"round {rnd}")  # type: ignore[no-any-return]
