"""The party node: mutual TLS 1.3 channels (``parties.runtime.channel``) pinned to the cluster's
certificates, sealed frame chains (``parties.runtime.frames``), transcript and cost ledger on every
message.

``Node`` is the networked ``PartyContext``: protocol code calls ``phase``, ``send`` and ``recv``.
Connections: for every pair of parties that talk, the one whose name sorts first dials.

Rejoining (``rejoin_window`` of the cluster, seconds; 0 turns it off): a peer that disconnects
before it delivered any protocol message to this party is *away*, not gone: receives from it
keep waiting, messages for it are queued, and (if this party dials it) it is re-dialled. If it
comes back within the window (the same party restarted with its own directory: its hello
carries a higher incarnation), every message this party ever sent it is sent again on the new
connection, in order, and the run goes on; the transcript records ``away`` and ``rejoin``
entries. Otherwise it is gone, exactly as without the window. A peer that had already sent a
protocol message (a frame of one arrived, sealed or not) is never re-admitted (its restarted
self would randomize or deal again): it is refused with one line, and the run treats it as a
dropout or aborts cleanly. The party itself signs a ``speak`` entry before its first protocol
message, so that its restart refuses to start even if no frame of it got through.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import ssl
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from parties.runtime import fault_hooks
from parties.runtime import netem as _netem
from parties.runtime.busy import BEATS_PER_TIMEOUT, BUSY, BusyBeat, Liveness, wait_while_busy
from parties.runtime.channel import Channel, log
from parties.runtime.cluster import Cluster, cluster_digest
from parties.runtime.cost_ledger import CostLedger, tcp_counts
from parties.runtime.deadlines import run_deadline_s
from parties.runtime.frames import (
    MAX_HEADER,
    VERSION,
    FrameError,
)
from parties.runtime.keys import PartyIdentity, cert_path, load_certificate, load_private_key
from parties.runtime.link import PeerError
from parties.runtime.signing import Signer
from parties.runtime.transcript import SPEAK, TranscriptWriter

CHUNK = 4 << 20
# what a party keeps, per silent peer, to send again if it rejoins; beyond this the peer can no
# longer rejoin (a server's mixed lists are not held twice in memory for a rare restart)
REJOIN_BUFFER = 64 << 20


class Node:
    """A party on the network: listens, dials, and implements ``PartyContext``."""

    def __init__(
        self,
        cluster: Cluster,
        name: str,
        keydir: Path,
        run_dir: Path,
        progress: Callable[[dict[str, Any]], None] | None = None,
        incarnation: int = 0,
    ) -> None:
        self.cluster = cluster
        self.incarnation = int(incarnation)
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
        # WAN emulation (parties.runtime.netem): this party's links, and MPyC's via ACTIVE
        self.netem = _netem.netem_from_cluster(getattr(cluster, "netem", None))
        _netem.ACTIVE = self.netem
        self.transcript = TranscriptWriter(
            self.run_dir,
            name,
            self.session,
            self.signer,
            cluster_digest(cluster),
            incarnation,
            network=self.netem.to_json() if self.netem else {"emulated": "none"},
        )
        self.channels: dict[str, Channel] = {}
        self.expected_peers: set[str] = set()
        self._queues: dict[tuple[str, str], deque[bytes]] = {}
        self._waiters: dict[tuple[str, str], asyncio.Future[bytes]] = {}
        self._gone: dict[str, str] = {}
        self._aborted: str | None = None
        # called once with the reason when a peer aborts the run (the party stops at once,
        # also in the middle of CPU-bound work it awaits)
        self.on_peer_abort: Callable[[str], None] | None = None
        # called on entering each new (phase, round): ``sdp party``'s one line per phase
        self.on_phase: Callable[[str, int], None] | None = None
        self._shown_phase: tuple[str, int] | None = None
        self._closing = False
        # rejoining (module docstring)
        self.rejoin_window = float(getattr(cluster, "rejoin_window", 0.0))
        self.peer_inc: dict[str, int] = {}
        # peers that may not rejoin, with the reason (they spoke, or too much to send again)
        self._no_rejoin: dict[str, str] = {}
        self._away: dict[str, tuple[str, int]] = {}  # peer -> (reason, token) while away
        self._away_token = 0
        self._outbox: dict[str, list[tuple[str, bytes, bool, str, int]]] = {}
        self._spoke = False  # a protocol message was sent (a restart may no longer rejoin)
        self._server: asyncio.AbstractServer | None = None
        self._progress = progress
        # every wait ends (parties.runtime.deadlines): the run's deadline, from this start
        self.deadline_at = time.monotonic() + run_deadline_s(cluster)
        self.deadline_passed: str | None = None
        self.liveness = Liveness()  # peers' ``_busy`` beats (parties.runtime.busy)
        self._half_sent: dict[str, int] = {}  # peers with a message half written
        self.loop = asyncio.get_running_loop()
        # chained, not replaced: the party's own handler (``run_party`` installs one that drops
        # a signal's ``Interrupted`` inside a transport write) still sees what is not ours
        self._outer_exception_handler = self.loop.get_exception_handler()
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
        if self._outer_exception_handler is not None:
            self._outer_exception_handler(loop, context)
        else:
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
        """Admit a connection whose hello named ``ch.peer`` (FrameError: refused)."""
        peer = ch.peer
        assert peer is not None
        old = self.channels.get(peer)
        if old is not None and not old.closed:
            raise FrameError(f"second connection from {peer}")
        last = self.peer_inc.get(peer, 0)
        if old is not None:  # a reconnection: only a restarted party that is awaited
            if peer not in self._away:
                why = self._no_rejoin.get(peer) or f"{self.name} no longer waits for it" + (
                    " (no rejoin window in this run)" if self.rejoin_window <= 0 else ""
                )
                raise FrameError(f"{peer} cannot rejoin the run: {why}")
            if ch.peer_inc <= last:
                raise FrameError(
                    f"{peer} reconnected as incarnation {ch.peer_inc}, not a restart "
                    f"(last seen {last})"
                )
        elif ch.peer_inc < last:
            raise FrameError(f"{peer} connected as incarnation {ch.peer_inc} after {last}")
        self.channels[peer] = ch
        if ch.peer_inc != last or old is not None:
            self.peer_inc[peer] = ch.peer_inc
            log(self.name, f"{peer} rejoined (incarnation {ch.peer_inc})")
            self.transcript.append({"dir": "rejoin", "peer": peer, "inc": ch.peer_inc})
            self.transcript.request_checkpoint()
        if peer in self._away:
            del self._away[peer]
            self.loop.call_soon(self._replay, peer, ch)

    def _replay(self, peer: str, ch: Channel) -> None:
        """Send a rejoined peer everything this party ever sent it, in order (after our hello)."""
        if ch.closed or self.channels.get(peer) is not ch:
            return
        for msg_type, payload, public, ph, rd, pr in list(self._outbox.get(peer, [])):
            for _ in self._frames(ch, peer, msg_type, memoryview(payload), public, ph, rd, pr):
                pass

    # -- PartyContext --------------------------------------------------------------------
    def phase(self, name: str, round: int = 0) -> None:
        """Enter a phase/round (attribution of costs; frames carry it)."""
        if self.on_phase is not None and (name, round) != self._shown_phase:
            self._shown_phase = (name, round)
            self.on_phase(name, round)
        self.ledger.enter(name, round)
        fault_hooks.entering(self.name, name, self.transcript.checkpoint)

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

    def publish(self, msg_type: str, payload: bytes | bytearray | Iterable[bytes]) -> str:
        """Record a published artifact (e.g. the estimate) in full in the transcript; given in
        parts (an iterable of ``bytes``: a mix-net record), it is written to disk as they come."""
        if isinstance(payload, (bytes, bytearray, memoryview)):
            blob = bytes(payload)
            digest, size = hashlib.sha256(blob).hexdigest(), len(blob)
        else:
            (digest, size), blob = self.transcript.store_blob_parts(payload), None
        ph, rd = self.ledger.current
        entry = {"dir": "publish", "ph": ph, "rd": rd, "ty": msg_type, "len": size, "dg": digest}
        self.transcript.append({**entry, "pub": True}, blob)
        self.transcript.checkpoint()  # signed at once: a party may die in a long step after it
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
        if fault_hooks.withholds(self.name, peer, msg_type):
            return  # a deviating party (tests): the message is never sent nor recorded
        ph, rd = self.ledger.current
        if not self._spoke and not msg_type.startswith("_"):
            # signed and on disk before any frame leaves: a restart reads it and refuses
            # (parties.runtime.party.restart_refusal), whether or not the message got through
            self._spoke = True
            self.transcript.append({"dir": SPEAK, "peer": peer, "ty": msg_type})
            self.transcript.checkpoint()
        pr = self.ledger.protocol_round
        keep = (
            self.rejoin_window > 0 and peer not in self._no_rejoin and not msg_type.startswith("_")
        )
        if keep and peer in self._away and not self._aborted:
            self._keep(peer, msg_type, payload, public, ph, rd, pr)
            return  # sent when it rejoins; dropped with it otherwise
        ch = self._channel(peer)
        if keep:
            self._keep(peer, msg_type, payload, public, ph, rd, pr)
        self._half_sent[peer] = self._half_sent.get(peer, 0) + 1
        try:
            for _ in self._frames(ch, peer, msg_type, memoryview(payload), public, ph, rd, pr):
                if ch.backlogged:
                    self.ledger.begin("send_s")
                    try:
                        await ch.drain()
                    finally:
                        self.ledger.end("send_s")
        finally:
            self._half_sent[peer] -= 1
        fault_hooks.sent(self.name, msg_type)

    def _keep(
        self, peer: str, msg_type: str, payload: Any, public: bool, ph: str, rd: int, pr: int
    ) -> None:
        """Keep a message for a possible rejoin of ``peer``, up to REJOIN_BUFFER bytes."""
        kept = self._outbox.setdefault(peer, [])
        kept.append((msg_type, bytes(payload), public, ph, rd, pr))
        if sum(len(m[1]) for m in kept) > REJOIN_BUFFER:
            self._no_rejoin[peer] = (
                f"{self.name} had sent it more than {REJOIN_BUFFER >> 20} MiB to send again"
            )
            del self._outbox[peer]

    def _frames(
        self,
        ch: Channel,
        peer: str,
        msg_type: str,
        payload: memoryview,
        public: bool,
        ph: str,
        rd: int,
        pr: int,
    ) -> Iterable[None]:
        """Write the frames of one message (a generator: the caller may drain between them)."""
        mv = payload.cast("B")
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
                "pr": pr,
                "ty": msg_type,
                "ci": ci,
                "nc": nc,
                "ln": n,
                "dg": digest,
                "pb": public,
            }
            seq = ch.send_data(hdr, mv[ci * chunk : (ci + 1) * chunk])
            first = first or seq
            yield None
        self.ledger.sent(ph, rd, 0, 0, 1, pr=pr, peer=peer, kind="payload")
        self.transcript.append_message(
            "send",
            peer,
            ph,
            rd,
            msg_type,
            first,
            n,
            digest.hex(),
            public,
            mv if public else None,
            pr=pr,
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
            pr=h.get("pr"),
        )
        self.ledger.received(h["ph"], h["rd"], 0, 0, 1, pr=h.get("pr"), peer=peer)
        ty = h["ty"]
        if not ty.startswith("_") and peer not in self._no_rejoin:
            self._no_rejoin[peer] = f"it had already sent protocol messages to {self.name}"
            self._outbox.pop(peer, None)  # it can no longer rejoin: nothing to send again
        if ty == BUSY:
            self.liveness.heard(peer)
            return
        if ty == "_bye":
            ch.finished = True
            return
        if ty == "_abort":
            reason = payload.decode("utf-8", "replace")[:500]
            why = f"run aborted by {peer}: {reason}"
            if self._aborted is None and self.on_peer_abort is not None and not self._closing:
                self.on_peer_abort(why)  # first: the party stops before any wait fails
            self.abort_local(why)
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
            raise self._missed(peer, msg_type, f"waiting for {msg_type!r} from {peer}: "
                               f"{self._gone[peer]}")  # fmt: skip
        fut: asyncio.Future[bytes] = self.loop.create_future()
        self._waiters[(peer, msg_type)] = fut
        t = self.cluster.phase_timeout if timeout is None else timeout
        self.ledger.begin("wait_s")
        try:  # t s of silence from peer (its _busy beats extend it), never past the deadline
            return await wait_while_busy(fut, peer, t, self.deadline_at, self.liveness)
        except asyncio.TimeoutError:
            self._waiters.pop((peer, msg_type), None)
            last = time.monotonic() >= self.deadline_at - 0.01  # the run's deadline came first
            why = f"the run's deadline ({run_deadline_s(self.cluster):.0f} s) passed" * last
            reason = f"{why or f'timed out after {t:.0f} s'} waiting for {msg_type!r} from {peer} "
            reason += f"in phase {self.ledger.current[0]}"
            if last and self.deadline_passed is None:
                self.deadline_passed = f"run aborted: {reason} ({peer} withheld it)"
            raise self._missed(peer, msg_type, reason) from None
        except PeerError as exc:
            if peer in self._gone and not self._aborted:
                raise self._missed(peer, msg_type, str(exc)) from None
            raise
        finally:
            self.ledger.end("wait_s")

    def busy(self, peers: list[str], what: str) -> BusyBeat:
        """Tell ``peers`` this party is working on what they wait for until ``stop``."""
        period = self.cluster.phase_timeout / BEATS_PER_TIMEOUT
        return BusyBeat(self.send, lambda p: self._half_sent.get(p, 0) > 0, peers, period, what)

    def _missed(self, peer: str, msg_type: str, reason: str) -> PeerError:
        """Sign that a receive gave up (``missed`` entry, docs/transcript.md): a message of
        ``msg_type`` from ``peer`` that comes later is late (the protocol waits again or leaves
        it out); ``sdp verify`` names ``peer`` as late instead of calling the message forged."""
        ph, rd = self.ledger.current
        self.transcript.append(
            {"dir": "missed", "peer": peer, "ty": msg_type, "ph": ph, "rd": rd,
             "reason": reason[:500]}
        )  # fmt: skip
        self.transcript.request_checkpoint()
        return PeerError(reason)

    def peer_gone(self, peer: str, reason: str, clean: bool) -> None:
        ch = self.channels.get(peer)
        if ch is not None and ch.heard and peer not in self._no_rejoin:
            # frames of a protocol message arrived, sealed or not: it spoke
            self._no_rejoin[peer] = f"it had already sent protocol messages to {self.name}"
            self._outbox.pop(peer, None)
        if (
            self.rejoin_window > 0
            and not clean
            and peer not in self._no_rejoin
            and peer not in self._gone
            and self._aborted is None
            and not self._closing
        ):
            self._away_token += 1
            token = self._away_token
            self._away[peer] = (reason, token)
            log(self.name, f"{reason}; waiting up to {self.rejoin_window:.0f} s for it to rejoin")
            self.transcript.append({"dir": "away", "peer": peer, "reason": reason[:500]})
            self.transcript.request_checkpoint()
            self.loop.call_later(self.rejoin_window, self._rejoin_expired, peer, token)
            if self.name < peer:  # we dial it: keep trying while it is away
                self.loop.create_task(self._redial(peer, token))
            return
        self._gone_now(peer, reason)

    def _rejoin_expired(self, peer: str, token: int) -> None:
        entry = self._away.get(peer)
        if entry is None or entry[1] != token:
            return
        del self._away[peer]
        self._outbox.pop(peer, None)
        self._gone_now(peer, f"{entry[0]}; it did not rejoin within {self.rejoin_window:.0f} s")

    async def _redial(self, peer: str, token: int) -> None:
        spec = self.cluster.party(peer)
        ctx = self._ssl_context(server=False)
        while self._away.get(peer, ("", -1))[1] == token and not self._closing:
            try:
                _, ch = await self.loop.create_connection(
                    lambda: Channel(self, peer), spec.host, spec.port, ssl=ctx
                )
                await asyncio.wait_for(ch.ready, 10.0)
                return
            except (ConnectionError, OSError, asyncio.TimeoutError, PeerError):
                await asyncio.sleep(0.2)

    def _gone_now(self, peer: str, reason: str) -> None:
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
    def leave(self, reason: str) -> None:
        """Drop every connection without a word to the peers and close the transcript as
        aborted (a restarted party that was refused: the run no longer includes it)."""
        self._closing = True
        for ch in self.channels.values():
            if ch.transport is not None and not ch.closed:
                ch.closed = True
                ch.transport.abort()
        if self._server is not None:
            self._server.close()
        self.transcript.close("aborted", reason)

    async def close(self, status: str = "ok", reason: str = "") -> None:
        """Say goodbye (or abort) to every peer, flush, close channels and the transcript."""
        self._closing = True
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
        open_channels = [c for c in self.channels.values() if c.shaper is not None and not c.closed]
        if open_channels:  # the emulated links still hold the last frames
            await asyncio.wait_for(asyncio.gather(*(c.flushed() for c in open_channels)), 120)
        for peer, ch in self.channels.items():
            if ch.transport is not None and not ch.closed:
                counts = tcp_counts(ch.transport.get_extra_info("socket"))
                if counts is not None:  # what TLS and its handshake put on the wire
                    self.ledger.tcp[peer] = {"sent": counts[0], "received": counts[1]}
                ch.closed = True
                ch.transport.close()
        if self._server is not None:
            self._server.close()
        await asyncio.sleep(0.05)
        self.transcript.close("ok" if status == "ok" else "aborted", reason)
        self.ledger.write(self.run_dir)
