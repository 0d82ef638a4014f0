"""Freeze the bundled datasets' preprocessing parameters into ``protocols/data/schemas.json``.

The paper-reproducing preprocessing of the bundled datasets derives some parameters from the
data (Adult's quantile bin edges and categorical domains, Census-Income's categorical domains,
Kosarak's top-8 items, the HP-SDP census top-914 job codes). Run once on the raw files; the loaders then read these constants and
never recompute them from the records they parse, so a parameter cannot move with one record.
They remain *derived from the data, as in the paper, not private* (listed in every report).

    python scripts/freeze_schemas.py [DATA_DIR]
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from protocols.datasets import categorical as C

OUT = Path(C.__file__).resolve().parents[1] / "data" / "schemas.json"


def adult(folder: Path) -> dict:
    rows = C._adult_rows(folder)
    cols = list(zip(*rows, strict=True))
    num = {j: np.asarray(cols[j], dtype=np.float64) for j in (2, 10, 11)}
    edges = {"fnlwgt": np.quantile(num[2], np.linspace(0, 1, 21)[1:-1]).tolist()}
    for j, name in ((10, "capital-gain"), (11, "capital-loss")):
        nz = num[j][num[j] != 0]
        edges[name] = np.quantile(nz, np.linspace(0, 1, 20)[1:-1]).tolist()
    cats = {
        C.ADULT_COLUMNS[j]: sorted(set(cols[j]))
        for j in range(15)
        if j not in (0, 2, 4, 10, 11, 12)
    }
    return {"quantile_edges": edges, "categories": cats}


def census_income(folder: Path) -> dict:
    """Census-Income's categorical domains: the sorted distinct values of both raw files."""
    cats: dict[str, set[str]] = {name: set() for c, name in C.CENSUS_COLUMNS if c != 0}
    for fname in ("census-income.train.csv.gz", "census-income.test.csv.gz"):
        with gzip.open(folder / fname, "rt") as fh:
            for line in fh:
                parts = line.split(",")
                if len(parts) >= 42:
                    for c, name in C.CENSUS_COLUMNS:
                        if c != 0:
                            cats[name].add(parts[c].strip())
    return {"categories": {name: sorted(v) for name, v in cats.items()}}


def kosarak_top(folder: Path, items: int = 8) -> list[str]:
    with gzip.open(folder / "fimi" / "kosarak-head36682.dat.gz", "rt") as fh:
        txs = [set(line.split()) for line in fh if line.strip()]
    counts: Counter[str] = Counter()
    for t in txs:
        counts.update(t)
    return sorted(counts, key=lambda it: (-counts[it], int(it)))[:items]


def census_job_codes(folder: Path) -> list[list[str]]:
    pairs = []
    for fname in ("census-income.train.csv.gz", "census-income.test.csv.gz"):
        with gzip.open(folder / "census-income-kdd" / fname, "rt") as fh:
            for line in fh:
                parts = line.split(",", 4)
                if len(parts) >= 5:
                    pairs.append((parts[2].strip(), parts[3].strip()))
    counts = Counter(pairs)
    return [list(k) for k in sorted(counts, key=lambda k: (-counts[k], k))[:914]]


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else C.default_data_dir()
    schema = {
        "note": "derived once from the raw bundled data, as in the papers; public constants "
        "now, not private (scripts/freeze_schemas.py)",
        "adult": adult(folder / "adult"),
        "census_income": census_income(folder / "census-income-kdd"),
        "kosarak_top_items": kosarak_top(folder),
        "hp_sdp_census_top_codes": census_job_codes(folder),
    }
    OUT.write_text(json.dumps(schema, indent=0))
    print(OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
