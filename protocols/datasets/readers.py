"""Chunked readers: a data file plus its public schema -> kept records per chunk + a DataReport.

Usage (what workloads and client parties call)::

    schema = load_schema("survey.toml")
    data = read_dataset("survey.csv.gz", schema)      # CategoricalData | SetValuedData | NumericData
    data.records, data.report.rows_kept                # the kept records, and how many users

    reader = DataReader("huge.csv.gz", schema)         # streaming, bounded memory
    for chunk in reader:                               # CategoricalChunk | SetValuedChunk | NumericChunk
        ...
    reader.report                                      # complete once the loop ends

Outputs: categorical records are value indices (int8/int16/int32 by the largest domain, which
includes the schema's ``other`` value when it has one); set-valued records are CSR (``indptr``
int64, ``items`` int32 indices into the universe, sorted within a row); numeric values are
float64 in [0, 1] after clipping to the schema's [low, high]. Every parameter of the output
(domain sizes, universe size, clipping range) comes from the schema, never from the file; the
file only decides which rows are kept, and the report counts every row that is not.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from protocols.datasets.categorical import CategoricalDataset
from protocols.datasets.csv_block import CsvSplitter, read_header
from protocols.datasets.decode import (
    CLIPPED,
    MISSING,
    OTHER_MISSING,
    OTHER_OUT_OF_DOMAIN,
    OUT_OF_DOMAIN,
    UNPARSABLE,
    decode_attribute,
    decode_numeric,
    describe,
    strip,
)
from protocols.datasets.lines import (
    BLOCK_BYTES,
    MAX_LINE_BYTES,
    LineBlock,
    line_blocks,
    open_binary,
)
from protocols.datasets.report import DataFileError, DataReport, Example
from protocols.datasets.schema_model import (
    CategoricalSchema,
    NumericSchema,
    Schema,
    SetValuedSchema,
    schema_digest,
)
from protocols.datasets.sets_block import SetDecoder

_COUNTER = {
    MISSING: "missing",
    OUT_OF_DOMAIN: "out_of_domain",
    UNPARSABLE: "unparsable",
    OTHER_MISSING: "missing_mapped_to_other",
    OTHER_OUT_OF_DOMAIN: "out_of_domain_mapped_to_other",
    CLIPPED: "clipped",
}


def index_dtype(max_size: int) -> type[np.signedinteger]:
    """Smallest signed integer type holding indices ``0..max_size-1``."""
    if max_size <= 2**7:
        return np.int8
    if max_size <= 2**15:
        return np.int16
    return np.int32


@dataclass(frozen=True)
class CategoricalChunk:
    records: np.ndarray  # (m, d) value indices
    rows: np.ndarray  # (m,) data-row position of each kept record (0 = first row after a header)

    @property
    def n(self) -> int:
        return int(self.records.shape[0])


@dataclass(frozen=True)
class SetValuedChunk:
    indptr: np.ndarray  # (m + 1,) int64
    items: np.ndarray  # int32 indices into the universe
    rows: np.ndarray  # (m,) data-row position of each kept transaction

    @property
    def n(self) -> int:
        return int(self.indptr.size - 1)


@dataclass(frozen=True)
class NumericChunk:
    values: np.ndarray  # (m,) float64 in [0, 1]
    rows: np.ndarray  # (m,) data-row position of each kept value

    @property
    def n(self) -> int:
        return int(self.values.size)


Chunk = CategoricalChunk | SetValuedChunk | NumericChunk


class DataReader:
    """Iterate over a file's kept records chunk by chunk; ``report`` accounts for every row.

    Raises :class:`DataFileError` (one line) for a file that cannot be read at all: absent,
    compressed with something other than gzip, corrupt gzip, a header without a column the
    schema names. Bad rows never raise: they are counted in ``report``."""

    def __init__(
        self,
        path: str | Path,
        schema: Schema,
        *,
        block_bytes: int = BLOCK_BYTES,
        max_line_bytes: int = MAX_LINE_BYTES,
        max_examples: int = 10,
    ) -> None:
        if block_bytes < 1 or max_line_bytes < 1:
            raise ValueError("block_bytes and max_line_bytes must be positive")
        self.path, self.schema = str(path), schema
        self.block_bytes, self.max_line_bytes = block_bytes, max_line_bytes
        self.max_examples = max_examples
        self.report = self._new_report()
        self.complete = False

    def _new_report(self) -> DataReport:
        return DataReport(
            self.path, self.schema.kind, schema_digest(self.schema), max_examples=self.max_examples
        )

    def __iter__(self) -> Iterator[Chunk]:
        self.report, self.complete = self._new_report(), False
        self._splitter: CsvSplitter | None = None
        stream, self.report.compression = open_binary(self.path)
        try:
            decode = self._setup_sets() if isinstance(self.schema, SetValuedSchema) else None
            for block in line_blocks(stream, self.path, self.block_bytes, self.max_line_bytes):
                for ln in block.long_lines:
                    if ln == 1 and self.schema.format.header:
                        if decode is None:
                            raise DataFileError(
                                f"{self.path} line 1: the header line is longer than "
                                f"{self.max_line_bytes} bytes"
                            )
                        self.report.header_lines = 1
                        continue
                    self.report.rows_total += 1
                    self.report.exclude(
                        "malformed", 1, f"line longer than {self.max_line_bytes} bytes"
                    )
                    self.report.add_examples(
                        [Example(ln, "malformed", f"longer than {self.max_line_bytes} bytes")]
                    )
                if not block.count:
                    continue
                first = 0
                if block.first_line == 1 and self.schema.format.header and not block.long_lines:
                    first = 1
                    self.report.header_lines = 1
                    if decode is None:
                        self._setup_csv(block)
                elif decode is None and self._splitter is None:
                    self._setup_csv(None)
                chunk = decode(block, first) if decode else self._csv_block(block, first)
                if chunk.n:
                    yield chunk
            if decode is None and self._splitter is None and self.schema.format.header:
                raise DataFileError(
                    f"{self.path}: the file is empty, but the schema expects a header line"
                )
        finally:
            stream.close()
            self._splitter = None
        self.report.check()
        self.complete = True

    # ---- set-valued ----------------------------------------------------------------------

    def _setup_sets(self):
        assert isinstance(self.schema, SetValuedSchema)
        dec = SetDecoder(self.schema)

        def run(block: LineBlock, first: int) -> SetValuedChunk:
            indptr, items, lines = dec.decode(block, first, self.report)
            return SetValuedChunk(indptr, items, self._positions(block, lines))

        return run

    def _positions(self, block: LineBlock, lines: np.ndarray) -> np.ndarray:
        """Data-row positions (0-based, after the header) of the block's lines ``lines``: one
        row per line (:mod:`protocols.datasets.lines`), so a row's position is its line's."""
        return block.first_line - 1 - self.report.header_lines + np.asarray(lines, np.int64)

    # ---- categorical and numeric ---------------------------------------------------------

    def _setup_csv(self, header_block: LineBlock | None) -> None:
        schema = self.schema
        assert isinstance(schema, CategoricalSchema | NumericSchema)
        fmt = schema.format
        fields = (
            [(a.name, a.column) for a in schema.attributes]
            if isinstance(schema, CategoricalSchema)
            else [(schema.value.name, schema.value.column)]
        )
        if header_block is not None:
            names = read_header(header_block, fmt, self.path)
            ncols = len(names)
            if fmt.columns is not None and fmt.columns != ncols:
                raise DataFileError(
                    f"{self.path} line 1: the header has {ncols} fields but the schema's "
                    f"format.columns is {fmt.columns}"
                )
            index = []
            for name, col in fields:
                if isinstance(col, int):
                    if col > ncols:
                        raise DataFileError(
                            f"{self.path} line 1: {name!r} reads column {col} but the header has {ncols}"
                        )
                    index.append(col - 1)
                    continue
                hits = [i for i, h in enumerate(names) if h == col]
                if len(hits) != 1:
                    shown = ", ".join(repr(h) for h in names[:12]) + (" ..." if ncols > 12 else "")
                    what = "has no column" if not hits else "has more than one column"
                    raise DataFileError(
                        f"{self.path} line 1: the header {what} {col!r} (for {name!r}); header: {shown}"
                    )
                index.append(hits[0])
        else:
            assert fmt.columns is not None
            ncols = fmt.columns
            index = [int(col) - 1 for _, col in fields]
        self._index = index
        self._splitter = CsvSplitter(fmt, ncols, index)

    def _csv_block(self, block: LineBlock, first: int) -> CategoricalChunk | NumericChunk:
        schema, rep = self.schema, self.report
        assert self._splitter is not None
        parsed = self._splitter.split(block, first)
        rep.rows_total += block.count - first
        found: list[Example] = []
        want = rep.wants_examples()
        for i, reason, detail in sorted(parsed.bad_lines):
            rep.exclude("malformed", 1, reason)
            if len(found) < want:
                found.append(
                    Example(
                        block.first_line + i,
                        "malformed",
                        f"{reason}: {detail}" if detail else reason,
                    )
                )
        m = parsed.lines.size
        cols = [parsed.columns[j] for j in self._index]
        if schema.format.strip and (b" " in block.data or b"\t" in block.data):
            cols = [strip(c) for c in cols]
        if isinstance(schema, CategoricalSchema):
            decoded = [decode_attribute(c, a) for c, a in zip(cols, schema.attributes)]
            names = list(schema.attribute_names)
        else:
            assert isinstance(schema, NumericSchema)
            decoded = [decode_numeric(cols[0], schema.value)]
            names = [schema.value.name]
        status = (
            np.stack([s for _, s in decoded], axis=1) if m else np.zeros((0, len(names)), np.uint8)
        )
        for j, name in enumerate(names):
            counts = np.bincount(status[:, j], minlength=7)
            for code, counter in _COUNTER.items():
                rep.count_value(name, counter, counts[code])
        unparsable = (status == UNPARSABLE).any(axis=1)
        missing = (status == MISSING).any(axis=1) & ~unparsable
        ood = (status == OUT_OF_DOMAIN).any(axis=1) & ~unparsable & ~missing
        kept = ~(unparsable | missing | ood)
        rep.exclude("malformed", int(unparsable.sum()), "unparsable number")
        rep.exclude("missing", int(missing.sum()))
        rep.exclude("out_of_domain", int(ood.sum()))
        rep.rows_kept += int(kept.sum())
        if want > len(found):
            found += self._row_examples(
                block, parsed.lines, cols, status, names, ~kept, want - len(found)
            )
        rep.add_examples(found)
        rows = self._positions(block, parsed.lines[kept])
        if isinstance(schema, NumericSchema):
            return NumericChunk(decoded[0][0][kept], rows)
        dtype = index_dtype(max(schema.domain_sizes))
        out = np.empty((int(kept.sum()), len(names)), dtype=dtype)
        for j, (codes, _) in enumerate(decoded):
            out[:, j] = codes[kept]
        return CategoricalChunk(out, rows)

    def _row_examples(
        self,
        block: LineBlock,
        lines: np.ndarray,
        cols: list,
        status: np.ndarray,
        names: list[str],
        bad: np.ndarray,
        limit: int,
    ) -> list[Example]:
        out = []
        schema = self.schema
        fields = schema.attributes if isinstance(schema, CategoricalSchema) else [schema.value]
        for r in np.flatnonzero(bad)[:limit]:
            row = status[r]
            for code, kind, text in (
                (UNPARSABLE, "malformed", "unparsable number {v}"),
                (MISSING, "missing", "missing value {v}"),
                (OUT_OF_DOMAIN, "out_of_domain", "{v} is outside the domain"),
            ):
                hit = np.flatnonzero(row == code)
                if hit.size:
                    j = int(hit[0])
                    v = describe(cols[j][int(r)].as_py())
                    where = f"{names[j]!r} (column {fields[j].column!r})"
                    out.append(
                        Example(
                            block.first_line + int(lines[r]), kind, f"{where}: " + text.format(v=v)
                        )
                    )
                    break
        return out


@dataclass(frozen=True)
class CategoricalData:
    """Kept categorical records: ``records[i, j]`` indexes ``labels[j]``."""

    schema: CategoricalSchema
    records: np.ndarray
    report: DataReport
    rows: np.ndarray | None = None  # data-row position of each kept record (file order)

    @property
    def n(self) -> int:
        return int(self.records.shape[0])

    @property
    def domain_sizes(self) -> tuple[int, ...]:
        return self.schema.domain_sizes

    @property
    def attributes(self) -> tuple[str, ...]:
        return self.schema.attribute_names

    @property
    def labels(self) -> tuple[tuple[str, ...], ...]:
        return tuple(a.labels() for a in self.schema.attributes)

    def to_dataset(self, name: str | None = None) -> CategoricalDataset:
        """The bundled loaders' type (int64 records), for the seed-000 workloads."""
        return CategoricalDataset(
            name or self.schema.name or Path(self.report.path).name,
            self.records.astype(np.int64),
            self.domain_sizes,
            self.attributes,
            f"{self.report.path} under schema {self.report.schema_sha256[:12]}",
        )


