"""Generate the example data files the project does not otherwise ship (``tests/data/``).

    python scripts/make_example_data.py [--out tests/data] [--seed 17]

* ``survey.csv.gz``: a synthetic household survey, 50,000 rows, columns ``respondent, region,
  age_years, sex, education, household_size, employment, satisfaction`` (the schema
  ``survey.toml`` uses six of them: ``respondent`` and ``household_size`` are ignored).
  Education and employment depend on age; satisfaction on employment. Planted: 7 rows with
  ``NA`` region (mapped to the schema's ``unknown``), 12 rows with an empty satisfaction
  (rejected as missing), one education ``kindergarten`` (rejected as out of domain), and 3 ages
  above 120 (clipped to the last bin).
* ``baskets.txt.gz``: 20,000 shopping baskets, product ids 1..500 (Zipf-like popularity),
  1 to 30 products each. Planted: 3 blank lines (missing), one product 777 outside the
  catalogue (malformed), one basket with a product twice (merged, kept).
* ``incomes.csv.gz``: 20,000 rows ``person, income, region``; log-normal incomes (median about
  36,000). Planted: values above the public 250,000 (clipped), 5 ``NA`` (missing), one
  ``unknown`` (unparsable: malformed).

Files are gzip with mtime 0, so the same seed writes the same bytes.
"""

from __future__ import annotations

import argparse
import gzip
import io
from pathlib import Path

import numpy as np

REGIONS = ["north", "south", "east", "west", "capital"]
EDU = [
    "none",
    "primary",
    "lower-secondary",
    "upper-secondary",
    "vocational",
    "bachelor",
    "master-or-higher",
]
EMP = ["employed", "self-employed", "unemployed", "student", "retired", "homemaker"]


def _write_gz(path: Path, text: str) -> None:
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(text.encode())


def survey(rng: np.random.Generator, n: int = 50_000) -> str:
    """The survey CSV text (see the module docstring)."""
    region = rng.choice(5, n, p=[0.22, 0.2, 0.18, 0.15, 0.25])
    age = np.clip(np.round(rng.gamma(6.0, 7.5, n) + 16), 16, 99).astype(int)
    sex = rng.choice(3, n, p=[0.505, 0.49, 0.005])
    young, old = age < 25, age >= 65
    edu_p = np.array([0.02, 0.08, 0.15, 0.3, 0.2, 0.17, 0.08])
    edu = rng.choice(7, n, p=edu_p)
    edu[old & (rng.random(n) < 0.3)] = 1
    emp = rng.choice(6, n, p=[0.6, 0.1, 0.08, 0.04, 0.1, 0.08])
    emp[young & (rng.random(n) < 0.6)] = 3
    emp[old & (rng.random(n) < 0.8)] = 4
    hh = np.clip(rng.poisson(1.6, n) + 1, 1, 12)
    base = np.array([3.6, 3.8, 2.6, 3.4, 3.9, 3.5])[emp]
    sat = np.clip(np.round(base + rng.normal(0, 0.9, n)), 1, 5).astype(int)
    rows = []
    for i in range(n):
        rows.append(
            [
                f"R{100000 + i}",
                REGIONS[region[i]],
                str(age[i]),
                ["female", "male", "other"][sex[i]],
                EDU[edu[i]],
                str(hh[i]),
                EMP[emp[i]],
                str(sat[i]),
            ]
        )
    picks = rng.choice(n, 23, replace=False)
    for i in picks[:7]:
        rows[i][1] = "NA"
    for i in picks[7:19]:
        rows[i][7] = ""
    rows[picks[19]][4] = "kindergarten"
    for i in picks[20:23]:
        rows[i][2] = str(121 + int(i) % 5)
    head = "respondent,region,age_years,sex,education,household_size,employment,satisfaction"
    return head + "\n" + "\n".join(",".join(r) for r in rows) + "\n"


def baskets(rng: np.random.Generator, n: int = 20_000, d: int = 500) -> str:
    """The baskets text (see the module docstring)."""
    w = 1.0 / np.arange(1, d + 1) ** 1.1
    w /= w.sum()
    perm = rng.permutation(d) + 1  # popular products are not simply the small ids
    out = io.StringIO()
    sizes = np.clip(rng.geometric(0.18, n), 1, 30)
    blank = set(rng.choice(n, 3, replace=False).tolist())
    special = rng.choice(n, 2, replace=False)
    for i in range(n):
        if i in blank:
            out.write("\n")
        items = perm[rng.choice(d, sizes[i], replace=False, p=w)].tolist()
        if i == special[0]:
            items.append(777)
        if i == special[1]:
            items.append(items[0])
        out.write(" ".join(map(str, items)) + "\n")
    return out.getvalue()


def incomes(rng: np.random.Generator, n: int = 20_000) -> str:
    """The incomes CSV text (see the module docstring)."""
    inc = np.round(np.exp(rng.normal(np.log(36_000), 0.75, n)), -1)
    vals = [f"{x:.0f}" for x in inc]
    picks = rng.choice(n, 6, replace=False)
    for i in picks[:5]:
        vals[i] = "NA"
    vals[picks[5]] = "unknown"
    reg = rng.choice(REGIONS, n)
    lines = [f"P{i:05d},{v},{r}" for i, (v, r) in enumerate(zip(vals, reg))]
    return "person,income,region\n" + "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "tests" / "data"))
    ap.add_argument("--seed", type=int, default=17)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, make, k in (
        ("survey.csv.gz", survey, 0),
        ("baskets.txt.gz", baskets, 1),
        ("incomes.csv.gz", incomes, 2),
    ):
        rng = np.random.default_rng(np.random.SeedSequence(a.seed, spawn_key=(k,)))
        _write_gz(out / name, make(rng))
        print(f"wrote {out / name} ({(out / name).stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
