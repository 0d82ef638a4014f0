"""``sdp data schema`` / ``sdp data check``, and public parameters versus neighbouring files.

The neighbouring-file tests show why ``sdp data schema`` warns: its output changes when one row
changes (the inferred domain is a function of the private data), while a run's parameters come
from a fixed schema and do not move.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from protocols.datasets.cli import main
from protocols.datasets.infer import infer_schema
from protocols.datasets.readers import read_dataset
from protocols.datasets.schema import dump_schema, load_schema, parse_schema, schema_digest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def sdp_data(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "protocols.datasets.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_check_exit_codes_and_one_line_errors(tmp_path):
    p = sdp_data("check", str(DATA / "survey.csv.gz"), "--schema", str(DATA / "survey.toml"))
    assert p.returncode == 1, p.stderr
    assert "50,000 rows: 49,987 kept, 13 excluded before randomization" in p.stdout
    assert "12 missing, 1 out of domain" in p.stdout and "first offending lines:" in p.stdout
    clean = tmp_path / "clean.csv"
    clean.write_text("income\n1\n2.5\n")
    p = sdp_data("check", str(clean), "--schema", str(DATA / "incomes.toml"))
    assert p.returncode == 0 and "2 rows: 2 kept, 0 excluded" in p.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "numeric"\n[value]\nlow = 5\nhigh = 1\n')
    cases = [
        (str(clean), str(bad), f"{bad}:4: value.high: must exceed low"),
        (str(tmp_path / "absent.csv"), str(DATA / "incomes.toml"), "cannot open"),
        (str(clean), str(tmp_path / "absent.toml"), "cannot read the schema"),
        (str(DATA / "survey.csv.gz"), str(DATA / "incomes.toml"), "header has no column 'income'"),
    ]
    for data, schema, words in cases:
        p = sdp_data("check", data, "--schema", schema)
        assert p.returncode == 2, (words, p.stdout, p.stderr)
        assert p.stderr.count("\n") == 1 and words in p.stderr and "Traceback" not in p.stderr
    p = sdp_data("check", str(clean))
    assert p.returncode == 2 and "--schema" in p.stderr and p.stderr.count("\n") == 1


def test_check_json(capsys):
    rc = main(
        ["check", str(DATA / "baskets.txt.gz"), "--schema", str(DATA / "baskets.toml"), "--json"]
    )
    import json

    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["rows_total"] == 20_003 and out["rows_kept"] == 19_999
    assert out["excluded_before_randomization"] == {
        "malformed": 1,
        "missing": 3,
        "out_of_domain": 0,
    }
    assert out["examples"][1]["reason"].startswith("item outside the universe")
    assert out["schema_sha256"] == schema_digest(load_schema(DATA / "baskets.toml"))


@pytest.mark.parametrize(
    "name,kind", [("survey.csv.gz", None), ("baskets.txt.gz", None), ("incomes.csv.gz", "numeric")]
)
def test_schema_proposal_is_valid_toml_and_warns(tmp_path, name, kind):
    args = ["schema", str(DATA / name)] + (["--kind", kind] if kind else [])
    p = sdp_data(*args)
    assert p.returncode == 0, p.stderr
    assert "WARNING" in p.stderr and "disclosure" in p.stderr and "in advance" in p.stderr
    assert p.stdout.startswith("# WARNING: this schema was inferred from the data file itself")
    schema = parse_schema(p.stdout, "proposal")
    want = kind or {"survey.csv.gz": "categorical", "baskets.txt.gz": "setvalued"}[name]
    assert schema.kind == want
    data = read_dataset(DATA / name, schema)  # the proposal reads its own file
    assert data.report.rows_total in (50_000, 20_003, 20_000)
    if name == "survey.csv.gz":
        names = schema.attribute_names
        assert "respondent" not in names  # a free-text identifier is left out, and said so
        assert "  respondent: more than 1000 distinct values: left out" in p.stderr
        edu = schema.attributes[names.index("education")].domain.values
        assert "kindergarten" in edu  # the one out-of-domain answer becomes a domain value


def test_schema_command_errors(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    p = sdp_data("schema", str(empty))
    assert p.returncode == 2 and "no data lines" in p.stderr and "Traceback" not in p.stderr
    p = sdp_data("schema", str(DATA / "survey.csv.gz"), "--kind", "tabular")
    assert p.returncode == 2 and "invalid choice" in p.stderr
    p = sdp_data("schema", str(DATA / "survey.csv.gz"), "--delimiter", ",,")
    assert p.returncode == 2 and "one character" in p.stderr


# ---- neighbouring files ---------------------------------------------------------------------


def _survey_rows(n: int = 400) -> list[str]:
    rng = np.random.default_rng(3)
    regions = ["north", "south", "east", "west"]
    return [
        f"{regions[rng.integers(4)]},{rng.integers(18, 80)},{rng.integers(0, 4)}" for _ in range(n)
    ]


FIXED = parse_schema(
    """
