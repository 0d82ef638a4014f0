"""Set-valued rows: one block of transaction lines to CSR, vectorised.

The block's bytes become one Arrow binary array (one value per line, zero copy), split into
item tokens by a regular expression (any whitespace, or the schema's separator with spaces
around it trimmed; empty tokens are ignored, so a trailing separator is harmless). Tokens map
to universe indices in one ``index_in`` (a list universe) or one integer parse (a range). Per
line, with numpy: items outside the universe, duplicates, size. A transaction is then

* malformed: an item outside the universe (``on_outside = "reject"``), a repeated item
  (``duplicates = "reject"``) or more than ``max_items`` items;
* missing: no item left (``empty = "reject"``): a blank line, or all its items dropped;
* kept otherwise, its items sorted ascending (dropped and merged items are counted).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from protocols.datasets.decode import describe, item_index
from protocols.datasets.lines import LineBlock
from protocols.datasets.report import DataReport, Example
from protocols.datasets.schema_model import RangeDomain, SetValuedSchema

OUTSIDE = "item outside the universe"
DUPLICATE = "duplicate item"
TOO_MANY = "more items than max_items"


def item_pattern(separator: str | None) -> str:
    """The regular expression that cuts a line into item tokens."""
    if separator is None:
        return r"[ \t\r\n\f\v]+"
    return rf"[ \t]*{re.escape(separator)}[ \t]*|^[ \t]+|[ \t\r\n]+$"


def tokenize(block: LineBlock, first: int, pattern: str) -> tuple[pa.Array, np.ndarray]:
    """(non-empty item tokens of lines ``first..``, block-line index - first of each token)."""
    n = block.count - first
    base = int(block.starts[first])
    end = int(block.next_starts[-1])
    offsets = np.empty(n + 1, dtype=np.int32)
    offsets[:-1] = block.starts[first:] - base
    offsets[-1] = end - base
    buf = pa.py_buffer(memoryview(block.data)[base:end])
    lines = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), buf])
    parts = pc.split_pattern_regex(lines, pattern)
    tokens = pc.list_flatten(parts)
    parent = np.asarray(pc.list_parent_indices(parts).to_numpy(), dtype=np.int64)
    nonempty = pc.binary_length(tokens).to_numpy() > 0
    return tokens.filter(pa.array(nonempty)), parent[nonempty]


class SetDecoder:
    """Decodes blocks of transaction lines under one set-valued schema."""

    def __init__(self, schema: SetValuedSchema) -> None:
        self.schema = schema
        self.pattern = item_pattern(schema.format.separator)
        u = schema.universe
        self.universe_text = (
            f"[{u.low}, {u.high}]" if isinstance(u, RangeDomain) else f"of {u.size} listed items"
        )

    def decode(
        self, block: LineBlock, first: int, rep: DataReport
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, items, block line index of each) of the kept transactions among lines
        ``first..``; updates ``rep``."""
        s = self.schema
        n = block.count - first
        rep.rows_total += n
        if n <= 0:
            return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, np.int64)
        tokens, parent = tokenize(block, first, self.pattern)
        idx = item_index(tokens, s.universe)
        outside = idx < 0
        n_out = np.bincount(parent[outside], minlength=n)
        p, i = parent[~outside], idx[~outside]
        order = np.lexsort((i, p))
        p, i = p[order], i[order]
        dup = np.zeros(p.size, dtype=bool)
        dup[1:] = (p[1:] == p[:-1]) & (i[1:] == i[:-1])
        n_dup = np.bincount(p[dup], minlength=n)
        p, i = p[~dup], i[~dup]
        n_items = np.bincount(p, minlength=n)

        bad_out = (n_out > 0) if s.on_outside == "reject" else np.zeros(n, dtype=bool)
        bad_dup = ~bad_out & (n_dup > 0) if s.duplicates == "reject" else np.zeros(n, dtype=bool)
        ok = ~bad_out & ~bad_dup
        too_many = ok & (n_items > s.max_items) if s.max_items is not None else np.zeros(n, bool)
        ok &= ~too_many
        empty = ok & (n_items == 0) & (s.empty == "reject")
        kept = ok & ~empty

        rep.exclude("malformed", int(bad_out.sum()), OUTSIDE)
        rep.exclude("malformed", int(bad_dup.sum()), DUPLICATE)
        rep.exclude("malformed", int(too_many.sum()), TOO_MANY)
        rep.exclude("missing", int(empty.sum()))
        rep.rows_kept += int(kept.sum())
        rep.items["items_outside"] += int(n_out.sum())
        if s.on_outside == "drop":
            rep.items["items_dropped"] += int(n_out[kept].sum())
            rep.items["rows_with_dropped_items"] += int((n_out[kept] > 0).sum())
        if s.duplicates == "merge":
            rep.items["duplicates_merged"] += int(n_dup[kept].sum())

        want = rep.wants_examples()
        if want:
            rep.add_examples(
                self._examples(
                    block,
                    first,
                    tokens,
                    parent,
                    outside,
                    n_out,
                    n_dup,
                    n_items,
                    bad_out,
                    bad_dup,
                    too_many,
                    empty,
                    want,
                )  # fmt: skip
            )
        sel = kept[p]
        indptr = np.zeros(int(kept.sum()) + 1, dtype=np.int64)
        np.cumsum(n_items[kept], out=indptr[1:])
        return indptr, i[sel].astype(np.int32), first + np.flatnonzero(kept).astype(np.int64)

    def _examples(
        self,
        block: LineBlock,
        first: int,
        tokens: pa.Array,
        parent: np.ndarray,
        outside: np.ndarray,
        n_out: np.ndarray,
        n_dup: np.ndarray,
        n_items: np.ndarray,
        bad_out: np.ndarray,
        bad_dup: np.ndarray,
        too_many: np.ndarray,
        empty: np.ndarray,
        want: int,
    ) -> list[Example]:
        out = []
        for r in np.flatnonzero(bad_out | bad_dup | too_many | empty)[:want]:
            line = block.first_line + first + int(r)
            if bad_out[r]:
                k = int(np.flatnonzero(outside & (parent == r))[0])
                v = describe(tokens[k].as_py())
                out.append(
                    Example(
                        line, "malformed", f"{OUTSIDE} {self.universe_text}: {v} ({n_out[r]} such)"
                    )
                )
            elif bad_dup[r]:
                out.append(Example(line, "malformed", f"{DUPLICATE} ({n_dup[r]} repeated)"))
            elif too_many[r]:
                out.append(
                    Example(
                        line,
                        "malformed",
                        f"{n_items[r]} items > max_items = {self.schema.max_items}",
                    )
                )
            else:
                why = "items all outside the universe, dropped" if n_out[r] else "no item"
                out.append(Example(line, "missing", f"empty transaction ({why})"))
        return out
