"""Patient receives and forgiving sends over a ``PartyContext`` (dead peers are values, not
exceptions), for protocols that tolerate some parties failing."""

from __future__ import annotations

import asyncio
import logging

from parties.runtime.link import PartyContext, PeerError

log = logging.getLogger("parties.receive")


async def recv_patient(
    ctx: PartyContext, peer: str, msg_type: str, patience: int = 1
) -> bytes | PeerError:
    """Receive one message, tolerating up to ``patience`` consecutive receive timeouts."""
    err: PeerError | None = None
    for _ in range(max(1, patience)):
        try:
            return await ctx.recv(peer, msg_type)
        except PeerError as exc:
            err = exc
    return err  # type: ignore[return-value]


async def recv_all(
    ctx: PartyContext, peers: list[str], msg_type: str, patience: int = 1
) -> dict[str, bytes | PeerError]:
    """Receive ``msg_type`` from every peer concurrently (dead peers cost one wait in total)."""
    res = await asyncio.gather(*(recv_patient(ctx, p, msg_type, patience) for p in peers))
    return dict(zip(peers, res))


def _is_message(g: object) -> bool:
    """A received message (``bytes``, or a ``bytearray`` for one of more than one chunk), not
    a ``PeerError`` or the ``CancelledError`` of a task cancelled before it received."""
    return isinstance(g, (bytes, bytearray, memoryview))


async def recv_first_then_rest(
    ctx: PartyContext, peers: list[str], msg_type: str, first: int, rest: int
) -> list[bytes]:
    """Messages from every live peer: wait up to ``first`` timeouts for the first one, then up
    to ``rest`` timeouts for each of the others (so a dead peer does not cost the long wait)."""
    tasks = {asyncio.ensure_future(recv_patient(ctx, p, msg_type, first)): p for p in peers}
    out: list[bytes] = []
    pending = set(tasks)
    while pending and not out:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        out += [d.result() for d in done if not isinstance(d.result(), PeerError)]
    for t_ in pending:
        t_.cancel()
    if pending:
        # a task may have received its message before the cancel took effect: keep it
        got = await asyncio.gather(*pending, return_exceptions=True)
        out += [g for g in got if _is_message(g)]
        missing = [tasks[t_] for t_, g in zip(pending, got) if not _is_message(g)]
        late = await recv_all(ctx, missing, msg_type, rest)
        out += [v for v in late.values() if not isinstance(v, PeerError)]
    return out


async def try_send(
    ctx: PartyContext, peer: str, msg_type: str, payload: bytes, public: bool = False
) -> bool:
    """Send one message; ``False`` if the peer is dead."""
    try:
        await ctx.send(peer, msg_type, payload, public=public)
        return True
    except PeerError:
        return False


async def send_public(ctx: PartyContext, peer: str, msg_type: str, payload: bytes) -> None:
    """Send a public message; a dead peer is logged, not fatal."""
    try:
        await ctx.send(peer, msg_type, payload, public=True)
    except PeerError as exc:
        log.warning("%s: could not send %s to %s: %s", ctx.name, msg_type, peer, exc)
