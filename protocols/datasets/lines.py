"""A data file as a stream of line blocks: compression by magic bytes, bounded memory.

:func:`open_binary` opens a file, decompressing gzip when its first bytes are gzip's magic
(``1f 8b``) whatever the file's name; other compressions are named and refused.
:func:`line_blocks` cuts the (decompressed) byte stream into blocks of whole lines of about
``block_bytes`` each, with every line's start and end as numpy arrays (the newline and a
trailing carriage return excluded) and the 1-based number of the block's first line, so that
everything downstream is vectorised per block and still names exact line numbers. A line longer
than ``max_line_bytes`` is not buffered: its number is reported and its bytes are skipped.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from protocols.datasets.report import DataFileError

BLOCK_BYTES = 4 << 20
MAX_LINE_BYTES = 16 << 20
# The one record separator: a data row is the bytes up to and including an LF (a CR just before
# the LF belongs to the line end; any other CR, and an LF inside quotes, is not special: RFC 4180
# line breaks inside a quoted field are not joined, so that no field's content can merge rows
# and change the public number of participants by more than the lines it spans). Both the
# reader (line_blocks) and the launcher's split among client parties
# (parties.runtime.own_data) cut records here.
RECORD_END = 10

_MAGIC = {
    b"BZh": "bzip2 (decompress it, or recompress it with gzip)",
    b"\xfd7zXZ\x00": "xz (decompress it, or recompress it with gzip)",
    b"\x28\xb5\x2f\xfd": "zstd (decompress it, or recompress it with gzip)",
    b"PK\x03\x04": "a zip archive (extract the file first)",
}


def open_binary(path: str | Path) -> tuple[BinaryIO, str]:
    """(stream of the file's decompressed bytes, ``"gzip"`` or ``"none"``)."""
    p = Path(path)
    try:
        fh = open(p, "rb")  # noqa: SIM115 (returned to the caller, who closes it)
    except OSError as exc:
        raise DataFileError(f"{p}: cannot open: {exc.strerror or exc}") from None
    try:
        head = fh.read(6)
        fh.seek(0)
    except OSError as exc:
        fh.close()
        raise DataFileError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if head[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=fh, mode="rb"), "gzip"  # type: ignore[return-value]
    for magic, what in _MAGIC.items():
        if head.startswith(magic):
            fh.close()
            raise DataFileError(f"{p}: the file is compressed with {what}; gzip is read directly")
    return fh, "none"


@dataclass(frozen=True)
class LineBlock:
    """Whole lines: line i is ``data[starts[i]:ends[i]]``, numbered ``first_line + i``.

    ``next_starts[i]`` is where line i+1 begins (so ``data[starts[a]:next_starts[b-1]]`` holds
    lines a..b-1 with their newlines). ``long_lines`` are numbers of skipped overlong lines that
    precede this block's lines."""

    first_line: int
    data: bytes
    starts: np.ndarray
    ends: np.ndarray
    next_starts: np.ndarray
    long_lines: tuple[int, ...] = ()

    @property
    def count(self) -> int:
        return int(self.starts.size)


def record_ends(data: bytes | memoryview) -> np.ndarray:
    """Positions of the record separators (:data:`RECORD_END`) in ``data``."""
    return np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == RECORD_END)


def read_pieces(stream: BinaryIO, path: str, block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """The decompressed bytes of ``stream`` in pieces of at most ``block_bytes``, a UTF-8
    byte-order mark at the start dropped; corrupt compressed data is one DataFileError line."""
    first, done = True, 0
    while True:
        try:
            chunk = stream.read(block_bytes)
        except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise DataFileError(
                f"{path}: the compressed data is corrupt or truncated after {done} bytes ({exc})"
            ) from None
        if first:
            first = False
            if chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
        if not chunk:
            return
        done += len(chunk)
        yield chunk


def _block(first: int, data: bytes, long_lines: tuple[int, ...]) -> LineBlock:
    arr = np.frombuffer(data, dtype=np.uint8)
    nl = record_ends(data)
    if data and (not nl.size or nl[-1] != len(data) - 1):  # last line of a file without "\n"
        nl = np.append(nl, len(data))
    starts = np.empty(nl.size, dtype=np.int64)
    if nl.size:
        starts[0] = 0
        starts[1:] = nl[:-1] + 1
    ends = nl.astype(np.int64)
    nonempty = ends > starts
    cr = np.zeros(ends.size, dtype=bool)
    cr[nonempty] = arr[ends[nonempty] - 1] == 13
    ends = ends - cr
    next_starts = np.minimum(nl.astype(np.int64) + 1, len(data))
    return LineBlock(first, data, starts, ends, next_starts, long_lines)


def line_blocks(
    stream: BinaryIO,
    path: str,
    block_bytes: int = BLOCK_BYTES,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[LineBlock]:
    """Blocks of whole lines read from ``stream`` (a UTF-8 byte-order mark at the start is
    dropped). Memory is bounded by ``block_bytes + max_line_bytes``."""
    line_no = 1
    carry = bytearray()
    skipping = False  # inside an overlong line: drop bytes up to its newline
    long_lines: list[int] = []
    end = bytes([RECORD_END])
    for chunk in read_pieces(stream, path, block_bytes):
        if skipping:
            cut = chunk.find(end)
            if cut < 0:
                continue
            chunk = chunk[cut + 1 :]
            skipping = False
        last = chunk.rfind(end)
        if last < 0:
            carry += chunk
            if len(carry) > max_line_bytes:
                long_lines.append(line_no)
                line_no += 1
                carry = bytearray()
                skipping = True
            continue
        head = bytes(carry) + chunk[: last + 1]
        carry = bytearray(chunk[last + 1 :])
        blk = _block(line_no, head, tuple(long_lines))
        long_lines = []
        line_no += blk.count
        yield blk
    if carry and not skipping:
        yield _block(line_no, bytes(carry), tuple(long_lines))
        long_lines = []
    if long_lines:
        yield _block(line_no, b"", tuple(long_lines))