@dataclass(frozen=True)
class SetValuedData:
    """Kept transactions as CSR: the items of user i are ``items[indptr[i]:indptr[i+1]]``."""

    schema: SetValuedSchema
    indptr: np.ndarray
    items: np.ndarray
    report: DataReport
    rows: np.ndarray | None = None  # data-row position of each kept transaction

    @property
    def n(self) -> int:
        return int(self.indptr.size - 1)

    @property
    def d(self) -> int:
        return self.schema.d

    def sizes(self) -> np.ndarray:
        return np.diff(self.indptr)

    @property
    def labels(self) -> tuple[str, ...]:
        """Item labels by index (for a range universe, the ids as text)."""
        return self.schema.universe.labels()

    def padded(self, width: int | None = None) -> np.ndarray:
        """int32 (n, width) matrix, items left-aligned, -1 after (the bundled loaders' layout).

        ``width`` defaults to the schema's ``max_items``; without one, to the largest set
        (which is then a property of the data: pass a public width for a release)."""
        sizes = self.sizes()
        w = width if width is not None else self.schema.max_items
        if w is None:
            w = int(sizes.max()) if sizes.size else 1
        if sizes.size and sizes.max() > w:
            raise ValueError(f"a transaction has {int(sizes.max())} items > width {w}")
        out = np.full((self.n, max(int(w), 1)), -1, dtype=np.int32)
        rows = np.repeat(np.arange(self.n), sizes)
        cols = np.arange(self.items.size) - np.repeat(self.indptr[:-1], sizes)
        out[rows, cols] = self.items
        return out


