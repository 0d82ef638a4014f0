"""Patient receives (``parties.runtime.receive``): a message is any bytes-like value."""

from __future__ import annotations

import asyncio

from parties.runtime.link import PeerError
from parties.runtime.receive import recv_first_then_rest


class _Ctx:
    """Peer ``a`` answers at once; ``b``'s message arrives just as its wait is cancelled
    (the task swallows the cancel and returns it), as a ``bytearray`` (a message of more than
    one chunk). A second receive from ``b`` would find nothing."""

    name = "me"

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def recv(self, peer: str, msg_type: str) -> bytes | bytearray:
        self.calls.append(peer)
        if peer == "a":
            return b"from a"
        if self.calls.count("b") > 1:
            raise PeerError("b: nothing more to receive")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            return bytearray(b"from b, late")
        raise AssertionError("not cancelled")


def test_a_late_message_of_more_than_one_chunk_is_kept() -> None:
    ctx = _Ctx()
    got = asyncio.run(recv_first_then_rest(ctx, ["a", "b"], "t", 1, 1))  # type: ignore[arg-type]
    assert sorted(bytes(g) for g in got) == [b"from a", b"from b, late"], got
    assert ctx.calls.count("b") == 1, ctx.calls  # not waited for again: it had answered
