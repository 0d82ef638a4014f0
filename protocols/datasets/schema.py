"""The public data schema: what a dataset's records may be, fixed before the data is seen.

Differential privacy needs every parameter that shapes a release (domain sizes, the item
universe, a clipping range) to be public and chosen without looking at the private records. A
schema is a small TOML file holding exactly those choices plus how to read the file (delimiter,
header, column mapping, missing-value tokens and what to do with bad values). The format is
documented in ``docs/data.md``; three kinds:

* ``categorical``: one column per attribute; each attribute's domain is a list of values, an
  integer range, or public bin edges over a numeric column. Records become value indices.
* ``setvalued``: one transaction per line, item ids from a public universe (a list of item
  labels or an integer range). Records become CSR (indptr, item indices).
* ``numeric``: one numeric column with a public clipping range [low, high]; values become
  floats in [0, 1].

:func:`load_schema` / :func:`parse_schema` read and validate; every mistake raises
:class:`SchemaError`, whose message names the file, line and field. :func:`dump_schema` writes
the canonical TOML text back (used by ``sdp data schema`` and for the schema digest a run report
states).
"""

from __future__ import annotations

import difflib
import math
import re
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from protocols.datasets.schema_model import (
    KINDS,
    MAX_DOMAIN,
    SCHEMA_VERSION,
    Attribute,
    BinsDomain,
    CategoricalSchema,
    CsvFormat,
    Domain,
    LinesFormat,
    NumericColumn,
    NumericSchema,
    RangeDomain,
    Schema,
    SchemaError,
    SetValuedSchema,
    ValuesDomain,
    dump_schema,
    fmt_num,
    schema_digest,
)

__all__ = [
    "KINDS",
    "Attribute",
    "BinsDomain",
    "CategoricalSchema",
    "CsvFormat",
    "LinesFormat",
    "NumericColumn",
    "NumericSchema",
    "RangeDomain",
    "Schema",
    "SchemaError",
    "SetValuedSchema",
    "ValuesDomain",
    "dump_schema",
    "load_schema",
    "parse_schema",
    "schema_digest",
]

# ---- locating a field in the TOML text ---------------------------------------------------

_ARRAY_TABLE = re.compile(r"^\s*\[\[\s*([A-Za-z0-9_.-]+)\s*\]\]")
_TABLE = re.compile(r"^\s*\[\s*([A-Za-z0-9_.-]+)\s*\]")
_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+|\"[^\"]*\")\s*=")


class _Locator:
    """Line numbers of tables and keys in the TOML text (for error messages)."""

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple[str | None, int, str | None], int] = {}
        table: str | None = None
        counts: dict[str, int] = {}
        index = 0
        for no, line in enumerate(text.splitlines(), start=1):
            m = _ARRAY_TABLE.match(line)
            if m:
                table = m.group(1)
                index = counts.get(table, 0)
                counts[table] = index + 1
                self.lines.setdefault((table, index, None), no)
                continue
            m = _TABLE.match(line)
            if m:
                table, index = m.group(1), 0
                self.lines.setdefault((table, 0, None), no)
                continue
            m = _KEY.match(line)
            if m:
                self.lines.setdefault((table, index, m.group(1).strip('"')), no)

    def line(self, table: str | None, index: int = 0, key: str | None = None) -> int | None:
        found = self.lines.get((table, index, key)) or self.lines.get((table, index, None))
        if found is None and table is None and key is not None:  # a top-level table
            found = self.lines.get((key, 0, None))
        return found


class _Ctx:
    """Raises :class:`SchemaError` for one table of the document."""

    def __init__(
        self, source: str, loc: _Locator, table: str | None, index: int, label: str
    ) -> None:
        self.source, self.loc, self.table, self.index, self.label = (
            source,
            loc,
            table,
            index,
            label,
        )

    def fail(self, key: str | None, message: str) -> SchemaError:
        where = self.label if key is None else (f"{self.label}.{key}" if self.label else key)
        return SchemaError(self.source, self.loc.line(self.table, self.index, key), where, message)

    def known(self, d: dict[str, Any], allowed: tuple[str, ...]) -> None:
        for k in d:
            if k not in allowed:
                near = difflib.get_close_matches(k, allowed, n=1)
                hint = (
                    f" (did you mean {near[0]!r}?)" if near else f"; allowed: {', '.join(allowed)}"
                )
                raise self.fail(k, f"unknown key {k!r}{hint}")


