"""Authenticated channels between parties: mutual TLS 1.3 pinned to the cluster's certificates,
sealed frame chains (``parties.frames``), transcript and cost ledger on every message.

``Node`` is the networked ``PartyContext``: protocol code calls ``phase``, ``send`` and ``recv``.
Connections: for every pair of parties that talk, the one whose name sorts first dials.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import signal
import ssl
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from parties.cluster import Cluster
from parties.frames import (
    MAX_HEADER,
    VERSION,
    Frame,
    FrameDecoder,
    FrameError,
    chain_next,
    chain_start,
    frame_parts,
    seal_message,
)
from parties.keys import PartyIdentity, load_certificate, load_private_key
from parties.ledger import CostLedger
from parties.link import PeerError
from parties.signing import Signer, verify_signature
from parties.transcript import TranscriptWriter

CHUNK = 4 << 20
MAX_MESSAGE = 8 << 30
SEAL_EVERY = 4096  # frames between forced seals inside long bursts
# Fault injection for tests: SDP_FAULT_KILL=PARTY:PHASE[,PARTY:PHASE...] kills PARTY (SIGKILL,
# with its process group) on entering PHASE.
FAULT = set(filter(None, os.environ.get("SDP_FAULT_KILL", "").split(",")))


def log(party: str, text: str) -> None:
    """One line on stderr, prefixed by the party name (no tracebacks for expected faults)."""
    print(f"[{party}] {text}", file=sys.stderr, flush=True)


class Channel(asyncio.Protocol):
    """One TLS connection to a peer, both directions."""

    def __init__(self, node: Node, expected_peer: str | None) -> None:
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
        self._tx_phase = self._rx_phase = ("setup", 0)
        self.addr = "?"

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
            self._write_hello()
        elif who is None:
            self._refuse(f"connection from {self.addr}: certificate not in the cluster")
            return
        else:
            self.peer_by_cert = who

    def _write_hello(self) -> None:
        n = self.node
        prefix, _ = frame_parts(
            {"v": VERSION, "k": "h", "sid": n.session, "fr": n.name, "to": self.peer}
        )
        assert self.transport is not None
        self.transport.write(prefix)

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
        if self.peer is not None and not was_closed:
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
        """Wait while the transport's write buffer is above its high-water mark."""
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
        if len(body):
            self.transport.writelines((prefix, body))
        else:
            self.transport.write(prefix)
        self.node.ledger.sent(header["ph"], header["rd"], len(prefix) + len(body))
        self._tx_phase = (header["ph"], header["rd"])
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
        self.transport.write(prefix)
        n.ledger.sent(*self._tx_phase, len(prefix))  # seals cost what they seal
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
        if self.peer is not None:
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
            if not self.dialer:
                self._write_hello()
            n.register(self)
            self.ready.set_result(None)
            return
        self._check_route(h)
        if f.kind == "h":
            raise FrameError("duplicate hello")
        if f.kind == "d":
            if h["sq"] != self._recv_seq + 1:
                raise FrameError(f"frame sequence {h['sq']} where {self._recv_seq + 1} expected")
            self._recv_seq = h["sq"]
            self.recv_chain = chain_next(self.recv_chain, f.header_bytes)
            self._unsealed += 1
            n.ledger.received(h["ph"], h["rd"], 6 + len(f.header_bytes) + len(f.body))
            self._rx_phase = (h["ph"], h["rd"])
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
        n.ledger.received(*self._rx_phase, 6 + len(f.header_bytes))
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


