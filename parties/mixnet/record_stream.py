"""The public record written to a file as it is encoded, and a list kept as its encoding.

``codec.dumps(public_record(state))`` builds the whole record as Python objects and encodes it
in one piece: at 10^6 users that is the record (~0.93 kB per user of canonical CBOR) several
times over (``docs/scale.md``, "Memory"). Canonical CBOR can be written in parts: a
definite-length map or array header, then its items, each item's canonical encoding being the
same whether it stands alone or inside a container. ``write_record`` writes the record's map
in canonical key order (shorter encoded key first, then bytewise: what ``cbor2`` does with
``canonical=True``), each big list item by item, so that what is in memory at once is one
item's encoding, never the whole. The bytes are exactly ``codec.dumps(record)``
(``tests/test_mixnet_record_stream.py`` compares them).

``EncodedList``: a list of public CBOR items kept as the concatenation of their canonical
encodings (a server's client submissions after screening: 190 bytes per user instead of
1.5 kB of per-user dicts of ``bytes`` objects).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from parties.runtime import codec

ARRAY, MAP = 4, 5  # CBOR major types
CHUNK = 4096  # items encoded at once when a list is written item by item


def cbor_head(major: int, n: int) -> bytes:
    """The shortest (canonical) CBOR header of major type ``major`` with argument ``n``."""
    if n < 0:
        raise ValueError(f"CBOR length must be >= 0, got {n}")
    if n < 24:
        return bytes([major << 5 | n])
    for extra, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * size):
            return bytes([major << 5 | extra]) + n.to_bytes(size, "big")
    raise ValueError(f"CBOR length {n} does not fit 64 bits")


def items_body(items: list[Any]) -> bytes:
    """The concatenated canonical encodings of ``items`` (their array without its header)."""
    return codec.dumps(items)[len(cbor_head(ARRAY, len(items))) :]


@dataclass
class EncodedList:
    """A list of CBOR items held as ``count`` and their concatenated canonical encodings."""

    count: int = 0
    body: bytes = b""

    @classmethod
    def of(cls, items: list[Any]) -> EncodedList:
        return cls(len(items), items_body(items))

    def encoded(self) -> bytes:
        """The list's canonical CBOR (header and items)."""
        return cbor_head(ARRAY, self.count) + self.body

    def items(self) -> list[Any]:
        """The items, decoded (the record's dict form: tests and in-process runs)."""
        return codec.loads(self.encoded()) if self.count else []

    def __len__(self) -> int:
        return self.count


def _key_order(keys: Iterable[str]) -> list[str]:
    """Canonical CBOR map key order: shorter encoded key first, then bytewise."""
    return sorted(keys, key=lambda k: (len(codec.dumps(k)), codec.dumps(k)))


def _list_parts(items: list[Any]) -> Iterator[bytes]:
    yield cbor_head(ARRAY, len(items))
    for i in range(0, len(items), CHUNK):
        yield items_body(items[i : i + CHUNK])


def _value_parts(value: Any) -> Iterator[bytes]:
    """``codec.dumps(value)`` in parts: an ``EncodedList`` as held, a list item by item, a map
    of lists (the plaintexts) key by key, anything else whole."""
    if isinstance(value, EncodedList):
        yield cbor_head(ARRAY, value.count)
        yield value.body
    elif isinstance(value, list):
        yield from _list_parts(value)
    elif isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        if not all(isinstance(k, str) for k in value):
            yield codec.dumps(value)
            return
        yield cbor_head(MAP, len(value))
        for k in _key_order(value):
            yield codec.dumps(k)
            yield from _list_parts(value[k])
    else:
        yield codec.dumps(value)


def record_parts(fields: dict[str, Any]) -> Iterator[bytes]:
    """The canonical CBOR of the map ``fields`` (string keys), in parts."""
    if not all(isinstance(k, str) for k in fields):
        raise TypeError("record keys must be strings")
    yield cbor_head(MAP, len(fields))
    for k in _key_order(fields):
        yield codec.dumps(k)
        yield from _value_parts(fields[k])


def write_record(fields: dict[str, Any], out: IO[bytes]) -> tuple[str, int]:
    """Write the canonical CBOR of ``fields`` to ``out``; returns (SHA-256 hex, length)."""
    h, size = hashlib.sha256(), 0
    for part in record_parts(fields):
        h.update(part)
        out.write(part)
        size += len(part)
    return h.hexdigest(), size


def write_record_file(fields: dict[str, Any], path: Path) -> tuple[str, int]:
    """``write_record`` into ``path`` (written whole or not at all: a temporary file renamed)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            out = write_record(fields, f)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out