def _str(ctx: _Ctx, d: dict[str, Any], key: str, default: str | None = None) -> str | None:
    v = d.get(key, default)
    if v is not None and not isinstance(v, str):
        raise ctx.fail(key, f"must be a string, got {_show(v)}")
    return v


def _choice(ctx: _Ctx, d: dict[str, Any], key: str, choices: tuple[str, ...]) -> str:
    v = d.get(key, choices[0])
    if v not in choices:
        raise ctx.fail(key, f"must be one of {', '.join(map(repr, choices))}, got {_show(v)}")
    return v


def _bool(ctx: _Ctx, d: dict[str, Any], key: str, default: bool) -> bool:
    v = d.get(key, default)
    if not isinstance(v, bool):
        raise ctx.fail(key, f"must be true or false, got {_show(v)}")
    return v


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(ctx: _Ctx, key: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ctx.fail(key, f"must be a finite number, got {_show(v)}")
    return float(v)


def _show(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


# ---- parsing -----------------------------------------------------------------------------


def _csv_format(ctx: _Ctx, d: dict[str, Any]) -> CsvFormat:
    ctx.known(d, ("delimiter", "header", "quote", "columns", "strip"))
    delim = _str(ctx, d, "delimiter", ",")
    delim = {"tab": "\t", "\\t": "\t"}.get(delim, delim)
    if len(delim) != 1 or delim in "\r\n":
        raise ctx.fail("delimiter", f"must be one character (or 'tab'), got {delim!r}")
    quote = _str(ctx, d, "quote", '"')
    if quote == "":
        quote = None
    if quote is not None and (len(quote) != 1 or quote in "\r\n" or quote == delim):
        raise ctx.fail(
            "quote", f"must be one character other than the delimiter, or '', got {quote!r}"
        )
    columns = d.get("columns")
    if columns is not None and (not _int(columns) or columns < 1):
        raise ctx.fail("columns", f"must be a positive integer, got {_show(columns)}")
    return CsvFormat(
        delim, _bool(ctx, d, "header", True), quote, columns, _bool(ctx, d, "strip", True)
    )


def _missing(ctx: _Ctx, d: dict[str, Any]) -> tuple[str, ...]:
    v = d.get("missing", [""])
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ctx.fail("missing", f"must be a string or a list of strings, got {_show(v)}")
    if len(set(v)) != len(v):
        raise ctx.fail("missing", "lists a token twice")
    return tuple(v)


def _column(ctx: _Ctx, d: dict[str, Any], name: str, position: int, header: bool) -> str | int:
    col = d.get("column", name if header else position)
    if _int(col):
        if col < 1:
            raise ctx.fail("column", f"column numbers start at 1, got {col}")
        return col
    if isinstance(col, str) and col:
        if not header:
            raise ctx.fail(
                "column",
                f"names a column ({col!r}) but the file has no header: give its number (1 = first)",
            )
        return col
    raise ctx.fail("column", f"must be a header name or a column number, got {_show(col)}")


def _values(ctx: _Ctx, key: str, v: Any, what: str) -> ValuesDomain:
    if not isinstance(v, list) or not v:
        raise ctx.fail(key, f"must be a non-empty list of {what}")
    out = []
    for x in v:
        if isinstance(x, str):
            out.append(x)
        elif _int(x):
            out.append(str(x))
        else:
            raise ctx.fail(
                key,
                f"values must be strings or integers, got {_show(x)} (use range or bins for numbers)",
            )
    seen: set[str] = set()
    for x in out:
        if x in seen:
            raise ctx.fail(key, f"lists {x!r} twice")
        seen.add(x)
    if len(out) > MAX_DOMAIN:
        raise ctx.fail(key, f"more than {MAX_DOMAIN} values")
    return ValuesDomain(tuple(out))


def _range(ctx: _Ctx, key: str, v: Any) -> RangeDomain:
    if not (isinstance(v, list) and len(v) == 2 and all(_int(x) for x in v)):
        raise ctx.fail(key, f"must be [low, high], two integers, got {_show(v)}")
    lo, hi = v
    if lo > hi:
        raise ctx.fail(key, f"low {lo} exceeds high {hi}")
    if hi - lo + 1 > MAX_DOMAIN:
        raise ctx.fail(key, f"holds {hi - lo + 1} values, more than {MAX_DOMAIN}")
    if max(abs(lo), abs(hi)) >= 2**62:
        raise ctx.fail(key, "bounds must lie within +-2^62")
    return RangeDomain(lo, hi)


def _bins(ctx: _Ctx, d: dict[str, Any]) -> BinsDomain:
    v = d["bins"]
    if not isinstance(v, list) or len(v) < 2:
        raise ctx.fail("bins", "must be a list of at least two edges")
    edges = tuple(_number(ctx, "bins", x) for x in v)
    if any(b <= a for a, b in zip(edges, edges[1:])):
        raise ctx.fail("bins", "edges must strictly increase")
    k = len(edges) - 1
    labels = d.get("labels")
    if labels is None:
        f = fmt_num
        labels = [f"[{f(a)}, {f(b)})" for a, b in zip(edges[:-1], edges[1:-1])]
        labels.append(f"[{f(edges[-2])}, {f(edges[-1])}]")
    elif not (isinstance(labels, list) and all(isinstance(x, str) for x in labels)):
        raise ctx.fail("labels", "must be a list of strings")
    elif len(labels) != k:
        raise ctx.fail("labels", f"{k} bins need {k} labels, got {len(labels)}")
    elif len(set(labels)) != len(labels):
        raise ctx.fail("labels", "a label appears twice")
    return BinsDomain(edges, tuple(labels))


def _attribute(ctx: _Ctx, d: dict[str, Any], position: int, fmt: CsvFormat) -> Attribute:
    ctx.known(
        d,
        (
            "name",
            "column",
            "values",
            "range",
            "bins",
            "labels",
            "missing",
            "on_missing",
            "on_out_of_domain",
            "other",
        ),
    )
    name = _str(ctx, d, "name")
    if not name:
        raise ctx.fail("name", "every attribute needs a non-empty name")
    ctx.label = f"attribute {name!r}"
    given = [k for k in ("values", "range", "bins") if k in d]
    if len(given) != 1:
        msg = "needs exactly one domain: values = [...], range = [low, high] or bins = [edges]"
        raise ctx.fail(
            given[1] if len(given) > 1 else None,
            msg + (f"; got {' and '.join(given)}" if given else ""),
        )
    if "labels" in d and given[0] != "bins":
        raise ctx.fail("labels", "labels name the bins of a bins domain; values already are labels")
    if given[0] == "values":
        dom: Domain = _values(ctx, "values", d["values"], "values")
    elif given[0] == "range":
        dom = _range(ctx, "range", d["range"])
    else:
        dom = _bins(ctx, d)
    missing = _missing(ctx, d)
    on_missing = _choice(ctx, d, "on_missing", ("reject", "other"))
    on_ood = _choice(ctx, d, "on_out_of_domain", ("reject", "other", "clip"))
    if on_ood == "clip" and isinstance(dom, ValuesDomain):
        raise ctx.fail(
            "on_out_of_domain",
            "'clip' needs an ordered domain (range or bins), not a list of values",
        )
    other = _str(ctx, d, "other")
    uses_other = "other" in (on_missing, on_ood)
    if uses_other and other is None:
        raise ctx.fail(
            "on_missing" if on_missing == "other" else "on_out_of_domain",
            "maps values to 'other' but no other = \"LABEL\" is given",
        )
    if other is not None and not uses_other:
        raise ctx.fail("other", "is set but neither on_missing nor on_out_of_domain is 'other'")
    labels = dom.labels() if not isinstance(dom, RangeDomain) or dom.size <= 10**6 else ()
    if other is not None and (
        other in labels or (isinstance(dom, RangeDomain) and _in_range(other, dom))
    ):
        raise ctx.fail("other", f"{other!r} is already a value of the domain")
    for tok in missing:
        if isinstance(dom, ValuesDomain) and tok in dom.values:
            raise ctx.fail("missing", f"token {tok!r} is also a value of the domain")
        if isinstance(dom, RangeDomain) and _in_range(tok, dom):
            raise ctx.fail("missing", f"token {tok!r} is also a value of the range")
    if dom.size + (other is not None) > MAX_DOMAIN:
        raise ctx.fail(given[0], f"domain larger than {MAX_DOMAIN}")
    return Attribute(
        name, _column(ctx, d, name, position, fmt.header), dom, missing, on_missing, on_ood, other
    )


def _in_range(tok: str, dom: RangeDomain) -> bool:
    try:
        return dom.low <= int(tok.strip()) <= dom.high
    except ValueError:
        return False


def _check_columns(
    ctx: _Ctx, fmt: CsvFormat, cols: list[tuple[str, str | int]], table: str
) -> CsvFormat:
    seen: dict[str | int, str] = {}
    for name, col in cols:
        if col in seen:
            raise ctx.fail(None, f"{table} {name!r} and {seen[col]!r} read the same column {col!r}")
        seen[col] = name
    numbers = [c for _, c in cols if _int(c)]
    if fmt.columns is not None and numbers and max(numbers) > fmt.columns:
        raise ctx.fail(None, f"column {max(numbers)} is beyond format.columns = {fmt.columns}")
    if not fmt.header and fmt.columns is None:
        fmt = CsvFormat(fmt.delimiter, fmt.header, fmt.quote, max(numbers), fmt.strip)
    return fmt


def parse_schema(text: str, source: str = "<schema>") -> Schema:
    """Parse and validate schema TOML text; :class:`SchemaError` names file, line and field."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+)", str(exc))
        line = int(m.group(1)) if m else None
        if line is None and "end of document" in str(exc):
            line = max(1, len(text.splitlines()))
        msg = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(exc))
        raise SchemaError(source, line, "", f"not valid TOML: {msg}") from None
    loc = _Locator(text)
    top = _Ctx(source, loc, None, 0, "")
    top.known(doc, ("schema", "kind", "name", "format", "attribute", "items", "value"))
    if doc.get("schema", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise top.fail(
            "schema", f"this version reads schema = {SCHEMA_VERSION}, got {_show(doc['schema'])}"
        )
    kind = doc.get("kind")
    if kind not in KINDS:
        raise top.fail("kind", f"must be one of {', '.join(KINDS)}, got {_show(kind)}")
    name = _str(top, doc, "name", "") or ""
    fmt_doc = doc.get("format", {})
    fctx = _Ctx(source, loc, "format", 0, "format")
    if not isinstance(fmt_doc, dict):
        raise top.fail("format", "must be a table: [format]")
    expected = {"categorical": "attribute", "setvalued": "items", "numeric": "value"}[kind]
    for other_kind, key in (
        ("categorical", "attribute"),
        ("setvalued", "items"),
        ("numeric", "value"),
    ):
        if key in doc and key != expected:
            raise top.fail(
                key,
                f"belongs to kind = {other_kind!r}; this schema has kind = {kind!r} (use [{'[' if key == 'attribute' else ''}{expected}{']' if key == 'attribute' else ''}])",
            )
    if kind == "categorical":
        fmt = _csv_format(fctx, fmt_doc)
        attrs_doc = doc.get("attribute")
        if not isinstance(attrs_doc, list) or not attrs_doc:
            raise top.fail(
                "attribute", "a categorical schema needs at least one [[attribute]] table"
            )
        attrs = []
        for i, a in enumerate(attrs_doc):
            attrs.append(
                _attribute(_Ctx(source, loc, "attribute", i, f"attribute[{i + 1}]"), a, i + 1, fmt)
            )
        names = [a.name for a in attrs]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise _Ctx(source, loc, "attribute", i, f"attribute {n!r}").fail(
                    "name", "two attributes share this name"
                )
        fmt = _check_columns(top, fmt, [(a.name, a.column) for a in attrs], "attributes")
        return CategoricalSchema(fmt, tuple(attrs), name)
    if kind == "numeric":
        fmt = _csv_format(fctx, fmt_doc)
        v = doc.get("value")
        vctx = _Ctx(source, loc, "value", 0, "value")
        if not isinstance(v, dict):
            raise top.fail("value", "a numeric schema needs a [value] table with low and high")
        vctx.known(v, ("name", "column", "low", "high", "missing", "on_missing", "on_out_of_range"))
        vname = _str(vctx, v, "name", "value") or "value"
        for key in ("low", "high"):
            if key not in v:
                raise vctx.fail(
                    key,
                    f"the public clipping range needs {key} (fixed in advance, not taken from the data)",
                )
        low, high = _number(vctx, "low", v["low"]), _number(vctx, "high", v["high"])
        if not low < high:
            raise vctx.fail("high", f"must exceed low ({fmt_num(low)}), got {fmt_num(high)}")
        if v.get("on_missing", "reject") != "reject":
            raise vctx.fail(
                "on_missing", "a numeric value has no 'other' category: missing values are rejected"
            )
        pol = _choice(vctx, v, "on_out_of_range", ("clip", "reject"))
        col = NumericColumn(
            vname, _column(vctx, v, vname, 1, fmt.header), low, high, _missing(vctx, v), pol
        )
        fmt = _check_columns(top, fmt, [(col.name, col.column)], "value")
        return NumericSchema(fmt, col, name)
    ictx = _Ctx(source, loc, "items", 0, "items")
    fctx.known(fmt_doc, ("separator", "header"))
    sep = _str(fctx, fmt_doc, "separator", "whitespace")
    sep = {"whitespace": None, "tab": "\t", "\\t": "\t"}.get(sep, sep)
    if sep is not None and (len(sep) != 1 or sep in "\r\n"):
        raise fctx.fail("separator", f"must be 'whitespace' or one character, got {sep!r}")
    lfmt = LinesFormat(sep, _bool(fctx, fmt_doc, "header", False))
    it = doc.get("items")
    if not isinstance(it, dict):
        raise top.fail("items", "a setvalued schema needs an [items] table with the item universe")
    ictx.known(it, ("values", "range", "on_outside", "duplicates", "empty", "max_items"))
    given = [k for k in ("values", "range") if k in it]
    if len(given) != 1:
        raise ictx.fail(
            given[1] if given else None,
            "needs exactly one universe: values = [...] or range = [low, high]",
        )
    uni = (
        _values(ictx, "values", it["values"], "item labels")
        if given[0] == "values"
        else _range(ictx, "range", it["range"])
    )
    if isinstance(uni, ValuesDomain):
        bad = [
            x
            for x in uni.values
            if x == ""
            or (x.strip() != x)
            or (sep is not None and sep in x)
            or (sep is None and re.search(r"\s", x))
        ]
        if bad:
            raise ictx.fail(
                "values",
                f"item {bad[0]!r} is empty, has surrounding spaces or contains the separator",
            )
    mx = it.get("max_items")
    if mx is not None and (not _int(mx) or mx < 1):
        raise ictx.fail("max_items", f"must be a positive integer, got {_show(mx)}")
    return SetValuedSchema(
        lfmt,
        uni,
        _choice(ictx, it, "on_outside", ("reject", "drop")),
        _choice(ictx, it, "duplicates", ("reject", "merge")),
        _choice(ictx, it, "empty", ("reject", "keep")),
        mx,
        name,
    )


def load_schema(path: str | Path) -> Schema:
    """Read and validate a schema file (:class:`SchemaError` on any problem, also unreadable)."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except OSError as exc:
        raise SchemaError(
            str(p), None, "", f"cannot read the schema: {exc.strerror or exc}"
        ) from None
    except UnicodeDecodeError as exc:
        raise SchemaError(str(p), None, "", f"not UTF-8 text (byte {exc.start})") from None
    return parse_schema(text, str(p))