class Node:
    """A party on the network: listens, dials, and implements ``PartyContext``."""

    def __init__(
        self,
        cluster: Cluster,
        name: str,
        keydir: Path,
        run_dir: Path,
        progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.spec = cluster.party(name)
        self.name = name
        self.session = cluster.session_bytes
        self.run_dir = Path(run_dir)
        self.keydir = Path(keydir)
        self.identities: dict[str, PartyIdentity] = {
            p.name: load_certificate(self.keydir, p.name) for p in cluster.parties
        }
        self.public_keys = {k: v.public_key for k, v in self.identities.items()}
        self.party_by_fingerprint = {v.fingerprint: k for k, v in self.identities.items()}
        self.signer = Signer(load_private_key(self.keydir, name))
        self.ledger = CostLedger(name)
        self.transcript = TranscriptWriter(self.run_dir, name, self.session, self.signer)
        self.channels: dict[str, Channel] = {}
        self.expected_peers: set[str] = set()
        self._queues: dict[tuple[str, str], deque[bytes]] = {}
        self._waiters: dict[tuple[str, str], asyncio.Future[bytes]] = {}
        self._gone: dict[str, str] = {}
        self._aborted: str | None = None
        self._server: asyncio.AbstractServer | None = None
        self._progress = progress
        self.loop = asyncio.get_running_loop()
        self.loop.set_exception_handler(self._loop_exception)

    # -- TLS -------------------------------------------------------------------------------
    def _ssl_context(self, server: bool) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.load_cert_chain(self.keydir / f"{self.name}.crt", self.keydir / f"{self.name}.key")
        ctx.load_verify_locations(
            cadata="".join(ssl.DER_cert_to_PEM_cert(i.cert_der) for i in self.identities.values())
        )
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.check_hostname = False
        return ctx

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        msg = context.get("message", "")
        if isinstance(exc, (ssl.SSLError, ConnectionError, OSError)) or "SSL" in msg:
            self.note_refused("?", f"{msg}: {exc}" if exc else msg)
            return
        loop.default_exception_handler(context)

    def note_refused(self, addr: str, reason: str) -> None:
        log(self.name, f"refused connection {addr}: {reason}")
        self.transcript.append({"dir": "refused", "addr": addr, "reason": reason[:500]})
        self.transcript.request_checkpoint()

    def note_rejected(self, peer: str | None, reason: str) -> None:
        log(self.name, f"rejected input from {peer or '?'}: {reason}")
        self.transcript.append({"dir": "reject", "peer": peer or "?", "reason": reason[:500]})
        self.transcript.request_checkpoint()

    # -- connecting ------------------------------------------------------------------------
    async def start(self, peers: Iterable[str]) -> None:
        """Listen (if a peer dials us) and dial, until every peer is connected."""
        self.expected_peers = set(peers) - {self.name}
        for p in self.expected_peers:
            self.cluster.party(p)
        timeout = self.cluster.phase_timeout
        if any(p < self.name for p in self.expected_peers):
            try:
                self._server = await self.loop.create_server(
                    lambda: Channel(self, None),
                    self.spec.host,
                    self.spec.port,
                    ssl=self._ssl_context(server=True),
                    reuse_address=True,
                )
            except OSError as exc:
                raise PeerError(
                    f"cannot listen on {self.spec.host}:{self.spec.port}: {exc.strerror or exc}"
                ) from None
        dials = [self._dial(p, timeout) for p in sorted(self.expected_peers) if p > self.name]
        await asyncio.gather(*dials)
        deadline = time.monotonic() + timeout
        while set(self.channels) != self.expected_peers:
            if time.monotonic() > deadline:
                missing = sorted(self.expected_peers - set(self.channels))
                raise PeerError(f"no connection from {', '.join(missing)} within {timeout:.0f} s")
            await asyncio.sleep(0.02)

    async def _dial(self, peer: str, timeout: float) -> None:
        spec = self.cluster.party(peer)
        deadline = time.monotonic() + timeout
        ctx = self._ssl_context(server=False)
        last: str = ""
        while True:
            try:
                _, ch = await self.loop.create_connection(
                    lambda: Channel(self, peer),
                    spec.host,
                    spec.port,
                    ssl=ctx,
                    ssl_handshake_timeout=min(10.0, timeout),
                )
                await asyncio.wait_for(ch.ready, timeout)
                return
            except ssl.SSLCertVerificationError as exc:
                raise PeerError(
                    f"party {peer} at {spec.host}:{spec.port} presented a certificate "
                    f"not in the key directory ({exc.verify_message})"
                ) from None
            except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
                last = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            if time.monotonic() > deadline:
                raise PeerError(
                    f"cannot reach party {peer} at {spec.host}:{spec.port}: {last} "
                    f"(gave up after {timeout:.0f} s)"
                )
            await asyncio.sleep(0.1)

    def register(self, ch: Channel) -> None:
        assert ch.peer is not None
        if ch.peer in self.channels and not self.channels[ch.peer].closed:
            raise FrameError(f"second connection from {ch.peer}")
        self.channels[ch.peer] = ch

    # -- PartyContext --------------------------------------------------------------------
    def phase(self, name: str, round: int = 0) -> None:
        """Enter a phase/round (attribution of costs; frames carry it)."""
        self.ledger.enter(name, round)
        if FAULT and f"{self.name}:{name}" in FAULT:  # test hook: the party's host dies
            if os.getpgid(0) == os.getpid():  # started by the launcher as its own group
                os.killpg(os.getpid(), signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)

    def progress(self, label: str, done: int, total: int) -> None:
        """Report progress of a long step to the launcher (if any)."""
        if self._progress is not None:
            self._progress({"party": self.name, "label": label, "done": done, "total": total})

    def _channel(self, peer: str) -> Channel:
        if self._aborted:
            raise PeerError(self._aborted)
        ch = self.channels.get(peer)
        if ch is None:
            raise PeerError(f"{peer} is not connected to {self.name}")
        if ch.closed:
            raise PeerError(self._gone.get(peer, f"connection to {peer} is closed"))
        return ch

    def publish(self, msg_type: str, payload: bytes) -> str:
        """Record a published artifact (e.g. the estimate) in full in the transcript."""
        digest = hashlib.sha256(payload).hexdigest()
        ph, rd = self.ledger.current
        self.transcript.append(
            {
                "dir": "publish",
                "ph": ph,
                "rd": rd,
                "ty": msg_type,
                "len": len(payload),
                "dg": digest,
                "pub": True,
            },
            payload,
        )
        self.transcript.request_checkpoint()
        return digest

    async def send(
        self,
        peer: str,
        msg_type: str,
        payload: bytes | bytearray | memoryview,
        *,
        public: bool = False,
    ) -> None:
        """Send a message (chunked if large); records it in the transcript and ledger."""
        ch = self._channel(peer)
        ph, rd = self.ledger.current
        mv = memoryview(payload).cast("B")
        n = len(mv)
        digest = hashlib.sha256(mv).digest()
        chunk = max(1, min(CHUNK, self.cluster.max_frame - MAX_HEADER - 64))
        nc = max(1, math.ceil(n / chunk))
        first = 0
        for ci in range(nc):
            hdr = {
                "v": VERSION,
                "k": "d",
                "sid": self.session,
                "fr": self.name,
                "to": peer,
                "ph": ph,
                "rd": rd,
                "ty": msg_type,
                "ci": ci,
                "nc": nc,
                "ln": n,
                "dg": digest,
                "pb": public,
            }
            seq = ch.send_data(hdr, mv[ci * chunk : (ci + 1) * chunk])
            first = first or seq
            if ch._paused:
                await ch.drain()
        self.ledger.sent(ph, rd, 0, frames=0, messages=1)
        self.transcript.append_message(
            "send", peer, ph, rd, msg_type, first, n, digest.hex(), public, mv if public else None
        )

    def deliver(self, ch: Channel, h: dict[str, Any], payload: bytes) -> None:
        peer = ch.peer
        assert peer is not None
        first_seq = h["sq"] - h["ci"]
        self.transcript.append_message(
            "recv",
            peer,
            h["ph"],
            h["rd"],
            h["ty"],
            first_seq,
            h["ln"],
            h["dg"].hex(),
            h["pb"],
            payload if h["pb"] else None,
        )
        self.ledger.received(h["ph"], h["rd"], 0, frames=0, messages=1)
        ty = h["ty"]
        if ty == "_bye":
            ch.finished = True
            return
        if ty == "_abort":
            reason = payload.decode("utf-8", "replace")[:500]
            self.abort_local(f"run aborted by {peer}: {reason}")
            return
        key = (peer, ty)
        w = self._waiters.pop(key, None)
        if w is not None and not w.done():
            w.set_result(payload)
        else:
            self._queues.setdefault(key, deque()).append(payload)

    async def recv(self, peer: str, msg_type: str, timeout: float | None = None) -> bytes:
        """Next message of ``msg_type`` from ``peer``; PeerError on timeout/disconnect/abort."""
        q = self._queues.get((peer, msg_type))
        if q:
            return q.popleft()
        if self._aborted:
            raise PeerError(self._aborted)
        if peer not in self.expected_peers:
            raise PeerError(f"{peer} is not a peer of {self.name}")
        if peer in self._gone:
            raise PeerError(f"waiting for {msg_type!r} from {peer}: {self._gone[peer]}")
        fut: asyncio.Future[bytes] = self.loop.create_future()
        self._waiters[(peer, msg_type)] = fut
        t = self.cluster.phase_timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(fut, t)
        except asyncio.TimeoutError:
            self._waiters.pop((peer, msg_type), None)
            raise PeerError(
                f"timed out after {t:.0f} s waiting for {msg_type!r} from {peer} "
                f"in phase {self.ledger.current[0]}"
            ) from None

    def peer_gone(self, peer: str, reason: str, clean: bool) -> None:
        self._gone.setdefault(peer, reason)
        for (p, ty), w in list(self._waiters.items()):
            if p == peer and not w.done():
                w.set_exception(PeerError(f"waiting for {ty!r} from {peer}: {reason}"))
                del self._waiters[(p, ty)]

    def abort_local(self, reason: str) -> None:
        """Fail every pending and future receive with ``reason``."""
        if self._aborted is None:
            self._aborted = reason
        for key, w in list(self._waiters.items()):
            if not w.done():
                w.set_exception(PeerError(reason))
            del self._waiters[key]

    # -- shutdown --------------------------------------------------------------------------
    async def close(self, status: str = "ok", reason: str = "") -> None:
        """Say goodbye (or abort) to every peer, flush, close channels and the transcript."""
        self.phase("close")
        msg_type = "_bye" if status == "ok" else "_abort"
        payload = b"" if status == "ok" else reason.encode()[:1000]
        for peer, ch in list(self.channels.items()):
            if not ch.closed:
                try:
                    await self.send(peer, msg_type, payload)
                    ch.seal()
                except PeerError:
                    pass
        for ch in self.channels.values():
            if ch.transport is not None and not ch.closed:
                ch.closed = True
                ch.transport.close()
        if self._server is not None:
            self._server.close()
        await asyncio.sleep(0.05)
        self.transcript.close("ok" if status == "ok" else "aborted", reason)
        self.ledger.write(self.run_dir)


def progress_printer(stream: Any = sys.stdout) -> Callable[[dict[str, Any]], None]:
    """Progress events as ``@@progress {json}`` lines for the launcher to render."""

    def emit(event: dict[str, Any]) -> None:
        stream.write("@@progress " + json.dumps(event) + "\n")
        stream.flush()

    return emit
