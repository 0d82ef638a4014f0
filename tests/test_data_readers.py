"""Chunked readers: round trips, junk lines, chunk boundaries, compression, policies, accounting."""

from __future__ import annotations

import bz2
import csv
import gzip
import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.datasets.readers import DataReader, read_dataset
from protocols.datasets.report import DataFileError
from protocols.datasets.schema import parse_schema
from protocols.datasets.schema_model import toml_string

DATA = Path(__file__).resolve().parent / "data"
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

SURVEY = parse_schema(
    """
kind = "categorical"
[[attribute]]
name = "region"
values = ["north", "south", "east, far", "we\\"st"]
missing = ["", "NA"]
[[attribute]]
name = "age"
bins = [18, 30, 65, 120]
on_out_of_domain = "clip"
[[attribute]]
name = "kids"
range = [0, 5]
"""
)


def write(path: Path, text: str | bytes, gz: bool = False) -> Path:
    raw = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


def read(path: Path, schema, **kw):
    data = read_dataset(path, schema, **kw)
    data.report.check()
    return data


# ---- round trips ---------------------------------------------------------------------------

label = st.text(alphabet='ab,;" é\t|', min_size=1, max_size=6).filter(
    lambda s: s.strip(" \t") == s and s != "NA"
)


@st.composite
def categorical_case(draw):
    delim = draw(st.sampled_from([",", ";", "\t", "|"]))
    d = draw(st.integers(1, 4))
    attrs, writers = [], []
    for j in range(d):
        kind = draw(st.sampled_from(["values", "range", "bins"]))
        head = f'[[attribute]]\nname = "a{j}"\n'
        if kind == "values":
            vals = draw(st.lists(label, min_size=1, max_size=6, unique=True))
            attrs.append(head + "values = [" + ", ".join(toml_string(v) for v in vals) + "]\n")
            writers.append((len(vals), lambda i, vals=vals: vals[i]))
        elif kind == "range":
            lo = draw(st.integers(-1000, 1000))
            k = draw(st.integers(1, 300))
            attrs.append(head + f"range = [{lo}, {lo + k - 1}]\n")
            writers.append((k, lambda i, lo=lo: str(lo + i)))
        else:
            edges = sorted(
                set(draw(st.lists(st.integers(-(10**6), 10**6), min_size=2, max_size=6)))
            )
            if len(edges) < 2:
                edges = [0, 1]
            attrs.append(head + f"bins = {edges}\n")
            writers.append((len(edges) - 1, lambda i, e=edges: repr(e[i] + (e[i + 1] - e[i]) / 3)))
    header = draw(st.booleans())
    text = (
        f'kind = "categorical"\n[format]\ndelimiter = {toml_string(delim)}\n'
        f"header = {str(header).lower()}\n" + "".join(attrs)
    )
    n = draw(st.integers(0, 60))
    recs = np.array(
        [[draw(st.integers(0, k - 1)) for k, _ in writers] for _ in range(n)], dtype=np.int64
    ).reshape(n, d)
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delim, lineterminator=draw(st.sampled_from(["\n", "\r\n"])))
    if header:
        w.writerow([f"a{j}" for j in range(d)])
    for row in recs:
        w.writerow([writers[j][1](int(row[j])) for j in range(d)])
    return text, buf.getvalue(), recs


@SETTINGS
@given(case=categorical_case(), gz=st.booleans(), block=st.integers(1, 300))
def test_categorical_round_trip(tmp_path, case, gz, block):
    text, body, recs = case
    schema = parse_schema(text)
    data = read(write(tmp_path / "x.csv", body, gz), schema, block_bytes=block)
    assert data.report.rows_total == len(recs) == data.report.rows_kept, data.report.to_dict()
    assert np.array_equal(data.records.astype(np.int64), recs)
    assert data.records.shape == (len(recs), len(schema.attributes))
    assert data.report.compression == ("gzip" if gz else "none")


@SETTINGS
@given(
    sets=st.lists(st.sets(st.integers(3, 60), min_size=1, max_size=12), max_size=40),
    sep=st.sampled_from([None, ","]),
    block=st.integers(1, 200),
    gz=st.booleans(),
)
def test_setvalued_round_trip(tmp_path, sets, sep, block, gz):
    fmt = "" if sep is None else f'[format]\nseparator = "{sep}"\n'
    schema = parse_schema(f'kind = "setvalued"\n{fmt}[items]\nrange = [3, 60]\n')
    joiner = "  \t" if sep is None else " , "
    body = "".join(joiner.join(map(str, sorted(s, reverse=True))) + " \n" for s in sets)
    data = read(write(tmp_path / "t.txt", body, gz), schema, block_bytes=block)
    assert data.n == len(sets) == data.report.rows_kept
    got = [set((data.items[a:b] + 3).tolist()) for a, b in zip(data.indptr, data.indptr[1:])]
    assert got == [set(s) for s in sets]
    for a, b in zip(data.indptr, data.indptr[1:]):  # sorted within a row
        assert np.all(np.diff(data.items[a:b]) > 0)


