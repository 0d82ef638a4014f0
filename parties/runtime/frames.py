"""Wire frames: length-prefixed, canonical-CBOR headers, raw bodies, sealed hash chains.

Layout of one frame on the (TLS) byte stream::

    u32 big-endian  total length L of what follows (header length field + header + body)
    u16 big-endian  header length H
    H bytes         header: canonical CBOR map (see below)
    L - 2 - H bytes body (raw payload bytes of this chunk; empty for control frames)

Header keys (short names keep small messages small):

    k   kind: "d" data chunk, "s" seal, "h" hello
    sid session id (16 bytes)        fr / to  sender / receiver party names
    ph  phase (str)   rd round (int) ty message type (str)   sq frame sequence number (from 1)
    pr  protocol round (int, optional; ``rd`` is a shuffler/DKG step in some phases, see
        ``parties.runtime.cost_ledger``)
    ci  chunk index   nc number of chunks   ln message length   dg SHA-256 of the whole message
    pb  public (bool: the transcript stores the payload in full)
    h   chain head (32 bytes, seals)   sg Ed25519 signature (64 bytes, seals)

Every data frame extends a per-direction hash chain ``c_i = SHA-256(c_{i-1} || header_i)``
(headers carry the message digest, so the chain commits to bodies). A *seal* frame carries the
head and the sender's Ed25519 signature over it; the receiver holds frames until a seal covering
them verifies, then delivers. Senders seal at the end of every write burst, so a lone message is
signed individually and bursts of small messages share one signature.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Any

import cbor2

VERSION = 1
MAX_HEADER = 4096
PREFIX = struct.Struct(">IH")
SEAL_DOMAIN = b"sdp-seal-v1"
CHAIN_DOMAIN = b"sdp-chain-v1"

_HEADER_TYPES: dict[str, type] = {
    "k": str,
    "sid": bytes,
    "fr": str,
    "to": str,
    "ph": str,
    "rd": int,
    "ty": str,
    "sq": int,
    "ci": int,
    "nc": int,
    "ln": int,
    "dg": bytes,
    "pb": bool,
    "h": bytes,
    "sg": bytes,
    "v": int,
    "inc": int,
    "pr": int,
}
_REQUIRED = {
    "d": {"v", "k", "sid", "fr", "to", "ph", "rd", "ty", "sq", "ci", "nc", "ln", "dg", "pb"},
    "s": {"v", "k", "sid", "fr", "to", "sq", "h", "sg"},
    "h": {"v", "k", "sid", "fr", "to", "inc"},
}
_OPTIONAL = {"d": {"pr"}, "s": set(), "h": set()}


class FrameError(ValueError):
    """A frame is malformed, truncated, oversized, out of sequence or wrongly signed."""


@dataclass
class Frame:
    """A decoded frame: header map, its exact bytes, and the body."""

    header: dict[str, Any]
    header_bytes: bytes
    body: bytes

    @property
    def kind(self) -> str:
        return self.header["k"]


# Canonical CBOR map order (shorter keys first, then bytewise); cbor2 keeps insertion order,
# so emitting keys in this order gives canonical bytes without cbor2's slower sorting mode.
_KEY_ORDER = sorted(_HEADER_TYPES, key=lambda k: (len(k), k))


def encode_header(header: dict[str, Any]) -> bytes:
    """Canonical CBOR of a header (identical to ``cbor2.dumps(header, canonical=True)``)."""
    unknown = header.keys() - _HEADER_TYPES.keys()
    if unknown:
        raise FrameError(f"unknown header fields {sorted(unknown)}")
    return cbor2.dumps({k: header[k] for k in _KEY_ORDER if k in header})


def frame_parts(header: dict[str, Any], body: bytes | memoryview = b"") -> tuple[bytes, bytes]:
    """(prefix + header bytes, header bytes) for a frame; the body is written separately."""
    hb = encode_header(header)
    if len(hb) > MAX_HEADER:
        raise FrameError(f"header of {len(hb)} bytes exceeds {MAX_HEADER}")
    return PREFIX.pack(2 + len(hb) + len(body), len(hb)) + hb, hb


def decode_header(hb: bytes) -> dict[str, Any]:
    """Parse and validate a header; FrameError says what is wrong."""
    try:
        h = cbor2.loads(hb)
    except Exception as exc:
        raise FrameError(f"malformed frame header: {exc}") from None
    if not isinstance(h, dict):
        raise FrameError("frame header is not a map")
    kind = h.get("k")
    if kind not in _REQUIRED:
        raise FrameError(f"unknown frame kind {kind!r}")
    if h.get("v") != VERSION:
        raise FrameError(f"unsupported frame version {h.get('v')!r}")
    if not (_REQUIRED[kind] <= h.keys() <= _REQUIRED[kind] | _OPTIONAL[kind]):
        missing = sorted(_REQUIRED[kind] - h.keys())
        extra = sorted(map(str, h.keys() - _REQUIRED[kind] - _OPTIONAL[kind]))
        raise FrameError(f"frame kind {kind!r}: missing {missing} extra {extra}")
    for key, val in h.items():
        if type(val) is not _HEADER_TYPES[key]:  # exact types: a bool is not an int
            raise FrameError(f"frame field {key!r} has type {type(val).__name__}")
    if kind == "d":
        if (
            h["sq"] < 1
            or h["rd"] < 0
            or h.get("pr", 0) < 0
            or h["ln"] < 0
            or not (0 <= h["ci"] < h["nc"])
        ):
            raise FrameError("frame data fields out of range")
        if len(h["dg"]) != 32:
            raise FrameError("frame digest must be 32 bytes")
    if kind == "h" and h["inc"] < 0:
        raise FrameError("hello incarnation must be >= 0")
    if kind == "s" and (len(h["h"]) != 32 or len(h["sg"]) != 64):
        raise FrameError("seal head/signature have wrong lengths")
    return h


class FrameDecoder:
    """Incremental decoder: feed bytes, get complete frames; enforces the size limit."""

    def __init__(self, max_frame: int) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        """Add bytes; return every frame now complete. Raises FrameError on bad input."""
        self._buf += data
        frames: list[Frame] = []
        buf = self._buf
        pos = 0
        n = len(buf)
        while n - pos >= PREFIX.size:
            total, hlen = PREFIX.unpack_from(buf, pos)
            if total > self.max_frame:
                raise FrameError(f"oversized frame: {total} bytes > limit {self.max_frame}")
            if hlen + 2 > total or hlen > MAX_HEADER:
                raise FrameError(f"bad header length {hlen} in frame of {total} bytes")
            end = pos + 4 + total
            if end > n:
                break
            hb = bytes(buf[pos + PREFIX.size : pos + PREFIX.size + hlen])
            body = bytes(buf[pos + PREFIX.size + hlen : end])
            frames.append(Frame(decode_header(hb), hb, body))
            pos = end
        if pos:
            del buf[:pos]
        return frames

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete frame held (truncation check at close)."""
        return len(self._buf)


def chain_start(session: bytes, sender: str, receiver: str) -> bytes:
    """Initial chain value of the sender->receiver direction."""
    return hashlib.sha256(
        CHAIN_DOMAIN + session + sender.encode() + b"\0" + receiver.encode()
    ).digest()


def chain_next(head: bytes, header_bytes: bytes) -> bytes:
    """Extend a direction's chain by one data frame header."""
    return hashlib.sha256(head + header_bytes).digest()


def seal_message(session: bytes, sender: str, receiver: str, seq: int, head: bytes) -> bytes:
    """The bytes a seal signs."""
    return (
        SEAL_DOMAIN
        + session
        + sender.encode()
        + b"\0"
        + receiver.encode()
        + b"\0"
        + struct.pack(">Q", seq)
        + head
    )
