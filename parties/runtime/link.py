"""The interface protocol code uses to talk to other parties.

Protocol logic (mix servers, MPC servers, the two transaction sites, ...) is written as
coroutines against ``PartyContext``; the party runtime provides the networked implementation
(authenticated TLS channels, transcript, cost ledger) and ``parties.runtime.memlink`` an in-memory one for
unit tests. Payloads are ``bytes``; use ``parties.runtime.codec`` helpers to encode numpy arrays and
CBOR values deterministically.
"""

from __future__ import annotations

from typing import Any, Protocol


class PartyContext(Protocol):
    """What a protocol coroutine may do: send, receive, mark phases."""

    name: str  # this party's name

    def phase(self, name: str, round: int = 0) -> None:
        """Enter a protocol phase/round; bytes, messages and CPU time are attributed to it."""

    async def send(self, peer: str, msg_type: str, payload: bytes, *, public: bool = False) -> None:
        """Send one message. ``public=True`` records the payload in full in the transcript
        (public artifacts: ciphertexts, proofs, published estimates); otherwise only its hash."""

    async def recv(self, peer: str, msg_type: str) -> bytes:
        """Receive the next message of ``msg_type`` from ``peer`` (FIFO per peer and type).
        Bytes-like: a message of more than one chunk (``parties.runtime.transport.CHUNK``)
        arrives as a ``bytearray`` (no second copy), which is not hashable.

        Raises ``PeerError`` if the peer disconnects or the phase timeout expires."""

    def progress(self, label: str, done: int, total: int) -> None:
        """Report how far a long step is (``done`` of ``total``) to the launcher's bars."""

    def busy(self, peers: list[str], what: str) -> Any:
        """Tell ``peers`` this party works on what they wait for (``_busy`` beats, which extend
        their receive timeouts; ``parties.runtime.busy``) until the returned object's ``stop``."""


class PeerError(RuntimeError):
    """A peer misbehaved, disconnected or timed out; the message names the peer and phase."""
