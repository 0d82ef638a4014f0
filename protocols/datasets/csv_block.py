"""Delimited rows (categorical and numeric kinds): one block of lines to decoded columns.

Field splitting is Arrow's CSV parser (quoting with doubled quotes, any one-character delimiter)
run on a block of whole lines, every used column read as raw bytes. A row is exactly one line:
a quote left open at the end of a line would make Arrow swallow the following lines, so each
parse is checked (rows parsed + rows refused == lines given); when it does not add up, the block
is cut in halves and each half parsed again, down to the single offending line, which is then
counted as malformed. The result is the same whatever the block boundaries (tested).
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from protocols.datasets.lines import LineBlock
from protocols.datasets.report import DataFileError
from protocols.datasets.schema_model import CsvFormat

WRONG_FIELDS = "wrong number of fields"
OPEN_QUOTE = "quote not closed on its line"
BARE_CR = "carriage return inside a line"
BLANK = "blank line"
_SMALL = 16  # ranges this short are parsed line by line when their block does not add up


@dataclass(frozen=True)
class _Refused:
    """A refused row's 1-based number within the lines given to ``_arrow``."""

    number: int


@dataclass
class ParsedLines:
    """Rows that split into the right number of fields, and the lines that did not."""

    columns: dict[int, pa.Array]  # 0-based column -> raw values of the parsed rows
    lines: np.ndarray  # block-relative line index of every parsed row
    bad_lines: list[tuple[int, str, str]]  # (block-relative line, reason, detail)


def read_header(block: LineBlock, fmt: CsvFormat, path: str) -> list[str]:
    """The field names on the block's first line (the file's line 1)."""
    raw = block.data[block.starts[0] : block.ends[0]]
    text = raw.decode("utf-8", errors="replace")
    try:
        rows = list(
            csv.reader(
                [text],
                delimiter=fmt.delimiter,
                quotechar=fmt.quote or '"',
                quoting=csv.QUOTE_MINIMAL if fmt.quote else csv.QUOTE_NONE,
                strict=True,
            )
        )
    except csv.Error as exc:
        raise DataFileError(f"{path} line 1: the header line cannot be split ({exc})") from None
    names = rows[0] if rows else [""]
    return [n.strip() if fmt.strip else n for n in names]