def test_setvalued_list_universe_and_padding(tmp_path):
    schema = parse_schema(
        'kind = "setvalued"\n[format]\nseparator = ";"\n[items]\n'
        'values = ["milk", "whole bread", "eggs"]\nmax_items = 3\n'
    )
    data = read(
        write(tmp_path / "b.txt", "eggs; milk\nwhole bread\n milk ;eggs;whole bread\n"), schema
    )
    assert data.n == 3 and data.d == 3
    assert data.padded().tolist() == [[0, 2, -1], [1, -1, -1], [0, 1, 2]]
    with pytest.raises(ValueError, match="> width 2"):
        data.padded(2)


@SETTINGS
@given(
    xs=st.lists(st.floats(-1e6, 1e6, allow_nan=False), max_size=50),
    block=st.integers(1, 100),
)
def test_numeric_round_trip_clips_to_public_range(tmp_path, xs, block):
    schema = parse_schema('kind = "numeric"\n[value]\nname = "x"\nlow = -1000\nhigh = 5000\n')
    body = "x\n" + "".join(f"{x!r}\n" for x in xs)
    data = read(write(tmp_path / "n.csv", body), schema, block_bytes=block)
    assert data.n == len(xs) == data.report.rows_kept
    expect = (np.clip(np.asarray(xs, dtype=float), -1000, 5000) + 1000) / 6000
    assert np.allclose(data.values, expect, rtol=0, atol=1e-12)
    assert np.all((0 <= data.values) & (data.values <= 1))
    outside = sum(1 for x in xs if not -1000 <= x <= 5000)
    assert data.report.attributes["x"]["clipped"] == outside


# ---- junk and chunk boundaries --------------------------------------------------------------

junk_line = st.binary(max_size=30).map(lambda b: b.replace(b"\n", b" "))
good_line = st.sampled_from(
    [
        b"north,20,1",
        b'"east, far",70,5',
        b'"we""st",18,0',
        b"south,300,2",
        b"NA,20,1",
        b" south , 64 , 3",
    ]
)


def _outcome(data):
    r = data.report
    return (
        data.records.tolist(),
        r.rows_total,
        r.rows_kept,
        dict(r.excluded),
        dict(r.reasons),
        {a: dict(c) for a, c in r.attributes.items()},
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(st.one_of(junk_line, good_line), min_size=1, max_size=25),
    block=st.integers(1, 64),
)
def test_junk_never_crashes_and_each_line_counts_alone(tmp_path, lines, block):
    """Any bytes: no exception, every line counted once, and the file reads exactly as the
    concatenation of its lines read one by one (so chunk boundaries cannot matter)."""
    schema = SURVEY
    path = write(tmp_path / "j.csv", b"region,age,kids\n" + b"\n".join(lines) + b"\n")
    whole = read(path, schema, block_bytes=block)
    assert whole.report.rows_total == len(lines)
    one_block = read(path, schema)
    assert _outcome(whole) == _outcome(one_block)
    recs, excluded = [], {"malformed": 0, "missing": 0, "out_of_domain": 0}
    for line in lines:
        single = read(write(tmp_path / "one.csv", b"region,age,kids\n" + line + b"\n"), schema)
        recs += single.records.tolist()
        for k, v in single.report.excluded.items():
            excluded[k] += v
    assert whole.records.tolist() == recs
    assert whole.report.excluded == excluded
    for line in lines:
        if line in (b"north,20,1", b'"east, far",70,5', b'"we""st",18,0', b" south , 64 , 3"):
            assert whole.report.rows_kept >= 1


def test_rows_straddling_chunk_boundaries(tmp_path):
    body = "region,age,kids\n" + "".join(
        f"{['north', 'south', chr(34) + 'east, far' + chr(34)][i % 3]},{18 + i % 90},{i % 6}\n"
        for i in range(500)
    )
    body += 'north,"20\n'  # an open quote on the last line
    path = write(tmp_path / "b.csv", body)
    ref = read(path, SURVEY)
    assert ref.report.rows_total == 501 and ref.report.rows_kept == 500
    assert ref.report.reasons == {"quote not closed on its line": 1}
    for block in (1, 2, 3, 7, 16, 17, 100, 1000, 4096):
        assert _outcome(read(path, SURVEY, block_bytes=block)) == _outcome(ref)


