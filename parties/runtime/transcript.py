"""Append-only, hash-chained, signed transcript of everything a party sends and receives.

One JSON object per line in ``RUN_DIR/transcripts/PARTY.jsonl``; public payloads are stored in
full, content-addressed, under ``RUN_DIR/transcripts/PARTY.blobs/SHA256``. The schema is
documented in ``docs/transcript.md``; ``parties.verify.run`` checks it without this module.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from parties.runtime.signing import Signer

GENESIS_DOMAIN = b"sdp-transcript-v1"
CHECKPOINT_DOMAIN = b"sdp-checkpoint-v1"
# the entry a party signs before its first protocol message: a restart that finds it refuses
# to start (parties.runtime.party.restart_refusal), whether or not the message got through
SPEAK = "speak"


def canonical_json(obj: dict[str, Any]) -> bytes:
    """The canonical byte form hashed for an entry (sorted keys, no spaces, ASCII)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def genesis_hash(session: bytes, party: str) -> str:
    """``prev`` of a transcript's first entry."""
    return hashlib.sha256(GENESIS_DOMAIN + session + party.encode()).hexdigest()


def entry_hash(entry: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the entry without ``hash`` and ``sig``."""
    body = {k: v for k, v in entry.items() if k not in ("hash", "sig")}
    return hashlib.sha256(canonical_json(body)).hexdigest()


class TranscriptWriter:
    """Writes one party's transcript; checkpoints (signed chain heads) are coalesced per tick."""

    def __init__(
        self,
        run_dir: Path,
        party: str,
        session: bytes,
        signer: Signer,
        cluster_sha256: str = "",
        incarnation: int = 0,
        network: dict[str, Any] | None = None,
    ) -> None:
        tdir = Path(run_dir) / "transcripts"
        tdir.mkdir(parents=True, exist_ok=True)
        self.path = tdir / f"{party}.jsonl"
        self.blob_dir = tdir / f"{party}.blobs"
        self.party = party
        self.signer = signer
        self._file = open(self.path, "w", buffering=1 << 20)  # noqa: SIM115
        self._prev = genesis_hash(session, party)
        self._index = 0
        self._unsigned = 0
        self._scheduled = False
        self._closed = False
        self._quote_cache: dict[str, str] = {}
        opening = {"dir": "open", "session": session.hex(), "cluster": cluster_sha256}
        if incarnation:  # a restarted party (parties.runtime.transport, rejoining)
            opening["inc"] = int(incarnation)
        if network is not None:  # the emulated network conditions (parties.runtime.netem)
            opening["network"] = network
        self.append(opening)
        self.checkpoint()

    def store_blob(self, digest_hex: str, payload: bytes | memoryview) -> None:
        """Store a public payload under its SHA-256 (once)."""
        self.blob_dir.mkdir(exist_ok=True)
        path = self.blob_dir / digest_hex
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(payload)
            tmp.replace(path)

    def store_blob_parts(self, parts: Iterable[bytes]) -> tuple[str, int]:
        """Store a public payload given in parts (written to disk as they come, never held
        whole); returns its (SHA-256 hex, length)."""
        self.blob_dir.mkdir(exist_ok=True)
        tmp = self.blob_dir / f".parts.{os.getpid()}.tmp"
        h, size = hashlib.sha256(), 0
        try:
            with open(tmp, "wb") as f:
                for part in parts:
                    h.update(part)
                    f.write(part)
                    size += len(part)
            tmp.replace(self.blob_dir / h.hexdigest())
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return h.hexdigest(), size

    def append(
        self, fields: dict[str, Any], public_payload: bytes | memoryview | None = None
    ) -> str:
        """Append an entry (fields plus index, time, chain); returns its hash."""
        if self._closed:
            raise RuntimeError(f"transcript of {self.party} is closed")
        if public_payload is not None:
            self.store_blob(fields["dg"], public_payload)
        entry = {
            "i": self._index,
            "t": time.time_ns() // 1000,
            "party": self.party,
            **fields,
            "prev": self._prev,
        }
        body = canonical_json(entry)
        h = hashlib.sha256(body).hexdigest()
        # the line is the hashed canonical body with "hash" appended (key order is irrelevant)
        self._file.write(body[:-1].decode() + ',"hash":"' + h + '"}\n')
        self._prev = h
        self._index += 1
        self._unsigned += 1
        return h

    def append_message(
        self,
        direction: str,
        peer: str,
        ph: str,
        rd: int,
        ty: str,
        msg: int,
        length: int,
        dg: str,
        pub: bool,
        public_payload: bytes | memoryview | None = None,
        pr: int | None = None,
    ) -> str:
        """Fast path of ``append`` for send/recv entries: the same canonical JSON, built directly
        (keys in sorted order; strings escaped by ``json.dumps``)."""
        if self._closed:
            raise RuntimeError(f"transcript of {self.party} is closed")
        if public_payload is not None:
            self.store_blob(dg, public_payload)
        q = self._quoted
        body = (
            f'{{"dg":"{dg}","dir":{q(direction)},"i":{self._index},"len":{length},"msg":{msg},'
            f'"party":{q(self.party)},"peer":{q(peer)},"ph":{q(ph)},'
            + ("" if pr is None else f'"pr":{int(pr)},')
            + f'"prev":"{self._prev}",'
            f'"pub":{"true" if pub else "false"},"rd":{rd},"t":{time.time_ns() // 1000},'
            f'"ty":{q(ty)}}}'
        )
        h = hashlib.sha256(body.encode()).hexdigest()
        self._file.write(body[:-1] + ',"hash":"' + h + '"}\n')
        self._prev = h
        self._index += 1
        self._unsigned += 1
        return h

    def _quoted(self, text: str) -> str:
        """JSON string literal (ASCII-escaped), cached: names and types repeat."""
        out = self._quote_cache.get(text)
        if out is None:
            out = json.dumps(text, ensure_ascii=True)
            if len(self._quote_cache) < 4096:
                self._quote_cache[text] = out
        return out

    def request_checkpoint(self) -> None:
        """Sign the chain head at the end of this event-loop tick (coalesces bursts)."""
        if self._scheduled or self._closed:
            return
        self._scheduled = True
        try:
            asyncio.get_running_loop().call_soon(self._scheduled_checkpoint)
        except RuntimeError:
            self._scheduled_checkpoint()

    def _scheduled_checkpoint(self) -> None:
        self._scheduled = False
        if not self._closed:
            self.checkpoint()

    def checkpoint(self) -> None:
        """Append a signed checkpoint covering every entry so far, and flush."""
        if self._unsigned == 0:
            return
        entry = {
            "i": self._index,
            "t": time.time_ns() // 1000,
            "party": self.party,
            "dir": "checkpoint",
            "prev": self._prev,
        }
        h = entry_hash(entry)
        entry["hash"] = h
        entry["sig"] = self.signer.sign(CHECKPOINT_DOMAIN + bytes.fromhex(h)).hex()
        self._file.write(json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n")
        self._file.flush()
        self._prev = h
        self._index += 1
        self._unsigned = 0

    def close(self, status: str = "closed", reason: str = "") -> None:
        """Final entry and checkpoint; idempotent."""
        if self._closed:
            return
        fields: dict[str, Any] = {"dir": "close", "status": status}
        if reason:
            fields["reason"] = reason
        self.append(fields)
        self.checkpoint()
        self._closed = True
        self._file.close()
