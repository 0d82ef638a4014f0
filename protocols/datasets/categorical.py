"""Multidimensional categorical datasets for the seed-000 experiments (SRR-MS, ARR-SS, PSRR-SS).

Every loader returns a :class:`CategoricalDataset`: an int64 ``(n, d)`` matrix whose column ``j``
takes values in ``[0, k_j)``, the domain sizes ``k_j`` and the attribute names.

Preprocessing choices (the paper gives none; documented here and in the reproduction report):

* **Adult** (UCI, paper's Table 1: n = 45,222, d = 15, k_max = 41). Rows of ``adult.data`` and
  ``adult.test`` without ``?`` (45,222). The 14 attributes plus the income label (the ``.`` suffix
  of the test file is dropped) give d = 15. Categorical attributes keep their values (domain = the
  sorted distinct values among complete rows; native-country has 41, the k_max). Numeric ones:
  age in 5-year bins from 15 (16 bins), education-num as is (16 values), fnlwgt in 20 quantile
  bins, capital-gain and capital-loss as "zero" plus 19 quantile bins of the non-zero values,
  hours-per-week in 5-hour bins (20 bins). The mean of log2 k_j is then 3.40, Table 4's SRR-MS
  value for Adult, and the only binary attributes are sex and income (no ternary ones), matching
  "at eps_c = 0.4 only two binary attributes count".
* **Census-Income (KDD)** (stand-in for the paper's IPUMS Mexico extract: n = 200,000, d = 13,
  k_max = 9). 200,000 rows sampled without replacement (seed 0) from train + test (299,285), 13
  attributes with at most 9 values: age (9 ten-year bins, 80+ merged), class of worker (9),
  marital status (7), race (5), sex (2), full/part-time status (8), tax filer status (6), household
  summary (8), persons worked for employer (7), family members under 18 (5), citizenship (5),
  migration code change in region (9, ``?`` kept as a value), reason for unemployment (6).
  Mean log2 k_j = 2.64 (paper's Mexico: 2.69).
* **Kosarak** (paper: n = 65,536, d = 8, binary). The FIMI head file (36,683 non-empty lines); the
  8 most frequent items become 8 binary attributes (1 = the transaction contains the item).
  ``kosarak-synthetic`` draws 65,536 users i.i.d. from the empirical joint distribution of those 8
  bits (a bootstrap of the head rows, seed 0) to match the paper's n.
* **Bank** is not available offline; it is not provided.

Public parameters. The bin edges, categorical domains and Kosarak's top items above were derived
from the data (as in the paper); they are frozen in ``protocols/data/schemas.json``
(``scripts/freeze_schemas.py``) and the parsers read them from there, never from the records they
parse: one record cannot move an edge or a domain. A value outside a frozen domain is an error.
They remain *public parameters derived from the data, as in the paper, not private*, and every
reproduction report lists them (:data:`DERIVED_FROM_DATA`). Census-Income's categorical domains
are frozen the same way (the values present in its two raw files).

Raw data is read from an explicit ``data_dir`` (the folder holding ``adult/``, ``census-income-kdd/``
and ``fimi/``), else ``$SDP_DATASETS``, else ``../shared/datasets`` next to the project. Adult also
ships preprocessed inside the package (``protocols/data/adult.npz.gz``), used when no directory is
given.
"""

from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATASET_NAMES = ("adult", "census-income", "kosarak", "kosarak-synthetic")
BUNDLED_ADULT = Path(__file__).resolve().parents[1] / "data" / "adult.npz.gz"
SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "schemas.json"
DERIVED_FROM_DATA = {
    "adult": "fnlwgt / capital-gain / capital-loss quantile bin edges and the categorical "
    "domains (values present in the complete rows), frozen in protocols/data/schemas.json",
    "kosarak": "the 8 most frequent items of the Kosarak head (frozen in schemas.json)",
    "kosarak-synthetic": "the 8 most frequent items of the Kosarak head (frozen in schemas.json)",
    "census-income": "the categorical domains (values present in the raw train and test "
    "files), frozen in protocols/data/schemas.json",
}


