"""An in-process stand-in for MPyC's runtime (``LocalRuntime``), for tests and benchmarks.

``LocalMPCNetwork(m, t).runtimes()`` gives m runtimes that exchange messages through futures
in one event loop, with the subset of MPyC's ``Runtime`` API that the shuffle servers use
(``pid``, ``parties``, ``threshold``, ``transfer``, ``gather``), so that m servers can run as
coroutines without processes or sockets.
"""

from __future__ import annotations

from typing import Any


class LocalRuntime:
    """In-process stand-in for MPyC's ``Runtime`` with the subset used here (``pid``,
    ``parties``, ``threshold``, ``transfer``, ``gather``): lets unit tests run m servers as
    coroutines in one event loop. Messages are matched by call order, as MPyC's program counter
    does; sends happen at call time.
    """

    def __init__(self, net: LocalMPCNetwork, pid: int) -> None:
        self.net = net
        self.pid = pid
        self.parties = tuple(range(net.m))
        self.threshold = net.t
        self._calls = 0

    def transfer(
        self, obj: Any, senders: Any = None, receivers: Any = None, sender_receivers: Any = None
    ) -> Any:
        """Same graph semantics as ``mpyc.runtime.Runtime.transfer``; returns a Future."""
        import asyncio
        import pickle

        k = self._calls
        self._calls += 1
        m, me = self.net.m, self.pid
        single = isinstance(senders, int)
        if sender_receivers is None:
            snd = [senders] if single else list(range(m) if senders is None else senders)
            rcv = (
                [receivers]
                if isinstance(receivers, int)
                else list(range(m) if receivers is None else receivers)
            )
            my_senders = snd if me in rcv else []
            my_receivers = rcv if me in snd else []
        else:
            my_senders = [a for a, b in sender_receivers if b == me]
            my_receivers = [b for a, b in sender_receivers if a == me]
        data = pickle.dumps(obj)
        for r in my_receivers:
            self.net.bytes_sent[me] += len(data) if r != me else 0
            self.net.slot(me, r, k).set_result(data)
        parts = [self.net.slot(s, me, k) for s in my_senders]

        async def collect() -> Any:
            got = [pickle.loads(await f) for f in parts]
            return got[0] if single else got

        return asyncio.ensure_future(collect())

    async def gather(self, x: Any) -> Any:
        """Await a future returned by ``transfer``."""
        return await x


class LocalMPCNetwork:
    """m ``LocalRuntime`` servers sharing one event loop (tests only)."""

    def __init__(self, m: int, t: int) -> None:
        self.m, self.t = m, t
        self._slots: dict[tuple[int, int, int], Any] = {}
        self.bytes_sent = [0] * m

    def slot(self, s: int, r: int, k: int) -> Any:
        import asyncio

        key = (s, r, k)
        if key not in self._slots:
            self._slots[key] = asyncio.get_running_loop().create_future()
        return self._slots[key]

    def runtimes(self) -> list[LocalRuntime]:
        return [LocalRuntime(self, i) for i in range(self.m)]
