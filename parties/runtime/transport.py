"""The party node: mutual TLS 1.3 channels (``parties.runtime.channel``) pinned to the cluster's
certificates, sealed frame chains (``parties.runtime.frames``), transcript and cost ledger on every
message.

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

from parties.runtime.channel import Channel, log
from parties.runtime.cluster import Cluster, cluster_digest
from parties.runtime.cost_ledger import CostLedger
from parties.runtime.frames import (
    MAX_HEADER,
    VERSION,
    FrameError,
)
from parties.runtime.keys import PartyIdentity, cert_path, load_certificate, load_private_key
from parties.runtime.link import PeerError
from parties.runtime.signing import Signer
from parties.runtime.transcript import TranscriptWriter

CHUNK = 4 << 20
# Fault injection for tests: SDP_FAULT_KILL=PARTY:PHASE[,PARTY:PHASE...] kills PARTY (SIGKILL,
# with its process group) on entering PHASE.
FAULT = set(filter(None, os.environ.get("SDP_FAULT_KILL", "").split(",")))


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
        self.transcript = TranscriptWriter(
            self.run_dir, name, self.session, self.signer, cluster_digest(cluster)
        )
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
        ctx.load_cert_chain(cert_path(self.keydir, self.name), self.keydir / f"{self.name}.key")
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