def frozen_schema() -> dict:
    """The frozen public parameters of the bundled datasets (module docstring)."""
    import json

    return json.loads(SCHEMAS.read_text())


ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)

# (column index in census-income.*.csv, attribute name); age is binned, the rest categorical.
CENSUS_COLUMNS = (
    (0, "age"),
    (1, "class-of-worker"),
    (7, "marital-status"),
    (10, "race"),
    (12, "sex"),
    (15, "full-or-part-time-employment"),
    (19, "tax-filer-status"),
    (23, "household-summary"),
    (30, "num-persons-worked-for-employer"),
    (31, "family-members-under-18"),
    (35, "citizenship"),
    (26, "migration-code-change-in-reg"),
    (14, "reason-for-unemployment"),
)


@dataclass(frozen=True)
class CategoricalDataset:
    """An int64 ``(n, d)`` record matrix with per-attribute domain sizes and names."""

    name: str
    records: np.ndarray
    domain_sizes: tuple[int, ...]
    attributes: tuple[str, ...]
    source: str

    @property
    def n(self) -> int:
        return int(self.records.shape[0])

    @property
    def d(self) -> int:
        return int(self.records.shape[1])

    @property
    def k_max(self) -> int:
        return max(self.domain_sizes)

    def marginals(self) -> list[np.ndarray]:
        """True 1-way marginals (fractions) per attribute."""
        return true_marginals(self.records, self.domain_sizes)


def true_marginals(
    records: np.ndarray, domain_sizes: tuple[int, ...] | list[int]
) -> list[np.ndarray]:
    """Frequency of every value of every attribute (each array sums to 1)."""
    x = np.asarray(records)
    n = x.shape[0]
    return [np.bincount(x[:, j], minlength=k) / n for j, k in enumerate(domain_sizes)]


def _check(ds: CategoricalDataset) -> CategoricalDataset:
    x = ds.records
    if x.ndim != 2 or x.shape[1] != len(ds.domain_sizes) or x.dtype != np.int64:
        raise ValueError(
            f"dataset {ds.name!r}: records must be int64 (n, d), got {x.dtype} {x.shape}"
        )
    k = np.asarray(ds.domain_sizes)
    if x.size and (x.min() < 0 or (x >= k).any()):
        raise ValueError(f"dataset {ds.name!r}: a value lies outside its attribute domain")
    return ds


