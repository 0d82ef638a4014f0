"""In-memory ``PartyContext`` for unit tests of multi-party protocol logic (no network)."""

from __future__ import annotations

import asyncio
import math
import os
from collections import defaultdict

from parties.runtime.busy import BEATS_PER_TIMEOUT, BusyBeat, Liveness, wait_while_busy
from parties.runtime.link import PeerError
from parties.runtime.signing import Signer
from parties.runtime.transport import CHUNK


class MemoryNetwork:
    """A set of in-process parties exchanging messages through asyncio queues."""

    def __init__(self, names: list[str], timeout: float = 30.0, chunk: int = CHUNK) -> None:
        self.names = list(names)
        self.timeout = timeout
        # as the networked channel delivers: a message of more than one chunk as a bytearray
        # (parties.runtime.channel assembles it in place), one chunk as bytes
        self.chunk = chunk
        self._queues: dict[tuple[str, str, str], asyncio.Queue[bytes]] = defaultdict(asyncio.Queue)
        self.bytes_sent: dict[str, int] = defaultdict(int)
        self.messages_sent: dict[str, int] = defaultdict(int)
        # every party's progress reports, in order: (party, label, done, total)
        self.progress: list[tuple[str, str, int, int]] = []
        # per receiver: when each sender last said it was busy (``MemoryContext.busy``)
        self.liveness: dict[str, Liveness] = defaultdict(Liveness)
        # every party's Ed25519 key, as a networked node holds its own and its peers' public ones
        self.signers = {n: Signer(os.urandom(32)) for n in self.names}
        self.public_keys = {n: s.public_key for n, s in self.signers.items()}

    def context(self, name: str) -> MemoryContext:
        """The context of party ``name``."""
        if name not in self.names:
            raise KeyError(f"unknown party {name!r}")
        return MemoryContext(self, name)


class MemoryContext:
    """``PartyContext`` over a ``MemoryNetwork``."""

    def __init__(self, net: MemoryNetwork, name: str) -> None:
        self.net = net
        self.name = name
        self.current_phase = ("setup", 0)
        self.signer = net.signers[name]
        self.public_keys = net.public_keys

    def phase(self, name: str, round: int = 0) -> None:
        self.current_phase = (name, round)

    async def send(self, peer: str, msg_type: str, payload: bytes, *, public: bool = False) -> None:
        if peer not in self.net.names:
            raise PeerError(f"{self.name}: unknown peer {peer!r}")
        self.net.bytes_sent[self.name] += len(payload)
        self.net.messages_sent[self.name] += 1
        data = bytes(payload) if len(payload) <= self.net.chunk else bytearray(payload)
        await self.net._queues[(self.name, peer, msg_type)].put(data)  # type: ignore[arg-type]

    def progress(self, label: str, done: int, total: int) -> None:
        self.net.progress.append((self.name, label, int(done), int(total)))

    def busy(self, peers: list[str], what: str) -> BusyBeat:
        """``_busy`` beats to ``peers`` (``parties.runtime.busy``), as the networked node sends
        them: each starts a peer's wait for this party again."""

        async def beat(peer: str, msg_type: str, payload: bytes) -> None:
            self.net.liveness[peer].heard(self.name)

        period = self.net.timeout / BEATS_PER_TIMEOUT
        return BusyBeat(beat, lambda peer: False, peers, period, what)

    async def recv(self, peer: str, msg_type: str) -> bytes:
        q = self.net._queues[(peer, self.name, msg_type)]
        live = self.net.liveness[self.name]
        try:  # the network's timeout of silence from peer (its beats extend it)
            return await wait_while_busy(
                asyncio.ensure_future(q.get()), peer, self.net.timeout, math.inf, live
            )
        except asyncio.TimeoutError:
            raise PeerError(
                f"{self.name}: timed out waiting for {msg_type!r} from {peer!r} "
                f"in phase {self.current_phase[0]}"
            ) from None
