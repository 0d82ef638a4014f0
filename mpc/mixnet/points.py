"""A list of 32-byte group elements held as one blob.

A Python list of ``n`` 32-byte ``bytes`` objects costs about 80 bytes per element (the object,
its allocator slot and the list's pointer); a mix server holds several such lists per batch
(the input lists, each mixer's output, the decryption shares), so they were most of its memory
per user (``docs/scale.md``, "Memory"). ``Points`` keeps the 32 bytes per element and reads
like the list: indexing gives ``bytes``, a slice gives a ``Points``, iteration gives every
element in order, and it compares equal to the list of the same elements.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

SIZE = 32  # bytes per element (ristretto255 encoding)


class Points(Sequence[bytes]):
    """``len(blob) // 32`` elements, element ``i`` being ``blob[32 i : 32 i + 32]``."""

    __slots__ = ("blob",)

    def __init__(self, blob: bytes) -> None:
        if not isinstance(blob, bytes) or len(blob) % SIZE:
            raise ValueError(f"Points needs bytes of a multiple of {SIZE} bytes")
        self.blob = blob

    def __len__(self) -> int:
        return len(self.blob) // SIZE

    @overload
    def __getitem__(self, i: int) -> bytes: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[bytes]: ...

    def __getitem__(self, i: int | slice) -> bytes | Sequence[bytes]:
        n = len(self)
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step == 1:
                return Points(self.blob[SIZE * start : SIZE * max(start, stop)])
            return [self[k] for k in range(start, stop, step)]
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("Points index out of range")
        return self.blob[SIZE * i : SIZE * i + SIZE]

    def __iter__(self) -> Iterator[bytes]:
        b = self.blob
        return (b[k : k + SIZE] for k in range(0, len(b), SIZE))

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Points):
            return self.blob == other.blob
        if isinstance(other, (list, tuple)):
            return (
                len(other) == len(self)
                and all(isinstance(x, bytes) and len(x) == SIZE for x in other)
                and b"".join(other) == self.blob
            )
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compares equal to lists, like a list

    def __repr__(self) -> str:
        return f"Points(n={len(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Points, (self.blob,))


def joined(col: Sequence[bytes]) -> bytes:
    """The concatenated elements (the blob itself for ``Points``)."""
    return col.blob if isinstance(col, Points) else b"".join(col)
