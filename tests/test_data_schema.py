"""The public data schema: valid schemas of each kind, the canonical writer, one test per mistake."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.datasets.schema import (
    BinsDomain,
    CategoricalSchema,
    NumericSchema,
    RangeDomain,
    SchemaError,
    SetValuedSchema,
    ValuesDomain,
    dump_schema,
    load_schema,
    parse_schema,
    schema_digest,
)
from protocols.datasets.schema_model import toml_string

DATA = Path(__file__).resolve().parent / "data"

CATEGORICAL = """
kind = "categorical"
name = "survey"

[format]
delimiter = ";"
header = true

[[attribute]]
name = "region"
values = ["north", "south"]
missing = ["", "NA"]
on_missing = "other"
other = "unknown"

[[attribute]]
name = "age"
column = "age_years"
bins = [18, 30, 65, 120]
labels = ["young", "adult", "senior"]
on_out_of_domain = "clip"

[[attribute]]
name = "kids"
range = [0, 5]
"""


def test_categorical_schema_parses():
    s = parse_schema(CATEGORICAL, "s.toml")
    assert isinstance(s, CategoricalSchema)
    assert s.format.delimiter == ";" and s.format.header
    assert s.attribute_names == ("region", "age", "kids")
    assert s.domain_sizes == (3, 3, 6)  # region has the explicit extra value
    assert s.attributes[0].labels() == ("north", "south", "unknown")
    assert s.attributes[1].column == "age_years"
    assert isinstance(s.attributes[1].domain, BinsDomain)
    assert s.attributes[2].labels() == tuple(str(i) for i in range(6))
    assert s.public_parameters()["domain_sizes"] == [3, 3, 6]


def test_setvalued_and_numeric_schemas_parse():
    s = parse_schema('kind = "setvalued"\n[items]\nrange = [1, 1000]\nmax_items = 40\n')
    assert isinstance(s, SetValuedSchema) and s.d == 1000 and s.max_items == 40
    assert s.format.separator is None and not s.format.header
    t = parse_schema(
        'kind = "setvalued"\n[format]\nseparator = ","\n[items]\nvalues = ["milk", "whole bread"]\n'
    )
    assert isinstance(t.universe, ValuesDomain) and t.d == 2 and t.format.separator == ","
    n = parse_schema('kind = "numeric"\n[value]\nname = "income"\nlow = 0\nhigh = 2e5\n')
    assert isinstance(n, NumericSchema) and (n.value.low, n.value.high) == (0.0, 200000.0)
    assert n.value.on_out_of_range == "clip" and n.value.column == "income"


def test_no_header_defaults_to_column_positions():
    s = parse_schema(
        'kind = "categorical"\n[format]\nheader = false\n'
        '[[attribute]]\nname = "a"\nvalues = ["x"]\n[[attribute]]\nname = "b"\nrange = [1, 2]\n'
    )
    assert [a.column for a in s.attributes] == [1, 2] and s.format.columns == 2


@pytest.mark.parametrize("name", ["survey.toml", "baskets.toml", "incomes.toml"])
def test_shipped_example_schemas_parse_and_round_trip(name):
    s = load_schema(DATA / name)
    assert parse_schema(dump_schema(s)) == s


def _cat(text: str) -> str:
    return 'kind = "categorical"\n\n[[attribute]]\nname = "a"\n' + text


# (schema text, expected line, words the one-line message must contain)
MISTAKES = [
    ("kind = [", 1, ["not valid TOML"]),
    ('kind = "categorical"\nkind = "numeric"\n', 2, ["not valid TOML"]),
    ('kind = "tabular"\n', 1, ["kind", "categorical, setvalued, numeric"]),
    ('name = "x"\n', None, ["kind", "must be one of"]),
    ('kind = "categorical"\nversion = 2\n', 2, ["unknown key 'version'"]),
    ('schema = 2\nkind = "categorical"\n', 1, ["schema", "reads schema = 1"]),
    ('kind = "categorical"\n', None, ["at least one [[attribute]]"]),
    (_cat('valuse = ["x"]\n'), 5, ["attribute[1].valuse", "did you mean 'values'"]),
    (_cat(""), 3, ["attribute 'a'", "exactly one domain"]),
    (_cat('values = ["x"]\nrange = [1, 2]\n'), 6, ["exactly one domain", "values and range"]),
    (_cat("values = []\n"), 5, ["non-empty list"]),
    (_cat('values = ["x", "y", "x"]\n'), 5, ["lists 'x' twice"]),
    (_cat("values = [1.5]\n"), 5, ["strings or integers", "range or bins"]),
    (_cat("range = [5, 1]\n"), 5, ["low 5 exceeds high 1"]),
    (_cat("range = [1]\n"), 5, ["two integers"]),
    (_cat("range = [0, 9999999999]\n"), 5, ["more than"]),
    (_cat("bins = [1]\n"), 5, ["at least two edges"]),
    (_cat("bins = [0, 10, 5]\n"), 5, ["strictly increase"]),
    (_cat('bins = [0, "x"]\n'), 5, ["finite number"]),
    (_cat('bins = [0, 1, 2]\nlabels = ["only one"]\n'), 6, ["2 bins need 2 labels"]),
    (_cat('values = ["x"]\nlabels = ["y"]\n'), 6, ["labels", "bins"]),
    (_cat('values = ["x"]\non_missing = "drop"\n'), 6, ["on_missing", "'reject', 'other'"]),
    (_cat('values = ["x"]\non_missing = "other"\n'), 6, ["no other ="]),
    (_cat('values = ["x"]\nother = "o"\n'), 6, ["other", "neither"]),
    (_cat('values = ["x"]\non_out_of_domain = "other"\nother = "x"\n'), 7, ["already a value"]),
    (_cat('values = ["x"]\non_out_of_domain = "clip"\n'), 6, ["clip", "ordered domain"]),
    (_cat('values = ["x", "NA"]\nmissing = ["NA"]\n'), 6, ["token 'NA' is also a value"]),
    (_cat('range = [0, 10]\nmissing = ["9"]\n'), 6, ["also a value of the range"]),
    (_cat('values = ["x"]\nmissing = [1]\n'), 6, ["missing", "list of strings"]),
    (_cat('values = ["x"]\ncolumn = 0\n'), 6, ["column numbers start at 1"]),
    (_cat('values = ["x"]\ncolumn = 1.5\n'), 6, ["header name or a column number"]),
    (
        'kind = "categorical"\n[format]\nheader = false\n[[attribute]]\nname = "a"\n'
        'values = ["x"]\ncolumn = "a"\n',
        7,
        ["no header", "give its number"],
    ),
    (
        _cat('values = ["x"]\n') + '[[attribute]]\nname = "a"\nvalues = ["y"]\n',
        7,
        ["two attributes share this name"],
    ),
    (
        _cat('values = ["x"]\ncolumn = "c"\n')
        + '[[attribute]]\nname = "b"\nvalues = ["y"]\ncolumn = "c"\n',
        None,
        ["'b' and 'a' read the same column"],
    ),
    (
        'kind = "categorical"\n[format]\ndelimiter = ",,"\n',
        3,
        ["format.delimiter", "one character"],
    ),
    (
        'kind = "categorical"\n[format]\nquote = ","\n',
        3,
        ["format.quote", "other than the delimiter"],
    ),
    ('kind = "categorical"\n[format]\nheader = "yes"\n', 3, ["format.header", "true or false"]),
    ('kind = "categorical"\n[format]\ncolumns = 0\n', 3, ["format.columns", "positive integer"]),
    ('kind = "categorical"\n[items]\nrange = [0, 1]\n', 2, ["items", "kind = 'setvalued'"]),
    ('kind = "numeric"\n', None, ["[value] table"]),
    ('kind = "numeric"\n[value]\nlow = 0\n', 2, ["value.high", "fixed in advance"]),
    ('kind = "numeric"\n[value]\nlow = 1\nhigh = 1\n', 4, ["value.high", "must exceed low"]),
    ('kind = "numeric"\n[value]\nlow = 0\nhigh = inf\n', 4, ["finite number"]),
    ('kind = "numeric"\n[value]\nlow = 0\nhigh = 1\non_missing = "other"\n', 5, ["no 'other'"]),
    (
        'kind = "numeric"\n[value]\nlow = 0\nhigh = 1\non_out_of_range = "wrap"\n',
        5,
        ["'clip', 'reject'"],
    ),
    ('kind = "setvalued"\n', None, ["[items] table"]),
    ('kind = "setvalued"\n[items]\nmax_items = 3\n', 2, ["exactly one universe"]),
    ('kind = "setvalued"\n[items]\nvalues = ["a b"]\n', 3, ["contains the separator"]),
    ('kind = "setvalued"\n[items]\nrange = [1, 9]\nmax_items = 0\n', 4, ["max_items", "positive"]),
    (
        'kind = "setvalued"\n[items]\nrange = [1, 9]\nduplicates = "keep"\n',
        4,
        ["'reject', 'merge'"],
    ),
    ('kind = "setvalued"\n[format]\nseparator = "ab"\n[items]\nrange = [1, 2]\n', 3, ["separator"]),
    (
        'kind = "setvalued"\n[format]\ndelimiter = ","\n[items]\nrange = [1, 2]\n',
        3,
        ["unknown key"],
    ),
]


@pytest.mark.parametrize("text,line,words", MISTAKES)
def test_each_mistake_is_one_clear_line(text, line, words):
    with pytest.raises(SchemaError) as err:
        parse_schema(text, "bad.toml")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("bad.toml")
    if line is not None:
        assert msg.startswith(f"bad.toml:{line}:"), msg
        assert err.value.line == line
    for w in words:
        assert w in msg, msg


def test_unreadable_schema_files(tmp_path):
    with pytest.raises(SchemaError, match="cannot read the schema"):
        load_schema(tmp_path / "absent.toml")
    p = tmp_path / "latin1.toml"
    p.write_bytes(b'kind = "categorical" # \xe9\n')
    with pytest.raises(SchemaError, match="not UTF-8"):
        load_schema(p)


labels = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=8,
)


@st.composite
def categorical_schemas(draw):
    n = draw(st.integers(1, 4))
    names = draw(st.lists(labels, min_size=n, max_size=n, unique=True))
    attrs = []
    for i, name in enumerate(names):
        kind = draw(st.sampled_from(["values", "range", "bins"]))
        lines = ["[[attribute]]", f"name = {_toml(name)}", f"column = {i + 1}"]
        if kind == "values":
            vals = draw(
                st.lists(
                    labels.filter(lambda v: v.strip() == v and v != "NA"),
                    min_size=1,
                    max_size=5,
                    unique=True,
                )
            )
            lines.append("values = [" + ", ".join(_toml(v) for v in vals) + "]")
            lines += ['missing = ["", "NA"]', 'on_missing = "other"', 'other = "\\u0000other"']
        elif kind == "range":
            lo = draw(st.integers(-50, 50))
            lines.append(f"range = [{lo}, {lo + draw(st.integers(0, 20))}]")
            lines.append('on_out_of_domain = "clip"')
        else:
            edges = sorted(
                set(draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=5)))
            )
            if len(edges) < 2:
                edges = [0.0, 1.0]
            lines.append("bins = [" + ", ".join(repr(e) for e in edges) + "]")
        attrs.append("\n".join(lines))
    return 'kind = "categorical"\n[format]\nheader = false\n\n' + "\n\n".join(attrs) + "\n"


def _toml(s: str) -> str:
    return toml_string(s)


@settings(max_examples=60, deadline=None)
@given(categorical_schemas())
def test_dump_parse_round_trip(text):
    s = parse_schema(text)
    again = parse_schema(dump_schema(s))
    assert again == s
    assert schema_digest(again) == schema_digest(s)


def test_digest_names_the_semantic_schema_not_the_text():
    a = parse_schema('kind = "setvalued"\n[items]\nrange = [1, 10]\n')
    b = parse_schema(
        '# a comment\nkind="setvalued"\n\n[items]\nrange=[1,10]\non_outside="reject"\n'
    )
    c = parse_schema('kind = "setvalued"\n[items]\nrange = [1, 11]\n')
    assert schema_digest(a) == schema_digest(b) != schema_digest(c)
    assert isinstance(a.universe, RangeDomain)
