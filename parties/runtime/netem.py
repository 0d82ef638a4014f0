"""WAN emulation in the transport: a one-way delay and a token-bucket rate limit per link.

The kernels we run on have no ``netem`` queueing discipline, so the sending side of every
channel shapes its own writes: a write of L bytes leaves the token bucket (rate R, depth B)
when the bucket holds L tokens, and reaches the TLS socket ``rtt/2`` later; writes keep their
order. Both directions of a link are shaped by their senders, so a request-response costs at
least one RTT plus serialisation. Settings: ``sdp run --netem "rtt=50ms,rate=100mbit"`` (every
link) and, in the cluster file, ``[netem] default = "..."`` plus ``[[netem.link]] a, b,
conditions`` for one pair of parties. What is and is not shaped: ``docs/costs.md``.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_TIME = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
_RATE = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
SHAPER_HIGH = 1 << 20  # bytes queued in a shaper before ``send`` waits


class NetemError(ValueError):
    """A malformed --netem / [netem] setting (the message names it)."""


@dataclass(frozen=True)
class LinkConditions:
    """One link's emulated conditions: round-trip time (seconds, split evenly between the two
    directions), rate (bits/s per direction, 0: unlimited), bucket depth (bytes)."""

    rtt_s: float = 0.0
    rate_bps: float = 0.0
    burst: int = 16384

    @property
    def active(self) -> bool:
        return self.rtt_s > 0 or self.rate_bps > 0

    def to_json(self) -> dict[str, Any]:
        return {"rtt_ms": self.rtt_s * 1e3, "rate_mbit": self.rate_bps / 1e6, "burst": self.burst}


def parse_conditions(text: str, where: str = "--netem") -> LinkConditions:
    """``rtt=50ms,rate=100mbit[,delay=25ms][,burst=16384]`` (delay: one-way, rtt = 2 delay)."""
    vals: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in str(text).split(","))):
        key, _, val = item.partition("=")
        key, val = key.strip().lower(), val.strip().lower()
        if key in ("rtt", "delay"):
            m = re.fullmatch(r"([0-9.]+)\s*(us|ms|s)", val)
            if not m:
                raise NetemError(f"{where}: {key} must look like 50ms, got {val!r}")
            secs = float(m.group(1)) * _TIME[m.group(2)]
            vals["rtt_s"] = secs if key == "rtt" else 2 * secs
        elif key == "rate":
            m = re.fullmatch(r"([0-9.]+)\s*(bit|kbit|mbit|gbit)", val)
            if not m:
                raise NetemError(f"{where}: rate must look like 100mbit, got {val!r}")
            vals["rate_bps"] = float(m.group(1)) * _RATE[m.group(2)]
        elif key == "burst" and val.isdigit():
            vals["burst"] = int(val)
        else:
            raise NetemError(f"{where}: unknown setting {item!r} (rtt, delay, rate, burst)")
    if vals.get("rtt_s", 0) > 60:
        raise NetemError(f"{where}: rtt above 60 s")
    return LinkConditions(**vals)


@dataclass(frozen=True)
class Netem:
    """Conditions of every link of a run."""

    default: LinkConditions
    links: tuple[tuple[str, str, LinkConditions], ...] = ()

    def link(self, a: str, b: str) -> LinkConditions:
        for x, y, cond in self.links:
            if {x, y} == {a, b}:
                return cond
        return self.default

    @property
    def active(self) -> bool:
        return self.default.active or any(c.active for _, _, c in self.links)

    def to_json(self) -> dict[str, Any]:
        """What a transcript's ``open`` entry records."""
        out: dict[str, Any] = {
            "emulated": "sender-side delay + token bucket",
            **self.default.to_json(),
        }
        if self.links:
            out["links"] = [{"a": a, "b": b, **c.to_json()} for a, b, c in self.links]
        return out


def netem_from_cluster(raw: Any, where: str = "[netem]") -> Netem | None:
    """The cluster file's ``[netem]`` table (None when absent or all zero)."""
    if not raw:
        return None
    if not isinstance(raw, dict):
        raise NetemError(f"{where} must be a table")
    default = parse_conditions(raw.get("default", ""), f"{where} default")
    links = []
    for i, ln in enumerate(raw.get("link", [])):
        w = f"{where} link #{i + 1}"
        if not isinstance(ln, dict) or not {"a", "b"} <= ln.keys():
            raise NetemError(f"{w}: needs a, b and conditions")
        links.append((str(ln["a"]), str(ln["b"]), parse_conditions(ln.get("conditions", ""), w)))
    net = Netem(default, tuple(links))
    return net if net.active else None


def netem_to_toml(raw: dict[str, Any]) -> list[str]:
    """TOML lines of a ``[netem]`` table (as ``netem_from_cluster`` reads it)."""
    lines = ["", "[netem]", f"default = {_q(raw.get('default', ''))}"]
    for ln in raw.get("link", []):
        lines += ["", "[[netem.link]]", f"a = {_q(ln['a'])}", f"b = {_q(ln['b'])}"]
        lines.append(f"conditions = {_q(ln.get('conditions', ''))}")
    return lines