def test_open_quote_does_not_swallow_following_lines(tmp_path):
    body = 'region,age,kids\n"north,20,1\nsouth,20,1\n"east, far,20\nnorth,25,2\n'
    data = read(write(tmp_path / "q.csv", body), SURVEY)
    assert data.report.rows_total == 4
    assert data.records.tolist() == [[1, 0, 1], [0, 0, 2]]
    assert data.report.excluded["malformed"] == 2
    lines = sorted(e.line for e in data.report.examples)
    assert lines == [2, 4]


# ---- every kind of exclusion, with lines --------------------------------------------------


def test_every_row_is_accounted_for_with_line_numbers(tmp_path):
    body = (
        "region,age,kids\n"  # 1
        "north,20,1\n"  # 2 kept
        "NA,20,1\n"  # 3 missing region
        "south,abc,1\n"  # 4 unparsable age
        "south,20\n"  # 5 wrong number of fields
        "\n"  # 6 blank
        "west,20,1\n"  # 7 out of domain region
        "south,20,9\n"  # 8 kids outside range (reject)
        "south,500,5\r\n"  # 9 kept, age clipped
        "south,20,1\rnorth,20,1\n"  # 10 a lone CR
        '"we""st",19,0'  # 11 kept, no final newline
    )
    data = read(write(tmp_path / "e.csv", body), SURVEY)
    r = data.report
    assert r.rows_total == 10 and r.rows_kept == 3
    assert r.excluded == {"malformed": 4, "missing": 1, "out_of_domain": 2}
    assert r.reasons == {
        "unparsable number": 1,
        "wrong number of fields": 1,
        "blank line": 1,
        "carriage return inside a line": 1,
    }
    assert r.attributes["age"]["clipped"] == 1 and r.attributes["kids"]["out_of_domain"] == 1
    assert [(e.line, e.kind) for e in r.examples] == [
        (3, "missing"),
        (4, "malformed"),
        (5, "malformed"),
        (6, "malformed"),
        (7, "out_of_domain"),
        (8, "out_of_domain"),
        (10, "malformed"),
    ]
    assert "'west'" in r.examples[4].reason and "region" in r.examples[4].reason
    assert data.records.tolist() == [[0, 0, 1], [1, 2, 5], [3, 0, 0]]
    pub = r.public()
    assert "examples" not in pub and "path" not in pub
    assert "west" not in str(pub) and pub["excluded_before_randomization"]["missing"] == 1


def test_other_and_clip_policies_keep_rows(tmp_path):
    schema = parse_schema(
        'kind = "categorical"\n[format]\nheader = false\n'
        '[[attribute]]\nname = "r"\nvalues = ["a", "b"]\nmissing = ["", "?"]\n'
        'on_missing = "other"\non_out_of_domain = "other"\nother = "zz"\n'
        '[[attribute]]\nname = "k"\nrange = [1, 3]\non_out_of_domain = "clip"\n'
    )
    data = read(write(tmp_path / "p.csv", "a,1\n?,0\nq,7\n,2\nb,x\n"), schema)
    assert data.domain_sizes == (3, 3) and data.labels[0] == ("a", "b", "zz")
    assert data.records.tolist() == [[0, 0], [2, 0], [2, 2], [2, 1]]
    c = data.report.attributes
    assert c["r"]["missing_mapped_to_other"] == 2 and c["r"]["out_of_domain_mapped_to_other"] == 1
    assert c["k"]["clipped"] == 2 and data.report.excluded["malformed"] == 1


def test_setvalued_policies(tmp_path):
    body = "1 2\n\n3 3 4\n5 99\n99\n1 2 3 4 5 6\n"
    base = 'kind = "setvalued"\n[items]\nrange = [1, 10]\n'
    strict = read(write(tmp_path / "s.txt", body), parse_schema(base + "max_items = 5\n"))
    r = strict.report
    assert (r.rows_total, r.rows_kept) == (6, 1)
    assert r.reasons == {
        "duplicate item": 1,
        "item outside the universe": 2,
        "more items than max_items": 1,
    }
    assert r.excluded["missing"] == 1 and r.items["items_outside"] == 2
    loose = read(
        tmp_path / "s.txt",
        parse_schema(base + 'on_outside = "drop"\nduplicates = "merge"\nempty = "keep"\n'),
    )
    sets = [loose.items[a:b].tolist() for a, b in zip(loose.indptr, loose.indptr[1:])]
    assert sets == [[0, 1], [], [2, 3], [4], [], [0, 1, 2, 3, 4, 5]]
    assert loose.report.items == {
        "items_outside": 2,
        "items_dropped": 2,
        "duplicates_merged": 1,
        "rows_with_dropped_items": 2,
    }
    assert loose.report.rows_kept == 6