kind = "categorical"
[[attribute]]
name = "region"
values = ["north", "south", "east", "west", "capital"]
[[attribute]]
name = "age"
range = [16, 99]
[[attribute]]
name = "kids"
range = [0, 9]
"""
)


def _pair(tmp_path: Path, header: str, rows: list[str], i: int, changed: str, gz: bool = False):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    other = list(rows)
    other[i] = changed
    for path, body in ((a, rows), (b, other)):
        text = (header + "\n" if header else "") + "\n".join(body) + "\n"
        path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return a, b


@pytest.mark.parametrize(
    "changed",
    ["capital,40,1", "north,97,1", "north,40,9"],  # a value present once; a new max; a new max
)
def test_categorical_neighbours(tmp_path, changed):
    rows = _survey_rows()
    a, b = _pair(tmp_path, "region,age,kids", rows, 17, changed)
    sa, _ = infer_schema(a)
    sb, _ = infer_schema(b)
    assert dump_schema(sa) != dump_schema(sb)  # the proposal depends on one person's row
    da, db = read_dataset(a, FIXED), read_dataset(b, FIXED)
    assert da.domain_sizes == db.domain_sizes == FIXED.domain_sizes == (5, 84, 10)
    assert da.records.dtype == db.records.dtype
    assert da.report.schema_sha256 == db.report.schema_sha256 == schema_digest(FIXED)
    assert FIXED.public_parameters() == parse_schema(dump_schema(FIXED)).public_parameters()
    diff = np.flatnonzero((da.records != db.records).any(axis=1))
    assert diff.tolist() == [17] and da.n == db.n == 400


def test_setvalued_neighbours(tmp_path):
    rng = np.random.default_rng(5)
    rows = [" ".join(map(str, rng.choice(np.arange(1, 90), 5, replace=False))) for _ in range(300)]
    a, b = _pair(tmp_path, "", rows, 4, "1 2 3 499", gz=True)  # an item no one else has
    sa, _ = infer_schema(a, kind="setvalued")
    sb, _ = infer_schema(b, kind="setvalued")
    assert sa.kind == sb.kind == "setvalued" and sa.d != sb.d
    fixed = parse_schema('kind = "setvalued"\n[items]\nrange = [1, 500]\nmax_items = 8\n')
    da, db = read_dataset(a, fixed), read_dataset(b, fixed)
    assert da.d == db.d == 500 and da.padded().shape == db.padded().shape == (300, 8)
    assert da.n == db.n == 300


def test_numeric_neighbours(tmp_path):
    rows = [f"{x:.2f}" for x in np.random.default_rng(6).uniform(0, 900, 200)]
    a, b = _pair(tmp_path, "income", rows, 0, "123456.78")  # one person's large income
    sa, _ = infer_schema(a, kind="numeric")
    sb, _ = infer_schema(b, kind="numeric")
    assert sa.value.high != sb.value.high  # an inferred clipping range reveals the maximum
    fixed = load_schema(DATA / "incomes.toml")
    da, db = read_dataset(a, fixed), read_dataset(b, fixed)
    assert da.schema.public_parameters() == db.schema.public_parameters()
    assert (da.schema.value.low, da.schema.value.high) == (0.0, 250_000.0)
    assert np.flatnonzero(da.values != db.values).tolist() == [0] and db.values[0] < 1