def _q(s: Any) -> str:
    import json

    return json.dumps(str(s))


class Shaper:
    """Sender-side shaping of one direction of one link; ``write`` keeps byte order."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, cond: LinkConditions, write: Callable[[bytes], Any]
    ) -> None:
        self.loop = loop
        self.delay = cond.rtt_s / 2
        self.rate = cond.rate_bps / 8  # bytes per second
        self.burst = cond.burst
        self._write = write
        self._free_at = 0.0  # when everything written so far has passed at the rate
        self._queue: deque[tuple[float, bytes]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self.backlog = 0
        # ``send`` waits above this: what the link holds in flight (rate x delay) plus
        # SHAPER_HIGH; a pure delay (no rate) never holds the sender back
        self.high = SHAPER_HIGH + self.rate * self.delay if self.rate > 0 else float("inf")
        self.closed = False
        self.after_flush: Callable[[], Any] | None = None  # run once the queue is empty

    def write(self, data: bytes | bytearray | memoryview) -> None:
        n = len(data)
        now = self.loop.time()
        if self.rate > 0:
            self._free_at = max(self._free_at, now) + n / self.rate
            leave = max(now, self._free_at - self.burst / self.rate)
        else:
            leave = now
        due = leave + self.delay
        if not self._queue and due <= now:
            self._write(bytes(data))
            return
        self._queue.append((due, bytes(data)))
        self.backlog += n
        if self._timer is None:
            self._timer = self.loop.call_at(self._queue[0][0], self._flush)

    def _flush(self) -> None:
        self._timer = None
        now = self.loop.time()
        while self._queue and self._queue[0][0] <= now:
            _, data = self._queue.popleft()
            self.backlog -= len(data)
            if not self.closed:
                self._write(data)
        if self._queue:
            self._timer = self.loop.call_at(self._queue[0][0], self._flush)
        elif self.after_flush is not None:
            done, self.after_flush = self.after_flush, None
            done()
        if self.backlog < self.high / 2 or not self._queue:
            waiters, self._waiters = self._waiters, []
            for w in waiters:
                if not w.done():
                    w.set_result(None)

    async def wait(self, limit: float | None = None) -> None:
        """Return once at most ``limit`` (default ``high``) bytes are queued (0: all written)."""
        limit = self.high if limit is None else limit
        while self._queue and self.backlog > limit and not self.closed:
            fut = self.loop.create_future()
            self._waiters.append(fut)
            await fut

    def close(self) -> None:
        """Drop what is queued (the connection is gone)."""
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
        self._queue.clear()
        self.backlog = 0
        for w in self._waiters:
            if not w.done():
                w.set_result(None)


class ShapedTransport:
    """A transport whose ``write`` goes through a ``Shaper`` (MPyC's peer connections)."""

    def __init__(self, inner: Any, cond: LinkConditions) -> None:
        self._inner = inner
        self._shaper = Shaper(asyncio.get_running_loop(), cond, inner.write)

    def write(self, data: bytes) -> None:
        self._shaper.write(data)

    def writelines(self, items: Any) -> None:
        self._shaper.write(b"".join(items))

    def close(self) -> None:
        """Close once the emulated link has passed what was written (MPyC closes right after
        its shutdown barrier)."""
        if self._shaper.backlog:
            self._shaper.after_flush = self._inner.close
        else:
            self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


# The run's conditions in this party process (set by the party's Node), read by engines that
# open their own connections (MPyC): their links get the default conditions.
ACTIVE: Netem | None = None


def mpyc_peer_links(rt: Any) -> list[tuple[Any, Any, Any]]:
    """(party, protocol, transport) of every MPyC peer connection of ``rt`` that has a
    transport (none for runtimes without one)."""
    out = []
    for p in getattr(rt, "parties", ()):
        proto = getattr(p, "protocol", None)
        tr = getattr(proto, "transport", None)
        if getattr(p, "pid", rt.pid) != rt.pid and tr is not None:
            out.append((p, proto, tr))
    return out


def shape_mpyc(rt: Any, names: Sequence[str] | None = None) -> int:
    """Put every MPyC peer connection of ``rt`` behind the run's conditions: the link's own
    (``[[netem.link]]`` in the cluster file) when ``names`` gives the party name of each MPyC
    pid, else the default; returns how many connections were wrapped (0 without emulation)."""
    if ACTIVE is None or not ACTIVE.active:
        return 0
    n = 0
    for p, proto, tr in mpyc_peer_links(rt):
        if isinstance(tr, ShapedTransport):
            continue
        cond = ACTIVE.link(names[rt.pid], names[p.pid]) if names else ACTIVE.default
        if cond.active:
            proto.transport = ShapedTransport(tr, cond)
            n += 1
    return n
