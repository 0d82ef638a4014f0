"""The public schema's types and their canonical TOML text (the writer; the reader is ``schema``).

A schema (see :mod:`protocols.datasets.schema` and ``docs/data.md``) is one of
:class:`CategoricalSchema`, :class:`SetValuedSchema`, :class:`NumericSchema`: frozen dataclasses
holding every public choice about a dataset. :func:`dump_schema` writes the canonical TOML text
(``parse_schema(dump_schema(s)) == s``) and :func:`schema_digest` its SHA-256, which names the exact
schema a run used.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

KINDS = ("categorical", "setvalued", "numeric")
MAX_DOMAIN = 2**31 - 1  # value indices are int32 at most
SCHEMA_VERSION = 1


class SchemaError(ValueError):
    """A schema that cannot be used; ``str()`` is one line: ``FILE:LINE: FIELD: MESSAGE``."""

    def __init__(self, source: str, line: int | None, where: str, message: str) -> None:
        self.source, self.line, self.where, self.message = source, line, where, message
        loc = f"{source}:{line}" if line else source
        super().__init__(f"{loc}: {where}: {message}" if where else f"{loc}: {message}")


# ---- the schema's types ------------------------------------------------------------------


@dataclass(frozen=True)
class ValuesDomain:
    """An explicit list of values, matched as text (after trimming whitespace when ``strip``)."""

    values: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.values)

    def labels(self) -> tuple[str, ...]:
        return self.values


@dataclass(frozen=True)
class RangeDomain:
    """The integers ``low..high`` (both included), parsed as numbers: ``07`` is 7."""

    low: int
    high: int

    @property
    def size(self) -> int:
        return self.high - self.low + 1

    def labels(self) -> tuple[str, ...]:
        return tuple(str(v) for v in range(self.low, self.high + 1))


@dataclass(frozen=True)
class BinsDomain:
    """A numeric column cut at public edges: bin i is [e_i, e_i+1), the last bin [e_k-1, e_k]."""

    edges: tuple[float, ...]
    bin_labels: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.edges) - 1

    def labels(self) -> tuple[str, ...]:
        return self.bin_labels


Domain = ValuesDomain | RangeDomain | BinsDomain


@dataclass(frozen=True)
class CsvFormat:
    """How a delimited file is laid out. ``columns`` is the exact field count of every row."""

    delimiter: str = ","
    header: bool = True
    quote: str | None = '"'
    columns: int | None = None
    strip: bool = True


@dataclass(frozen=True)
class Attribute:
    """One categorical attribute: its column, domain, missing tokens and policies."""

    name: str
    column: str | int
    domain: Domain
    missing: tuple[str, ...] = ("",)
    on_missing: str = "reject"  # reject | other
    on_out_of_domain: str = "reject"  # reject | other | clip (range and bins only)
    other: str | None = None

    @property
    def size(self) -> int:
        """Number of values the randomizer sees: the domain, plus one if ``other`` is used."""
        return self.domain.size + (1 if self.other is not None else 0)

    def labels(self) -> tuple[str, ...]:
        base = self.domain.labels()
        return base + ((self.other,) if self.other is not None else ())


@dataclass(frozen=True)
class CategoricalSchema:
    """Categorical records: one column per attribute."""

    format: CsvFormat
    attributes: tuple[Attribute, ...]
    name: str = ""
    kind: str = field(default="categorical", init=False)

    @property
    def domain_sizes(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.attributes)

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    def public_parameters(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "attributes": list(self.attribute_names),
            "domain_sizes": list(self.domain_sizes),
            "schema_sha256": schema_digest(self),
        }


@dataclass(frozen=True)
class LinesFormat:
    """Set-valued layout: one transaction per line; ``separator`` None = any run of whitespace."""

    separator: str | None = None
    header: bool = False


@dataclass(frozen=True)
class SetValuedSchema:
    """Set-valued records: one transaction per line over a public item universe."""

    format: LinesFormat
    universe: ValuesDomain | RangeDomain
    on_outside: str = "reject"  # reject | drop (the item, keeping the transaction)
    duplicates: str = "reject"  # reject | merge
    empty: str = "reject"  # reject (counted as missing) | keep (a user with no items)
    max_items: int | None = None
    name: str = ""
    kind: str = field(default="setvalued", init=False)

    @property
    def d(self) -> int:
        """Size of the item universe."""
        return self.universe.size

    def public_parameters(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "d": self.d,
            "max_items": self.max_items,
            "schema_sha256": schema_digest(self),
        }


@dataclass(frozen=True)
class NumericColumn:
    """The numeric column and its public clipping range."""

    name: str
    column: str | int
    low: float
    high: float
    missing: tuple[str, ...] = ("",)
    on_out_of_range: str = "clip"  # clip | reject


@dataclass(frozen=True)
class NumericSchema:
    """One numeric value per record, clipped to [low, high] and mapped to [0, 1]."""

    format: CsvFormat
    value: NumericColumn
    name: str = ""
    kind: str = field(default="numeric", init=False)

    def public_parameters(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "value": self.value.name,
            "low": self.value.low,
            "high": self.value.high,
            "schema_sha256": schema_digest(self),
        }


Schema = CategoricalSchema | SetValuedSchema | NumericSchema


# ---- writing -----------------------------------------------------------------------------


def fmt_num(x: float) -> str:
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x))


def toml_string(s: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


_q = toml_string


def _list(xs: tuple[Any, ...] | list[Any], per_line: int = 8) -> str:
    items = [
        _q(x) if isinstance(x, str) else fmt_num(x) if isinstance(x, float) else str(x) for x in xs
    ]
    if len(items) <= per_line:
        return "[" + ", ".join(items) + "]"
    rows = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[\n    " + ",\n    ".join(rows) + ",\n]"


def _csv_lines(f: CsvFormat) -> list[str]:
    out = ["[format]", f"delimiter = {_q(f.delimiter)}", f"header = {str(f.header).lower()}"]
    out.append(f"quote = {_q(f.quote or '')}")
    if f.columns is not None:
        out.append(f"columns = {f.columns}")
    out.append(f"strip = {str(f.strip).lower()}")
    return out


def _col(c: str | int) -> str:
    return _q(c) if isinstance(c, str) else str(c)


def dump_schema(schema: Schema) -> str:
    """Canonical TOML text of ``schema``; ``parse_schema(dump_schema(s)) == s``."""
    out = [f"schema = {SCHEMA_VERSION}", f"kind = {_q(schema.kind)}"]
    if schema.name:
        out.append(f"name = {_q(schema.name)}")
    out.append("")
    if isinstance(schema, CategoricalSchema):
        out += _csv_lines(schema.format)
        for a in schema.attributes:
            out += ["", "[[attribute]]", f"name = {_q(a.name)}", f"column = {_col(a.column)}"]
            if isinstance(a.domain, ValuesDomain):
                out.append(f"values = {_list(a.domain.values)}")
            elif isinstance(a.domain, RangeDomain):
                out.append(f"range = [{a.domain.low}, {a.domain.high}]")
            else:
                out.append(f"bins = {_list(a.domain.edges)}")
                out.append(f"labels = {_list(a.domain.bin_labels, 4)}")
            out.append(f"missing = {_list(a.missing)}")
            out.append(f"on_missing = {_q(a.on_missing)}")
            out.append(f"on_out_of_domain = {_q(a.on_out_of_domain)}")
            if a.other is not None:
                out.append(f"other = {_q(a.other)}")
    elif isinstance(schema, NumericSchema):
        v = schema.value
        out += _csv_lines(schema.format)
        out += ["", "[value]", f"name = {_q(v.name)}", f"column = {_col(v.column)}"]
        out += [f"low = {fmt_num(v.low)}", f"high = {fmt_num(v.high)}"]
        out += [f"missing = {_list(v.missing)}", f"on_out_of_range = {_q(v.on_out_of_range)}"]
    else:
        sep = "whitespace" if schema.format.separator is None else schema.format.separator
        out += [
            "[format]",
            f"separator = {_q(sep)}",
            f"header = {str(schema.format.header).lower()}",
        ]
        out += ["", "[items]"]
        if isinstance(schema.universe, ValuesDomain):
            out.append(f"values = {_list(schema.universe.values)}")
        else:
            out.append(f"range = [{schema.universe.low}, {schema.universe.high}]")
        out += [f"on_outside = {_q(schema.on_outside)}", f"duplicates = {_q(schema.duplicates)}"]
        out.append(f"empty = {_q(schema.empty)}")
        if schema.max_items is not None:
            out.append(f"max_items = {schema.max_items}")
    return "\n".join(out) + "\n"


def schema_digest(schema: Schema) -> str:
    """SHA-256 of the canonical text: names the exact public schema a run used."""
    return hashlib.sha256(dump_schema(schema).encode()).hexdigest()