def test_index_dtype_follows_the_schema_not_the_data(tmp_path):
    for hi, dtype in ((127, np.int8), (128, np.int8), (129, np.int16), (40_000, np.int32)):
        schema = parse_schema(
            f'kind = "categorical"\n[format]\nheader = false\n[[attribute]]\nname = "a"\nrange = [1, {hi}]\n'
        )
        data = read(write(tmp_path / "d.csv", "1\n2\n"), schema)
        assert data.records.dtype == dtype and data.records.tolist() == [[0], [1]]


# ---- files: compression, headers, long lines ------------------------------------------------


def test_compression_is_detected_by_magic_bytes(tmp_path):
    body = "region,age,kids\nnorth,20,1\n"
    a = read(write(tmp_path / "plain.gz", body), SURVEY)  # name says gzip, content is not
    b = read(write(tmp_path / "data.csv", body, gz=True), SURVEY)  # name says csv, gzip inside
    assert (a.report.compression, b.report.compression) == ("none", "gzip")
    assert a.records.tolist() == b.records.tolist() == [[0, 0, 1]]
    write(tmp_path / "x.csv", bz2.compress(body.encode()))
    with pytest.raises(DataFileError, match="bzip2"):
        read(tmp_path / "x.csv", SURVEY)
    whole = gzip.compress(body.encode() * 2000)
    write(tmp_path / "cut.csv.gz", whole[: len(whole) // 2])
    with pytest.raises(DataFileError, match="corrupt or truncated"):
        read(tmp_path / "cut.csv.gz", SURVEY, block_bytes=64)
    with pytest.raises(DataFileError, match="cannot open"):
        read(tmp_path / "absent.csv", SURVEY)


def test_header_problems_are_file_errors(tmp_path):
    with pytest.raises(DataFileError, match=r"line 1: the header has no column 'kids'"):
        read(write(tmp_path / "h.csv", "region,age,children\nnorth,20,1\n"), SURVEY)
    with pytest.raises(DataFileError, match="more than one column 'age'"):
        read(write(tmp_path / "h.csv", "region,age,age,kids\n"), SURVEY)
    with pytest.raises(DataFileError, match="empty"):
        read(write(tmp_path / "h.csv", ""), SURVEY)
    fixed = parse_schema(
        'kind = "numeric"\n[format]\ncolumns = 3\n[value]\nname = "v"\nlow = 0\nhigh = 1\n'
    )
    with pytest.raises(
        DataFileError, match="header has 2 fields but the schema's format.columns is 3"
    ):
        read(write(tmp_path / "h.csv", "v,w\n1,2\n"), fixed)


def test_bom_and_selected_columns(tmp_path):
    schema = parse_schema(
        'kind = "numeric"\n[value]\nname = "income"\ncolumn = "inc"\nlow = 0\nhigh = 100\n'
    )
    body = '\ufeffid,inc,note\n1,50,x\n2,25,"a, b"\n3,200,\n'
    data = read(write(tmp_path / "b.csv", body), schema)
    assert (
        data.values.tolist() == [0.5, 0.25, 1.0]
        and data.report.attributes["income"]["clipped"] == 1
    )


def test_overlong_lines_are_malformed_not_buffered(tmp_path):
    body = "region,age,kids\nnorth,20,1\n" + "x" * 5000 + "\nsouth,20,2\n" + "y" * 5000
    data = read(write(tmp_path / "l.csv", body), SURVEY, block_bytes=64, max_line_bytes=1000)
    assert data.records.tolist() == [[0, 0, 1], [1, 0, 2]]
    assert data.report.reasons == {"line longer than 1000 bytes": 2}
    assert [e.line for e in data.report.examples] == [3, 5]


def test_overlong_header(tmp_path):
    path = write(tmp_path / "h.csv", "x" * 3000 + "\nnorth,20,1\n")
    with pytest.raises(DataFileError, match="line 1: the header line is longer than 1000 bytes"):
        read(path, SURVEY, block_bytes=64, max_line_bytes=1000)
    sets = parse_schema('kind = "setvalued"\n[format]\nheader = true\n[items]\nrange = [1, 9]\n')
    data = read(path, sets, block_bytes=64, max_line_bytes=1000)
    assert data.report.rows_total == 1 and data.report.reasons == {"item outside the universe": 1}


def test_streaming_reader_yields_bounded_chunks(tmp_path):
    body = "region,age,kids\n" + "north,20,1\n" * 3000
    reader = DataReader(write(tmp_path / "c.csv", body), SURVEY, block_bytes=1024)
    sizes = [c.n for c in reader]
    assert len(sizes) > 20 and max(sizes) <= 1024 // 10 + 1 and sum(sizes) == 3000
    assert reader.complete and reader.report.rows_kept == 3000


def test_shipped_examples_read_as_documented():
    from protocols.datasets.schema import load_schema

    survey = read(DATA / "survey.csv.gz", load_schema(DATA / "survey.toml"))
    r = survey.report
    assert (r.rows_total, r.rows_kept) == (50_000, 49_987)
    assert r.excluded == {"malformed": 0, "missing": 12, "out_of_domain": 1}
    assert (
        r.attributes["region"]["missing_mapped_to_other"] == 7
        and r.attributes["age"]["clipped"] == 3
    )
    assert survey.records.shape == (49_987, 6) and survey.records.dtype == np.int8
    ds = survey.to_dataset()
    assert ds.records.dtype == np.int64 and ds.domain_sizes == (6, 7, 3, 7, 6, 5)
    assert ds.attributes == ("region", "age", "sex", "education", "employment", "satisfaction")
    assert np.isclose(ds.marginals()[0].sum(), 1.0)
    baskets = read(DATA / "baskets.txt.gz", load_schema(DATA / "baskets.toml"))
    assert (baskets.report.rows_total, baskets.n, baskets.d) == (20_003, 19_999, 500)
    assert baskets.report.items["duplicates_merged"] == 1
    assert baskets.labels[0] == "1" and len(baskets.labels) == 500
    incomes = read(DATA / "incomes.csv.gz", load_schema(DATA / "incomes.toml"))
    assert (incomes.report.rows_total, incomes.n) == (20_000, 19_994)
    assert incomes.report.excluded == {"malformed": 1, "missing": 5, "out_of_domain": 0}


SETS = parse_schema('kind = "setvalued"\n[items]\nrange = [1, 50]\nmax_items = 4\n')
INCOME = parse_schema('kind = "numeric"\n[format]\nheader = false\n[value]\nlow = 0\nhigh = 10\n')


def _flat(data):
    if hasattr(data, "indptr"):
        return [data.items[a:b].tolist() for a, b in zip(data.indptr, data.indptr[1:])]
    return data.values.tolist()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(
        st.one_of(junk_line, st.sampled_from([b"1 2 3", b"7", b"3.5", b"12 12", b"-4"])),
        min_size=1,
        max_size=20,
    ),
    block=st.integers(1, 48),
)
def test_junk_setvalued_and_numeric(tmp_path, lines, block):
    lines = [b"1", *lines]  # a first line, so that junk never looks like a compression magic
    for schema in (SETS, INCOME):
        path = write(tmp_path / "j.txt", b"\n".join(lines) + b"\n")
        whole = read(path, schema, block_bytes=block)
        assert whole.report.rows_total == len(lines)
        expect = _flat(read(write(tmp_path / "one.txt", b"1\n"), schema))
        counts = {"malformed": 0, "missing": 0, "out_of_domain": 0}
        for line in lines[1:]:  # each line after the same first line (a BOM counts only there)
            one = read(write(tmp_path / "one.txt", b"1\n" + line + b"\n"), schema)
            expect += _flat(one)[1:]
            for k, v in one.report.excluded.items():
                counts[k] += v
        assert _flat(whole) == expect and whole.report.excluded == counts


@pytest.mark.parametrize("block", [1, 2, 3, 4, 7, 48])
def test_a_later_line_starting_with_a_bom_reads_the_same_in_any_block(tmp_path, block):
    """Arrow drops a BOM at the start of its buffer: a later line that starts with one (here a
    line made only of a BOM, found by hypothesis) must not read as missing when a block starts
    there and as malformed otherwise."""
    data = b"1\n\xef\xbb\xbf\n\xef\xbb\xbf5\n2\n"
    for schema in (SETS, INCOME):
        whole = read(write(tmp_path / "w.txt", data), schema)
        cut = read(write(tmp_path / "c.txt", data), schema, block_bytes=block)
        assert cut.report.excluded == whole.report.excluded
        assert cut.report.excluded["malformed"] == 2 and cut.report.excluded["missing"] == 0
        assert _flat(cut) == _flat(whole)
