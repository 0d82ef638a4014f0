"""One authenticated connection between two parties (``Channel``): TLS transport, the hello
exchange that names the peer, sealed frame chains in both directions (``parties.runtime.frames``),
flow control, and reassembly of chunked messages for the owning party (any ``ChannelOwner``;
the runtime's is ``transport.Node``).
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from typing import Any, Protocol

from parties.runtime.frames import (
    VERSION,
    Frame,
    FrameDecoder,
    FrameError,
    chain_next,
    chain_start,
    frame_parts,
    seal_message,
)
from parties.runtime.link import PeerError
from parties.runtime.netem import Shaper
from parties.runtime.signing import verify_signature

MAX_MESSAGE = 8 << 30
SEAL_EVERY = 4096  # frames between forced seals inside long bursts


class ChannelOwner(Protocol):
    """What a ``Channel`` needs from the party that owns it (``transport.Node`` provides it).

    Declared here, below both, so that the channel never imports the node that imports it.
    """

    name: str
    session: bytes
    cluster: Any  # .max_frame
    loop: asyncio.AbstractEventLoop
    ledger: Any  # cost ledger: .sent(phase, round, bytes), .received(...)
    signer: Any  # .sign(bytes) -> bytes
    transcript: Any  # .request_checkpoint()
    public_keys: dict[str, bytes]
    party_by_fingerprint: dict[str, str]
    expected_peers: set[str]
    incarnation: int  # how many times this party has been restarted in this run (hello "inc")
    netem: Any  # parties.runtime.netem.Netem or None: WAN emulation of this party's links

    def note_refused(self, addr: str, reason: str) -> None: ...

    def note_rejected(self, peer: str | None, reason: str) -> None: ...

    def peer_gone(self, peer: str, reason: str, clean: bool) -> None: ...

    def register(self, ch: Channel) -> None: ...

    def deliver(self, ch: Channel, h: dict[str, Any], payload: bytes) -> None: ...


def log(party: str, text: str) -> None:
    """One line on stderr, prefixed by the party name (no tracebacks for expected faults)."""
    print(f"[{party}] {text}", file=sys.stderr, flush=True)


class Channel(asyncio.Protocol):
    """One TLS connection to a peer, both directions."""

    def __init__(self, node: ChannelOwner, expected_peer: str | None) -> None:
        self.node = node
        self.peer: str | None = expected_peer
        self.dialer = expected_peer is not None
        self.transport: asyncio.Transport | None = None
        self.decoder = FrameDecoder(node.cluster.max_frame)
        self.ready: asyncio.Future[None] = node.loop.create_future()
        self.ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.closed = False
        self.finished = False  # peer said goodbye
        self._send_seq = 0
        self._sealed_seq = 0
        self._recv_seq = 0
        self._seal_scheduled = False
        self._paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._assembly: dict[str, Any] | None = None
        self._complete: list[tuple[dict[str, Any], bytes | bytearray]] = []
        self._unsealed = 0
        self._tx_phase: tuple[str, int, int | None] = ("setup", 0, None)
        self._rx_phase: tuple[str, int, int | None] = ("setup", 0, None)
        self.shaper: Shaper | None = None  # WAN emulation of this direction (netem)
        self.addr = "?"
        self.peer_inc = 0  # the peer's incarnation, from its hello
        self.registered = False  # admitted by the owner (only then does its loss matter)
        self.heard = False  # a frame of a protocol message arrived (sealed or not)

    # -- connection lifecycle -------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peername = transport.get_extra_info("peername")
        self.addr = f"{peername[0]}:{peername[1]}" if peername else "?"
        sslobj = transport.get_extra_info("ssl_object")
        der = sslobj.getpeercert(binary_form=True) if sslobj else None
        fp = hashlib.sha256(der).hexdigest() if der else None
        who = self.node.party_by_fingerprint.get(fp or "")
        if self.dialer:
            if who != self.peer:
                self._refuse(
                    f"party {self.peer} at {self.addr} presented a certificate that is "
                    f"not {self.peer}'s certificate in the key directory"
                )
                return
            self._shape()
            self._write_hello()
        elif who is None:
            self._refuse(f"connection from {self.addr}: certificate not in the cluster")
            return
        else:
            self.peer_by_cert = who

    def _shape(self) -> None:
        """Route this channel's writes through the link's emulated conditions, if any."""
        net = self.node.netem
        assert self.transport is not None and self.peer is not None
        if net is not None and self.shaper is None:
            cond = net.link(self.node.name, self.peer)
            if cond.active:
                self.shaper = Shaper(self.node.loop, cond, self.transport.write)

    def _out(self, data: bytes | memoryview) -> None:
        assert self.transport is not None
        if self.shaper is not None:
            self.shaper.write(data)
        else:
            self.transport.write(data)

    async def flushed(self) -> None:
        """Wait until the emulated link has passed everything written on this channel."""
        if self.shaper is not None:
            await self.shaper.wait(0)

    @property
    def backlogged(self) -> bool:
        """Whether ``send`` should wait (transport above its high-water mark, or a rate-limited
        emulated link holding more than its bytes in flight plus ``netem.SHAPER_HIGH``)."""
        return self._paused or (self.shaper is not None and self.shaper.backlog > self.shaper.high)

    def _write_hello(self) -> None:
        n = self.node
        prefix, _ = frame_parts(
            {
                "v": VERSION,
                "k": "h",
                "sid": n.session,
                "fr": n.name,
                "to": self.peer,
                "inc": n.incarnation,
            }
        )
        self._out(prefix)

    def _refuse(self, reason: str) -> None:
        self.node.note_refused(self.addr, reason)
        if not self.ready.done():
            self.ready.set_exception(PeerError(reason))
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.closed and self.peer is None:
            return
        reason = None
        if self.decoder.buffered:
            reason = f"truncated frame ({self.decoder.buffered} bytes) when the connection closed"
        elif self._unsealed:
            reason = f"connection closed with {self._unsealed} unsealed frames"
        if reason and not self.closed:
            self.node.note_rejected(self.peer, reason)
        was_closed = self.closed
        self.closed = True
        if self.shaper is not None:
            self.shaper.close()
        for w in self._drain_waiters:
            if not w.done():
                w.set_result(None)
        if not self.ready.done():
            self.ready.set_exception(
                PeerError(
                    f"connection to {self.peer or self.addr} lost "
                    f"during handshake: {exc or 'closed by peer'}"
                )
            )
        if self.peer is not None and self.registered and not was_closed:
            if self.finished:
                why = f"party {self.peer} has finished"
            else:
                why = reason or f"party {self.peer} disconnected ({exc or 'connection closed'})"
            self.node.peer_gone(self.peer, why, clean=self.finished)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        for w in self._drain_waiters:
            if not w.done():
                w.set_result(None)
        self._drain_waiters.clear()

    async def drain(self) -> None:
        """Wait while the transport's write buffer is above its high-water mark (and while the
        emulated link holds too much)."""
        if self.shaper is not None:
            await self.shaper.wait()
        while self._paused and not self.closed:
            fut = self.node.loop.create_future()
            self._drain_waiters.append(fut)
            await fut

    # -- sending ---------------------------------------------------------------------------
    def send_data(self, header: dict[str, Any], body: bytes | memoryview) -> int:
        """Write one data frame (header completed here); returns its sequence number."""
        if self.closed or self.transport is None:
            raise PeerError(f"cannot send to {self.peer}: connection closed")
        self._send_seq += 1
        header["sq"] = self._send_seq
        prefix, hb = frame_parts(header, body)
        self.send_chain = chain_next(self.send_chain, hb)
        if self.shaper is not None:
            self.shaper.write(prefix + body if len(body) else prefix)
        elif len(body):
            self.transport.writelines((prefix, body))
        else:
            self.transport.write(prefix)
        ph, rd, pr = header["ph"], header["rd"], header.get("pr")
        led = self.node.ledger
        led.sent(ph, rd, len(body), 1, pr=pr, peer=self.peer, kind="payload", writes=1)
        led.sent(ph, rd, len(prefix), 0, pr=pr, peer=self.peer, kind="framing")
        self._tx_phase = (ph, rd, pr)
        if self._send_seq - self._sealed_seq >= SEAL_EVERY:
            self.seal()
        elif not self._seal_scheduled:
            self._seal_scheduled = True
            self.node.loop.call_soon(self.seal)
        return self._send_seq

    def seal(self) -> None:
        """Sign and send the chain head covering every frame sent so far."""
        self._seal_scheduled = False
        if self._sealed_seq == self._send_seq or self.closed or self.transport is None:
            return
        n = self.node
        assert self.peer is not None
        sig = n.signer.sign(
            seal_message(n.session, n.name, self.peer, self._send_seq, self.send_chain)
        )
        prefix, _ = frame_parts(
            {
                "v": VERSION,
                "k": "s",
                "sid": n.session,
                "fr": n.name,
                "to": self.peer,
                "sq": self._send_seq,
                "h": self.send_chain,
                "sg": sig,
            }
        )
        self._out(prefix)
        ph, rd, pr = self._tx_phase  # seals cost what they seal
        n.ledger.sent(ph, rd, len(prefix), 0, pr=pr, peer=self.peer, kind="sealing", writes=1)
        self._sealed_seq = self._send_seq
        n.transcript.request_checkpoint()

    # -- receiving -------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            for frame in self.decoder.feed(data):
                self._on_frame(frame)
        except FrameError as exc:
            self.reject(str(exc))

    def reject(self, reason: str) -> None:
        """Log the rejection in the transcript, close the connection, fail the peer."""
        if self.closed:
            return
        self.node.note_rejected(self.peer, reason)
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
        if not self.ready.done():
            self.ready.set_exception(PeerError(f"rejected frame from {self.peer}: {reason}"))
        if self.peer is not None and self.registered:
            self.node.peer_gone(
                self.peer, f"rejected frame from {self.peer}: {reason}", clean=False
            )

    def _check_route(self, h: dict[str, Any]) -> None:
        n = self.node
        if h["sid"] != n.session:
            raise FrameError("frame for another session")
        if h["fr"] != self.peer or h["to"] != n.name:
            raise FrameError(
                f"frame routed {h['fr']}->{h['to']} on the {self.peer}->{n.name} channel"
            )

    def _on_frame(self, f: Frame) -> None:
        h = f.header
        n = self.node
        if not self.ready.done():
            if f.kind != "h":
                raise FrameError(f"expected hello, got frame kind {f.kind!r}")
            if not self.dialer:
                if h["fr"] != getattr(self, "peer_by_cert", None):
                    raise FrameError(
                        f"hello claims to be {h['fr']!r} but the TLS certificate "
                        f"is {getattr(self, 'peer_by_cert', None)!r}"
                    )
                self.peer = h["fr"]
            self._check_route(h)
            if self.peer not in n.expected_peers:
                raise FrameError(f"party {self.peer} is not a peer of {n.name} in this run")
            self.send_chain = chain_start(n.session, n.name, self.peer)
            self.recv_chain = chain_start(n.session, self.peer, n.name)
            self.peer_inc = h["inc"]
            self._shape()
            n.register(self)  # may refuse (FrameError) before we answer the hello
            self.registered = True
            if not self.dialer:
                self._write_hello()
            self.ready.set_result(None)
            return
        self._check_route(h)
        if f.kind == "h":
            raise FrameError("duplicate hello")
        if f.kind == "d":
            if h["sq"] != self._recv_seq + 1:
                raise FrameError(f"frame sequence {h['sq']} where {self._recv_seq + 1} expected")
            self._recv_seq = h["sq"]
            self.heard = self.heard or not h["ty"].startswith("_")
            self.recv_chain = chain_next(self.recv_chain, f.header_bytes)
            self._unsealed += 1
            ph, rd, pr = h["ph"], h["rd"], h.get("pr")
            n.ledger.received(ph, rd, len(f.body), 1, pr=pr, peer=self.peer, kind="payload")
            n.ledger.received(
                ph, rd, 6 + len(f.header_bytes), 0, pr=pr, peer=self.peer, kind="framing"
            )
            self._rx_phase = (ph, rd, pr)
            self._assemble(h, f.body)
            return
        # seal
        if h["sq"] != self._recv_seq or h["h"] != self.recv_chain:
            raise FrameError(
                f"seal at {h['sq']} does not match the received chain (at {self._recv_seq})"
            )
        assert self.peer is not None
        if not verify_signature(
            n.public_keys[self.peer],
            seal_message(n.session, self.peer, n.name, h["sq"], h["h"]),
            h["sg"],
        ):
            raise FrameError(f"wrongly signed seal at frame {h['sq']}")
        ph, rd, pr = self._rx_phase
        n.ledger.received(ph, rd, 6 + len(f.header_bytes), 0, pr=pr, peer=self.peer, kind="sealing")
        self._unsealed = 0
        complete, self._complete = self._complete, []
        for hdr, payload in complete:
            n.deliver(self, hdr, payload)
        n.transcript.request_checkpoint()

    def _assemble(self, h: dict[str, Any], body: bytes) -> None:
        a = self._assembly
        if h["ci"] == 0:
            if a is not None:
                raise FrameError("new message started before the previous one was complete")
            if h["ln"] > MAX_MESSAGE:
                raise FrameError(f"message of {h['ln']} bytes exceeds {MAX_MESSAGE}")
            if h["nc"] == 1:
                if len(body) != h["ln"] or hashlib.sha256(body).digest() != h["dg"]:
                    raise FrameError("message body does not match its length/digest")
                self._complete.append((h, body))
                return
            a = self._assembly = {
                "h": h,
                "buf": bytearray(h["ln"]),
                "pos": 0,
                "sha": hashlib.sha256(),
                "next": 0,
            }
        elif a is None:
            raise FrameError(f"chunk {h['ci']} without a message start")
        ah = a["h"]
        if (
            h["ci"] != a["next"]
            or h["nc"] != ah["nc"]
            or h["ln"] != ah["ln"]
            or h["dg"] != ah["dg"]
            or h["ty"] != ah["ty"]
        ):
            raise FrameError("chunk inconsistent with its message")
        end = a["pos"] + len(body)
        if end > ah["ln"]:
            raise FrameError("chunks longer than the declared message length")
        a["buf"][a["pos"] : end] = body
        a["sha"].update(body)
        a["pos"] = end
        a["next"] += 1
        if a["next"] == ah["nc"]:
            self._assembly = None
            if end != ah["ln"] or a["sha"].digest() != ah["dg"]:
                raise FrameError("message body does not match its length/digest")
            self._complete.append((ah, a["buf"]))  # bytes-like; no second copy