@dataclass(frozen=True)
class NumericData:
    """Kept values in [0, 1]; ``low + values * (high - low)`` is the clipped original."""

    schema: NumericSchema
    values: np.ndarray
    report: DataReport
    rows: np.ndarray | None = None  # data-row position of each kept value

    @property
    def n(self) -> int:
        return int(self.values.size)


Data = CategoricalData | SetValuedData | NumericData


def read_dataset(path: str | Path, schema: Schema, **options: int) -> Data:
    """All kept records of a file (chunks concatenated) with the report; ``options`` go to
    :class:`DataReader` (``block_bytes``, ``max_line_bytes``, ``max_examples``)."""
    reader = DataReader(path, schema, **options)
    chunks = list(reader)
    rows = np.concatenate([c.rows for c in chunks]) if chunks else np.zeros(0, np.int64)
    if isinstance(schema, CategoricalSchema):
        dtype = index_dtype(max(schema.domain_sizes))
        recs = [c.records for c in chunks if isinstance(c, CategoricalChunk)]
        matrix = np.concatenate(recs) if recs else np.zeros((0, len(schema.attributes)), dtype)
        return CategoricalData(schema, matrix, reader.report, rows)
    if isinstance(schema, NumericSchema):
        vals = [c.values for c in chunks if isinstance(c, NumericChunk)]
        values = np.concatenate(vals) if vals else np.zeros(0)
        return NumericData(schema, values, reader.report, rows)
    parts = [c for c in chunks if isinstance(c, SetValuedChunk)]
    sizes = [np.diff(c.indptr) for c in parts]
    indptr = np.zeros(sum(s.size for s in sizes) + 1, dtype=np.int64)
    if sizes:
        np.cumsum(np.concatenate(sizes), out=indptr[1:])
    items = np.concatenate([c.items for c in parts]) if parts else np.zeros(0, np.int32)
    return SetValuedData(schema, indptr, items, reader.report, rows)