class CsvSplitter:
    """Splits lines into ``ncols`` fields and keeps the columns in ``used`` (0-based)."""

    def __init__(self, fmt: CsvFormat, ncols: int, used: list[int]) -> None:
        self.fmt, self.ncols, self.used = fmt, ncols, sorted(set(used))
        names = [f"f{i}" for i in range(ncols)]
        self._names = names
        self._convert = pacsv.ConvertOptions(
            column_types={names[j]: pa.binary() for j in self.used},
            include_columns=[names[j] for j in self.used],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            null_values=[],
            check_utf8=False,
        )

    def split(self, block: LineBlock, first: int = 0) -> ParsedLines:
        """Parse lines ``first..block.count-1`` of the block."""
        tables: list[tuple[pa.Table, np.ndarray]] = []
        bad: list[tuple[int, str, str]] = []
        if first < block.count:
            self._parse(block, first, block.count, tables, bad)
        lines = np.concatenate([t[1] for t in tables]) if tables else np.zeros(0, dtype=np.int64)
        cols: dict[int, pa.Array] = {}
        for j in self.used:
            parts = [c for t, _ in tables for c in t.column(self._names[j]).chunks]
            cols[j] = pa.concat_arrays(parts) if parts else pa.array([], type=pa.binary())
        if lines.size:  # a quote left open at the end of a line takes its newline in
            spans = np.zeros(lines.size, dtype=bool)
            for c in cols.values():
                spans |= np.asarray(
                    pc.fill_null(pc.match_substring(c, "\n"), False).to_numpy(zero_copy_only=False),
                    dtype=bool,
                )
            if spans.any():
                bad += [
                    (int(i), OPEN_QUOTE, "a quoted field does not end on this line")
                    for i in lines[spans]
                ]
                keep = pa.array(~spans)
                cols = {j: c.filter(keep) for j, c in cols.items()}
                lines = lines[~spans]
        if self.ncols > 1 and lines.size:  # Arrow reads a blank line as a row of empty fields
            blank = block.ends[lines] == block.starts[lines]
            if blank.any():
                bad += [(int(i), BLANK, "") for i in lines[blank]]
                keep = pa.array(~blank)
                cols = {j: c.filter(keep) for j, c in cols.items()}
                lines = lines[~blank]
        return ParsedLines(cols, lines, bad)

    def _arrow(self, data: memoryview, nlines: int) -> tuple[pa.Table, list] | None:
        refused: list = []

        def handler(row: pacsv.InvalidRow) -> str:
            refused.append(row)
            return "skip"

        # Arrow drops a UTF-8 BOM at the start of its buffer; a BOM that starts a later line of
        # the file is part of that line's text, so it is shielded by an empty line Arrow skips
        # (which then counts in the refused rows' numbers).
        skip = 1 if bytes(data[:3]) == b"\xef\xbb\xbf" else 0
        buf = pa.py_buffer(b"\n" + bytes(data)) if skip else pa.py_buffer(data)
        failed: list = []
        hook = sys.unraisablehook
        # Arrow decodes a refused row's text as UTF-8 before calling the handler; on other
        # bytes the call fails (reported through the unraisable hook) and the parse errors out.
        sys.unraisablehook = failed.append
        try:
            table = pacsv.read_csv(
                buf,
                read_options=pacsv.ReadOptions(
                    column_names=self._names,
                    use_threads=False,
                    block_size=len(data) + 64,
                    skip_rows=skip,
                ),
                parse_options=pacsv.ParseOptions(
                    delimiter=self.fmt.delimiter,
                    quote_char=self.fmt.quote or False,
                    double_quote=True,
                    escape_char=False,
                    newlines_in_values=False,
                    ignore_empty_lines=False,
                    invalid_row_handler=handler,
                ),
                convert_options=self._convert,
            )
        except pa.ArrowException:
            return None
        finally:
            sys.unraisablehook = hook
        if failed or table.num_rows + len(refused) != nlines:
            return None
        if any(r.number is None for r in refused):
            return None
        if skip:
            refused = [_Refused(r.number - skip) for r in refused]
        return table, refused

    def _parse(self, block: LineBlock, a: int, b: int, tables: list, bad: list) -> None:
        """Lines a..b-1: one Arrow parse when it adds up, else halves (or line by line)."""
        mv = memoryview(block.data)
        got = self._arrow(mv[block.starts[a] : block.next_starts[b - 1]], b - a)
        if got is not None:
            table, refused = got
            rel = np.asarray([r.number - 1 for r in refused], dtype=np.int64)
            keep = np.ones(b - a, dtype=bool)
            keep[rel] = False
            for r in refused:
                i = a + r.number - 1
                bad.append((i, *self._why(mv[block.starts[i] : block.ends[i]].tobytes())))
            tables.append((table, np.arange(a, b, dtype=np.int64)[keep]))
            return
        if b - a == 1:
            bad.append((a, *self._why(mv[block.starts[a] : block.ends[a]].tobytes())))
            return
        if b - a <= _SMALL:
            for i in range(a, b):
                self._parse(block, i, i + 1, tables, bad)
            return
        mid = (a + b) // 2
        self._parse(block, a, mid, tables, bad)
        self._parse(block, mid, b, tables, bad)

    def _why(self, line: bytes) -> tuple[str, str]:
        """Reason for a line that Arrow could not parse on its own."""
        if b"\r" in line:
            return BARE_CR, "a lone carriage return splits the line"
        text = line.decode("utf-8", errors="surrogateescape")
        quoting = csv.QUOTE_MINIMAL if self.fmt.quote else csv.QUOTE_NONE
        try:
            rows = list(
                csv.reader(
                    [text],
                    delimiter=self.fmt.delimiter,
                    quotechar=self.fmt.quote or '"',
                    quoting=quoting,
                    strict=True,
                )
            )
        except csv.Error:
            return OPEN_QUOTE, "a quoted field does not end on this line"
        got = len(rows[0]) if rows else 0
        if got != self.ncols:
            return WRONG_FIELDS, f"{got} fields, the schema expects {self.ncols}"
        return OPEN_QUOTE, "a quoted field does not end on this line"
