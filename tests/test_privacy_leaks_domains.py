"""Census-Income's categorical domains are public constants (issue 26, finding 6): frozen in
``protocols/data/schemas.json`` like Adult's, never read from the rows being parsed, so a few
rows give the same domains as the whole file, and a value outside them is an error."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from protocols.datasets import categorical as C


def _few_rows(tmp_path: Path, rows: int, edit=None) -> Path:
    """A data directory whose Census-Income files hold the first ``rows`` rows of the real ones."""
    src = C.default_data_dir() / "census-income-kdd"
    dst = tmp_path / "census-income-kdd"
    dst.mkdir(parents=True)
    for fname in ("census-income.train.csv.gz", "census-income.test.csv.gz"):
        with gzip.open(src / fname, "rt") as fh:
            lines = [next(fh) for _ in range(rows)]
        if edit is not None:
            lines = edit(lines)
        (dst / fname).write_bytes(gzip.compress("".join(lines).encode()))
    return tmp_path


def test_domains_do_not_depend_on_the_rows_parsed(tmp_path):
    frozen = C.frozen_schema()["census_income"]["categories"]
    few = C.load_census_income(_few_rows(tmp_path, 20), n=40)
    want = (9,) + tuple(len(frozen[name]) for c, name in C.CENSUS_COLUMNS if c != 0)
    assert few.domain_sizes == want
    assert "frozen" in C.DERIVED_FROM_DATA["census-income"]


def test_a_value_outside_the_frozen_domain_is_an_error(tmp_path):
    def edit(lines):
        parts = lines[0].split(",")
        parts[12] = " Unheard-of"  # sex
        return [",".join(parts)] + lines[1:]

    with pytest.raises(ValueError, match="census-income sex: value 'Unheard-of'"):
        C.load_census_income(_few_rows(tmp_path, 5, edit), n=5)