def default_data_dir() -> Path:
    """``$SDP_DATASETS`` if set, else ``../shared/datasets`` beside the project root."""
    env = os.environ.get("SDP_DATASETS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "datasets"


def _need(path: Path, what: str) -> Path:
    if not path.is_file():
        raise FileNotFoundError(
            f"{what}: {path} not found (pass data_dir=the folder holding the raw datasets, "
            f"or set SDP_DATASETS)"
        )
    return path


def _edge_bins(x: np.ndarray, edges: list[float]) -> np.ndarray:
    """Bin index in [0, len(edges) + 1) by fixed public edges."""
    return np.searchsorted(np.asarray(edges), x, side="right").astype(np.int64)


def _zero_plus_edges(x: np.ndarray, edges: list[float]) -> np.ndarray:
    """Bin 0 for zero, bins 1..len(edges)+1 by fixed public edges of the non-zero values."""
    out = np.zeros(x.shape, dtype=np.int64)
    nz = x != 0
    out[nz] = 1 + _edge_bins(x[nz], edges)
    return out


def _frozen_codes(column: list[str], domain: list[str], what: str) -> tuple[np.ndarray, int]:
    """Indices of the values in a frozen domain; ValueError for a value outside it."""
    index = {v: i for i, v in enumerate(domain)}
    bad = next((v for v in column if v not in index), None)
    if bad is not None:
        raise ValueError(f"{what}: value {bad!r} lies outside the frozen domain")
    return np.fromiter((index[v] for v in column), np.int64, len(column)), len(domain)


def _adult_rows(folder: Path) -> list[list[str]]:
    """Complete rows of adult.data + adult.test (income's ``.`` suffix dropped)."""
    rows: list[list[str]] = []
    for fname in ("adult.data.gz", "adult.test.gz"):
        with gzip.open(_need(folder / fname, "Adult"), "rt") as fh:
            for line in fh:
                line = line.strip()
                if not line or line.startswith("|"):
                    continue
                parts = [p.strip() for p in line.split(",")]
                if len(parts) != 15 or "?" in parts:
                    continue
                parts[14] = parts[14].rstrip(".")
                rows.append(parts)
    return rows


def discretize_adult(rows: list[list[str]], schema: dict | None = None) -> CategoricalDataset:
    """Adult rows -> records with the frozen public schema (edges and domains never read from
    ``rows``)."""
    sch = (schema or frozen_schema())["adult"]
    edges, cats = sch["quantile_edges"], sch["categories"]
    cols = list(zip(*rows, strict=True))
    num = {j: np.asarray(cols[j], dtype=np.float64) for j in (0, 2, 4, 10, 11, 12)}
    out, ks = [], []
    for j in range(15):
        if j == 0:  # age: 5-year bins from 15 -> 16 bins (17..90)
            c, k = np.clip((num[0] - 15) // 5, 0, 15).astype(np.int64), 16
        elif j == 2:  # fnlwgt: 20 bins at frozen quantile edges
            c, k = _edge_bins(num[2], edges["fnlwgt"]), 20
        elif j == 4:  # education-num 1..16
            c, k = (num[4] - 1).astype(np.int64), 16
        elif j in (10, 11):  # capital gain/loss: zero + 19 bins at frozen edges
            c, k = _zero_plus_edges(num[j], edges[ADULT_COLUMNS[j]]), 20
        elif j == 12:  # hours-per-week 1..99: 5-hour bins -> 20 bins
            c, k = np.clip((num[12] - 1) // 5, 0, 19).astype(np.int64), 20
        else:
            name = ADULT_COLUMNS[j]
            c, k = _frozen_codes(list(cols[j]), cats[name], f"adult {name}")
        out.append(c)
        ks.append(k)
    return _check(
        CategoricalDataset("adult", np.stack(out, axis=1), tuple(ks), ADULT_COLUMNS, "UCI Adult")
    )


def parse_adult(data_dir: str | Path) -> CategoricalDataset:
    """Parse and discretize raw UCI Adult (see the module docstring)."""
    folder = Path(data_dir) / "adult"
    ds = discretize_adult(_adult_rows(folder))
    return CategoricalDataset(
        ds.name, ds.records, ds.domain_sizes, ds.attributes, f"raw UCI Adult in {folder}"
    )


def write_adult_bundle(data_dir: str | Path, out: str | Path = BUNDLED_ADULT) -> Path:
    """Write the preprocessed Adult matrix as a gzipped ``.npz`` (int8) for package data."""
    ds = parse_adult(data_dir)
    buf = io.BytesIO()
    np.savez(
        buf,
        records=ds.records.astype(np.int8),
        domain_sizes=np.asarray(ds.domain_sizes, dtype=np.int64),
        attributes=np.asarray(ds.attributes),
    )
    out = Path(out)
    with (
        open(out, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as fh,
    ):
        fh.write(buf.getvalue())
    return out


def _load_bundle(path: Path) -> CategoricalDataset:
    with gzip.open(_need(path, "bundled Adult"), "rb") as fh:
        z = np.load(io.BytesIO(fh.read()), allow_pickle=False)
        return _check(
            CategoricalDataset(
                "adult",
                z["records"].astype(np.int64),
                tuple(int(k) for k in z["domain_sizes"]),
                tuple(str(a) for a in z["attributes"]),
                f"bundled copy {path.name}",
            )
        )


def load_adult(data_dir: str | Path | None = None) -> CategoricalDataset:
    """Adult, n = 45,222, d = 15, k_max = 41: from ``data_dir`` if given, else the bundled copy."""
    if data_dir is None:
        return _load_bundle(BUNDLED_ADULT)
    return parse_adult(data_dir)


def load_census_income(
    data_dir: str | Path | None = None, n: int = 200_000, seed: int = 0
) -> CategoricalDataset:
    """Census-Income (KDD) stand-in for the Mexico census: n rows, 13 attributes, k_max = 9."""
    folder = Path(data_dir or default_data_dir()) / "census-income-kdd"
    wanted = [c for c, _ in CENSUS_COLUMNS]
    cols: list[list[str]] = [[] for _ in wanted]
    for fname in ("census-income.train.csv.gz", "census-income.test.csv.gz"):
        with gzip.open(_need(folder / fname, "Census-Income (KDD)"), "rt") as fh:
            for line in fh:
                parts = line.split(",")
                if len(parts) < 42:
                    continue
                for out, c in zip(cols, wanted, strict=True):
                    out.append(parts[c].strip())
    total = len(cols[0])
    if not 0 < n <= total:
        raise ValueError(f"load_census_income: n must lie in [1, {total}], got {n}")
    pick = np.sort(np.random.default_rng(seed).choice(total, size=n, replace=False))
    cats = frozen_schema()["census_income"]["categories"]
    out, ks = [], []
    for (c, name), col in zip(CENSUS_COLUMNS, cols, strict=True):
        if c == 0:
            age = np.asarray(col, dtype=np.int64)
            code, k = np.minimum(age // 10, 8), 9
        else:  # the frozen public domain (never the values of the rows parsed)
            code, k = _frozen_codes(col, cats[name], f"census-income {name}")
        out.append(code[pick])
        ks.append(k)
    return _check(
        CategoricalDataset(
            "census-income",
            np.stack(out, axis=1).astype(np.int64),
            tuple(ks),
            tuple(name for _, name in CENSUS_COLUMNS),
            f"UCI Census-Income (KDD) in {folder}, {n} of {total} rows (seed {seed})",
        )
    )


def load_kosarak(data_dir: str | Path | None = None, items: int = 8) -> CategoricalDataset:
    """Kosarak head (36,683 transactions) as ``items`` binary attributes (most frequent items)."""
    path = _need(
        Path(data_dir or default_data_dir()) / "fimi" / "kosarak-head36682.dat.gz", "Kosarak"
    )
    with gzip.open(path, "rt") as fh:
        txs = [set(line.split()) for line in fh if line.strip()]
    frozen = frozen_schema()["kosarak_top_items"]
    if items > len(frozen):
        raise ValueError(f"kosarak: only the top {len(frozen)} items are frozen, got {items}")
    top = frozen[:items]  # the head's most frequent items, frozen (never recomputed)
    x = np.array([[it in t for it in top] for t in txs], dtype=np.int64)
    return _check(
        CategoricalDataset(
            "kosarak",
            x,
            (2,) * items,
            tuple(f"item-{it}" for it in top),
            f"FIMI kosarak head ({len(txs)} transactions), top {items} items",
        )
    )


def load_kosarak_synthetic(
    data_dir: str | Path | None = None, n: int = 65_536, seed: int = 0
) -> CategoricalDataset:
    """``n`` users drawn i.i.d. from the joint distribution of the Kosarak head's 8 top items."""
    base = load_kosarak(data_dir)
    rows = np.random.default_rng(seed).integers(0, base.n, size=n)
    return _check(
        CategoricalDataset(
            "kosarak-synthetic",
            base.records[rows],
            base.domain_sizes,
            base.attributes,
            f"bootstrap of {base.source} to n={n} (seed {seed})",
        )
    )


def load_dataset(name: str, data_dir: str | Path | None = None) -> CategoricalDataset:
    """Load one of :data:`DATASET_NAMES`."""
    loaders = {
        "adult": load_adult,
        "census-income": load_census_income,
        "kosarak": load_kosarak,
        "kosarak-synthetic": load_kosarak_synthetic,
    }
    if name not in loaders:
        raise ValueError(
            f"unknown dataset {name!r}; known: {', '.join(DATASET_NAMES)} (Bank is not available)"
        )
    return loaders[name](data_dir)
