"""Propose a schema from a data file (``sdp data schema``), flagged as a disclosure.

A schema must be public and fixed before the data is seen; one read off the private file is
neither: a value listed because one person has it, or a range ending at the oldest person's
age, tells the world about that person. This module still proposes one, because writing a
schema by hand for a wide file is tedious, but every output starts with :data:`WARNING` and
says, attribute by attribute, what was taken from the data and how to replace it by a choice
made in advance (documentation's full code list, a public classification, a range the
questionnaire allowed). The proposal streams the file in blocks, like the readers; memory is
bounded by ``max_values`` distinct values per column.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from protocols.datasets.csv_block import CsvSplitter, read_header
from protocols.datasets.decode import parse_floats, parse_ints, strip
from protocols.datasets.lines import line_blocks, open_binary
from protocols.datasets.report import DataFileError
from protocols.datasets.schema_model import (
    Attribute,
    BinsDomain,
    CategoricalSchema,
    CsvFormat,
    LinesFormat,
    NumericColumn,
    NumericSchema,
    RangeDomain,
    Schema,
    SetValuedSchema,
    ValuesDomain,
    dump_schema,
    fmt_num,
)
from protocols.datasets.sets_block import item_pattern, tokenize

WARNING = (
    "WARNING: this schema was inferred from the data file itself. A domain read off private "
    "records is a disclosure (a value listed because one person has it, a range ending at one "
    "person's value), and differential privacy only holds for a schema fixed before the data is "
    "seen. Review every domain below and replace what came from the data by a choice made in "
    "advance: list every possible value from the survey's documentation or a public code list, "
    "use an integer range the questionnaire allowed, public bin edges, a clipping range chosen "
    "for the question, an item catalogue. Then keep the schema fixed for every run."
)
COMMON_MISSING = ("", "NA", "N/A", "NaN", "nan", "null", "NULL", "?")
DELIMITERS = (",", "\t", ";", "|")
SAMPLE_BYTES = 1 << 16


@dataclass
class _Column:
    """What one column holds, within bounded memory."""

    values: Counter = field(default_factory=Counter)
    overflow: bool = False  # more than max_values distinct values
    missing: set = field(default_factory=set)
    all_int: bool = True
    all_num: bool = True
    low: float = math.inf
    high: float = -math.inf
    rows: int = 0
    numbers: int = 0  # values (not missing) that parse as finite numbers
    others: int = 0  # values (not missing) that do not
    missing_rows: int = 0  # rows whose value is a missing token


def _sample_lines(path: str) -> list[bytes]:
    stream, _ = open_binary(path)
    try:
        for block in line_blocks(stream, path, SAMPLE_BYTES):
            return [block.data[s:e] for s, e in zip(block.starts, block.ends)][:500]
    finally:
        stream.close()
    return []


def sniff(path: str) -> tuple[str, str | None, bool]:
    """Guess (kind, delimiter, header) from the first lines."""
    lines = [x for x in _sample_lines(path) if x.strip()]
    if not lines:
        raise DataFileError(f"{path}: no data lines to infer a schema from")
    tokens = [x.split() for x in lines]
    if len({len(t) for t in tokens}) > 1 and all(
        f.isdigit() for t in tokens for f in t
    ):  # lines of integers of varying length: transactions (the FIMI .dat format)
        return "setvalued", None, False
    best, best_score, present = None, 0.0, {}
    for d in DELIMITERS:
        counts = Counter(x.count(d.encode()) for x in lines)
        mode, freq = counts.most_common(1)[0]
        present[d] = sum(k for c, k in counts.items() if c > 0) / len(lines)
        if mode > 0 and freq / len(lines) > best_score:
            best, best_score = d, freq / len(lines)
    if best is None or best_score < 0.6:
        seps = [d for d in DELIMITERS if present[d] >= 0.5]
        if seps:  # a separator on most lines, in varying numbers: transactions
            return "setvalued", seps[0], False
        if len({len(x.split()) for x in lines}) > 1:
            return "setvalued", None, False
    delim = best or ","
    first = [f.strip().strip('"') for f in lines[0].decode("utf-8", "replace").split(delim)]
    rest = [x.decode("utf-8", "replace").split(delim) for x in lines[1:200]]
    numeric = any(_is_number(f) for f in first)
    repeats = any(
        i < len(r) and r[i].strip().strip('"') == f for r in rest for i, f in enumerate(first)
    )
    header = not numeric and not repeats and all(first)
    if len(first) == 1 and not rest:
        header = False
    kind = "categorical"
    if len(first) == 1 and all(_is_number(r[0].strip()) for r in rest if r and r[0].strip()):
        kind = "numeric"
    return kind, delim, header


def _is_number(s: str) -> bool:
    try:
        return math.isfinite(float(s))
    except ValueError:
        return False


def _nice(x: float, up: bool) -> float:
    """Round away from the data to two significant digits (a less revealing bound)."""
    if x == 0 or not math.isfinite(x):
        return 0.0
    step = 10 ** (math.floor(math.log10(abs(x))) - 1)
    return (math.ceil(x / step) if up else math.floor(x / step)) * step


def _scan_csv(path: str, fmt: CsvFormat, max_values: int) -> tuple[list[str], list[_Column]]:
    stream, _ = open_binary(path)
    names: list[str] = []
    cols: list[_Column] = []
    splitter = None
    try:
        for block in line_blocks(stream, path):
            first = 0
            if splitter is None:
                if fmt.header:
                    names = read_header(block, fmt, path)
                    first = 1
                else:
                    n = block.data[block.starts[0] : block.ends[0]].count(fmt.delimiter.encode())
                    names = [str(i + 1) for i in range(n + 1)]
                cols = [_Column() for _ in names]
                splitter = CsvSplitter(fmt, len(names), list(range(len(names))))
            parsed = splitter.split(block, first)
            for j, c in enumerate(cols):
                _observe(
                    c, strip(parsed.columns[j]) if fmt.strip else parsed.columns[j], max_values
                )
    finally:
        stream.close()
    return names, cols


def _observe(c: _Column, col: pa.Array, max_values: int) -> None:
    c.rows += len(col)
    miss = pc.is_in(col, value_set=pa.array([m.encode() for m in COMMON_MISSING], pa.binary()))
    miss_np = np.asarray(pc.fill_null(miss, False).to_numpy(zero_copy_only=False), dtype=bool)
    c.missing_rows += int(miss_np.sum())
    for v in pc.unique(col.filter(miss)).to_pylist():
        c.missing.add(v.decode("utf-8", "replace"))
    vals = col.filter(pa.array(~miss_np))
    if not len(vals):
        return
    ok_f, x = parse_floats(vals)
    ok_i, _, _ = parse_ints(vals)
    c.all_num &= bool(ok_f.all())
    c.numbers += int(ok_f.sum())
    c.others += int((~ok_f).sum())
    c.all_int &= bool(ok_i.all())
    if ok_f.any():
        c.low, c.high = min(c.low, float(x[ok_f].min())), max(c.high, float(x[ok_f].max()))
    if not c.overflow:
        counts = pc.value_counts(vals)
        for v, k in zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist()):
            c.values[v.decode("utf-8", "replace")] += k
        if len(c.values) > max_values:
            c.overflow, c.values = True, Counter()


def _attribute(
    name: str, col: str | int, c: _Column, max_values: int
) -> tuple[Attribute | None, str]:
    missing = tuple(sorted(c.missing | {""}))
    seen = len(c.values)
    if c.rows and not c.overflow and seen == c.rows and seen > 20:
        return None, f"{name}: every value is distinct (an identifier?): left out"
    if c.overflow and re.search(r"(^|[_ -])id$|^id([_ -]|$)", name, re.IGNORECASE):
        return (
            None,
            f"{name}: more than {max_values} distinct values, named like an identifier: left out",
        )
    if c.all_num and c.low <= c.high and (c.overflow or not c.all_int):
        lo, hi = _nice(c.low, False), _nice(c.high, True)
        if hi <= lo:
            hi = lo + 1
        edges = tuple(float(e) for e in np.linspace(lo, hi, 11))
        dom = BinsDomain(
            edges,
            tuple(f"[{fmt_num(a)}, {fmt_num(b)})" for a, b in zip(edges, edges[1:-1]))
            + (f"[{fmt_num(edges[-2])}, {fmt_num(edges[-1])}]",),
        )
        return Attribute(name, col, dom, missing), (
            f"{name}: 10 equal bins over [{fmt_num(lo)}, {fmt_num(hi)}], the rounded smallest and "
            "largest values in the data: replace by public edges"
        )
    if c.overflow:
        return (
            None,
            f"{name}: more than {max_values} distinct values: left out (raise --max-values, or bin it)",
        )
    if not seen:
        return None, f"{name}: only missing values: left out"
    if seen == 1 and not c.missing_rows:
        (only,) = c.values
        return None, (
            f"{name}: the single value {only!r} in every row: left out (a constant tells "
            "nothing; if other values are possible, add the attribute with its documented list)"
        )
    if c.all_int:
        ints = sorted(int(v) for v in c.values)
        if ints[-1] - ints[0] + 1 <= max_values:
            return Attribute(name, col, RangeDomain(ints[0], ints[-1]), missing), (
                f"{name}: integer range [{ints[0]}, {ints[-1]}] from the smallest and largest "
                "values present: replace by the range the questionnaire allows"
            )
    values = sorted(c.values, key=lambda v: (float(v), v) if c.all_num else (0.0, v))
    rare = sum(1 for v in values if c.values[v] < 5)
    note = f"{name}: the {seen} values present"
    if rare:
        note += f" ({rare} held by fewer than 5 rows: each one discloses those rows)"
    note += ": replace by the documented list"
    if c.missing_rows:
        other = next(o for o in ("missing", "unknown", "missing_") if o not in c.values)
        share = c.missing_rows / max(c.rows, 1)
        note += (
            f'; {c.missing_rows} rows ({share:.1%}) are missing: on_missing = "reject" would '
            "exclude them (each excluded row then takes part as a random dummy record, losing "
            f'all its answers), so on_missing = "other" is proposed: they count as {other!r}'
        )
        return Attribute(
            name, col, ValuesDomain(tuple(values)), missing, "other", "reject", other
        ), note
    return Attribute(name, col, ValuesDomain(tuple(values)), missing), note


def infer_schema(
    path: str | Path,
    kind: str | None = None,
    delimiter: str | None = None,
    header: bool | None = None,
    column: str | None = None,
    max_values: int = 1000,
) -> tuple[Schema, list[str]]:
    """(proposed schema, notes on what came from the data). Reads the whole file once."""
    p = str(path)
    g_kind, g_delim, g_header = sniff(p)
    kind = kind or g_kind
    notes = [] if kind == g_kind else [f"kind {kind!r} as asked (the file looks {g_kind!r})"]
    if kind == "setvalued":
        sep = delimiter if delimiter is not None else (g_delim if g_kind == "setvalued" else None)
        return _infer_sets(p, sep, bool(header), max_values * 100, notes)
    fmt = CsvFormat(delimiter or g_delim or ",", g_header if header is None else header)
    names, cols = _scan_csv(p, fmt, max_values)
    label = (lambda j: names[j]) if fmt.header else (lambda j: int(names[j]))
    if kind == "numeric":
        pick = [j for j, n in enumerate(names) if column in (None, n, str(j + 1))]
        share = {j: cols[j].numbers / max(1, cols[j].numbers + cols[j].others) for j in pick}
        pick = [j for j in pick if share[j] >= 0.9 and cols[j].low <= cols[j].high]
        if not pick:
            what = "" if column is None else " " + repr(column)
            raise DataFileError(f"{p}: no numeric column{what} to propose a range for")
        j = pick[0]
        c = cols[j]
        lo, hi = _nice(c.low, False), _nice(c.high, True)
        hi = hi if hi > lo else lo + 1
        name = names[j] if fmt.header else "value"
        spec = NumericColumn(name, label(j), lo, hi, tuple(sorted(c.missing | {""})))
        if c.others:
            notes.append(f"{name}: {c.others} values are not numbers (rows rejected as malformed)")
        notes.append(
            f"{name}: clipping range [{fmt_num(lo)}, {fmt_num(hi)}] from the rounded smallest and "
            "largest values in the data: replace by a range fixed for the question (it sets the "
            "sensitivity; values outside are clipped)"
        )
        fmt = CsvFormat(
            fmt.delimiter, fmt.header, fmt.quote, None if fmt.header else len(names), fmt.strip
        )
        return NumericSchema(fmt, spec, Path(p).name), notes
    attrs = []
    for j, c in enumerate(cols):
        name = names[j] if fmt.header else f"attr{j + 1}"
        a, note = _attribute(name, label(j), c, max_values)
        notes.append(note)
        if a is not None:
            attrs.append(a)
    if not attrs:
        raise DataFileError(f"{p}: no column looks categorical; " + "; ".join(notes))
    fmt = CsvFormat(
        fmt.delimiter, fmt.header, fmt.quote, None if fmt.header else len(names), fmt.strip
    )
    return CategoricalSchema(fmt, tuple(attrs), Path(p).name), notes


def _infer_sets(
    path: str, sep: str | None, header: bool, cap: int, notes: list[str]
) -> tuple[Schema, list[str]]:
    stream, _ = open_binary(path)
    seen: set[str] = set()
    lo, hi, all_int, overflow = math.inf, -math.inf, True, False
    pattern = item_pattern(sep)
    try:
        for block in line_blocks(stream, path):
            first = 1 if header and block.first_line == 1 else 0
            if block.count <= first:
                continue
            toks, _ = tokenize(block, first, pattern)
            ok, v, _ = parse_ints(toks)
            all_int &= bool(ok.all())
            if ok.any():
                lo, hi = min(lo, int(v[ok].min())), max(hi, int(v[ok].max()))
            if not overflow:
                seen.update(x.decode("utf-8", "replace") for x in pc.unique(toks).to_pylist())
                overflow = len(seen) > cap
    finally:
        stream.close()
    if all_int and lo <= hi:
        uni: ValuesDomain | RangeDomain = RangeDomain(int(lo), int(hi))
        notes.append(
            f"items: integer range [{lo}, {hi}] from the smallest and largest ids present: replace by the catalogue's range"
        )
    elif overflow:
        raise DataFileError(
            f"{path}: more than {cap} distinct item labels; give a universe by hand"
        )
    else:
        uni = ValuesDomain(tuple(sorted(seen)))
        notes.append(f"items: the {len(seen)} item labels present: replace by the full catalogue")
    return SetValuedSchema(LinesFormat(sep, header), uni, name=Path(path).name), notes


def proposal_text(schema: Schema) -> str:
    """The proposed schema as TOML, preceded by the warning as comments. What was taken from
    the data (counts of rows, of values, the values' share) is not written into it: the
    schema is to be published, those notes are for the operator's terminal (:func:`notes_text`)."""
    import textwrap

    head = ["# " + line for line in textwrap.wrap(WARNING, 96)]
    head += [
        "#",
        "# What was taken from the data is printed on the terminal only (counts of a private",
        "# file are not written into a schema that a run publishes).",
    ]
    return "\n".join(head) + "\n\n" + dump_schema(schema)


def notes_text(notes: list[str]) -> str:
    """The notes on what came from the data, for the operator's terminal (never published)."""
    lines = ["Taken from the data (review each; operator only, not written into the schema):"]
    return "\n".join(lines + ["  " + n for n in notes])
