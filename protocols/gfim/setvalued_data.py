"""Set-valued datasets for GFIM / LDPMiner (seed 003): synthetic Laplace/Normal sets and real data.

Every loader returns a :class:`SetData`: ``records`` is an int32 ``(n, w)`` matrix, one row per
user holding that user's *distinct* items in ``[0, d)`` left-aligned, padded with ``-1`` (``w`` is
the largest set size). A padded matrix (rather than CSR) is what ``sdp run`` needs: every client
population takes a contiguous slice of rows. ``labels[v]`` names item ``v``.

Datasets (``SET_DATASETS``):

* ``laplace-50k``, ``laplace-500k``, ``normal-50k``, ``normal-500k``: the thesis' synthetic data
  (spec Sec. 6.1), mean 500, variance 1,800, d = 1,000, 50 distinct items per user. Generator
  (spec [I] reading): item weights ``w_v`` = the density at integer ``v`` in ``0..d-1`` of
  Laplace(500, b = sqrt(900) = 30) or Normal(500, sigma = sqrt(1800)), normalised; each user
  draws an i.i.d. stream from ``w`` and keeps the first 50 *distinct* items (successive sampling,
  i.e. weighted sampling without replacement, "resample on duplicates"), vectorised over users.
  ``synthetic_sets`` takes any n, d, size, seed.
* ``census-income``: UCI Census-Income (KDD), train + test (299,285 rows), every row read as the
  set of its ``attribute=value`` items (stand-in for the SPMF US Census 1990 set: 1M rows, 396
  items, 47 per row). 40 attributes (instance weight dropped) plus the income label: 41 items
  per row. Continuous attributes are binned: age in 10-year bins (90+ merged), wage per hour,
  capital gains, capital losses and dividends as ``0`` / ``>0``, weeks worked as 0 / 1-25 /
  26-51 / 52. Items are numbered by (attribute, sorted value).
* ``kosarak``: the FIMI kosarak head file (36,683 transactions), items renumbered by sorted id.
* ``t10i4d100k``: FIMI T10I4D100K (100,000 transactions, 870 items), items by sorted id.

Raw files come from ``data_dir`` (the folder holding ``census-income-kdd/`` and ``fimi/``), else
``$SDP_DATASETS``, else ``../shared/datasets`` (``protocols.datasets.categorical.default_data_dir``).
Parsed real data and generated synthetic sets are cached as compressed ``.npz`` files in
``$SDP_CACHE`` (default ``~/.cache/sdp``), keyed by the source files' size and mtime or by the
generator version and parameters; a cache that cannot be written is skipped.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from protocols.datasets.categorical import default_data_dir
from protocols.oracles.padding_sampling import length_percentile

SYNTHETIC = {
    "laplace-50k": ("laplace", 50_000),
    "laplace-500k": ("laplace", 500_000),
    "normal-50k": ("normal", 50_000),
    "normal-500k": ("normal", 500_000),
}
SYNTHETIC_VERSION = "successive-sampling-v1"  # bump when the generator changes (cache key)
SET_DATASETS = tuple(SYNTHETIC) + ("census-income", "kosarak", "t10i4d100k")
SYNTHETIC_SET_SIZE = 50  # the generator's parameter: every synthetic user holds 50 items


@dataclass(frozen=True)
class SetData:
    """Set-valued data: ``records`` int32 (n, w), distinct items per row left-aligned, -1 padded."""

    name: str
    records: np.ndarray
    d: int
    labels: tuple[str, ...]
    source: str
    public_ell: int | None = None  # a padding length fixed by the public schema, if any

    @property
    def n(self) -> int:
        return int(self.records.shape[0])

    @property
    def sizes(self) -> np.ndarray:
        """|S_i| per user."""
        return (self.records >= 0).sum(axis=1)

    def frequencies(self) -> np.ndarray:
        """True f_v = fraction of users whose set contains v, for v in [0, d)."""
        return item_frequencies(self.records, self.d)

    def ell(self, q: float = 0.9) -> int:
        """The paper's padding length: the q-quantile of the *private* set sizes (smallest L
        with >= q of |S_i| <= L). A public parameter derived from the data, not private: for
        the reproductions only (``sdp run`` takes ``ell`` from the run or the schema)."""
        return length_percentile(self.sizes, q)


def item_frequencies(records: np.ndarray, d: int) -> np.ndarray:
    """Fraction of rows containing each item (rows hold distinct items, -1 = padding)."""
    r = np.asarray(records)
    items = r[r >= 0]
    return np.bincount(items, minlength=d)[:d] / max(1, r.shape[0])


def check_records(records: np.ndarray, d: int, where: str = "set-valued records") -> None:
    """ValueError unless ``records`` is 2-D, items in [-1, d), no duplicate items within a row."""
    r = np.asarray(records)
    if r.ndim != 2 or not np.issubdtype(r.dtype, np.integer):
        raise ValueError(f"{where}: need a 2-D integer matrix (n, w), got {r.dtype} {r.shape}")
    if r.size and (r.min() < -1 or r.max() >= d):
        raise ValueError(f"{where}: items must lie in [0, {d}) with -1 as padding")
    if r.shape[1] > 1 and r.size:
        s = np.sort(r, axis=1)
        if ((s[:, 1:] == s[:, :-1]) & (s[:, 1:] >= 0)).any():
            raise ValueError(f"{where}: a user's set holds a duplicate item")


def to_csr(records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, items) of the padded matrix (row-major, padding dropped)."""
    r = np.asarray(records)
    mask = r >= 0
    indptr = np.zeros(r.shape[0] + 1, dtype=np.int64)
    np.cumsum(mask.sum(axis=1), out=indptr[1:])
    return indptr, r[mask].astype(np.int64)


def from_lists(sets: list[list[int]], width: int | None = None) -> np.ndarray:
    """Padded int32 matrix from item lists (items left-aligned, -1 after)."""
    w = max((len(s) for s in sets), default=0) if width is None else width
    out = np.full((len(sets), max(w, 1)), -1, dtype=np.int32)
    sizes = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
    if sizes.size and sizes.max() > out.shape[1]:
        raise ValueError(f"from_lists: a set has {sizes.max()} items > width {out.shape[1]}")
    rows = np.repeat(np.arange(len(sets)), sizes)
    cols = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    out[rows, cols] = np.fromiter((x for s in sets for x in s), dtype=np.int64, count=sizes.sum())
    return out


# ---- synthetic ---------------------------------------------------------------------------


def synthetic_weights(dist: str, d: int = 1000, mean: float = 500.0, var: float = 1800.0):
    """Normalised item weights: the Laplace / Normal density at v = 0..d-1."""
    v = np.arange(d, dtype=np.float64)
    if dist == "laplace":
        b = math.sqrt(var / 2)
        w = np.exp(-np.abs(v - mean) / b)
    elif dist == "normal":
        w = np.exp(-((v - mean) ** 2) / (2 * var))
    else:
        raise ValueError(f"synthetic_sets: dist must be 'laplace' or 'normal', got {dist!r}")
    return w / w.sum()


def synthetic_sets(
    dist: str, n: int, d: int = 1000, size: int = 50, seed: int = 0, chunk: int = 25_000
) -> np.ndarray:
    """n users, each ``size`` distinct items drawn by successive sampling from the weights.

    Column by column: every user still short of ``size`` items draws one item from the weights
    and keeps it unless already held (a per-chunk ``seen`` bitmap), until all are full.
    """
    if n < 1 or size < 1 or size > d:
        raise ValueError(f"synthetic_sets: need n >= 1 and 1 <= size <= d (n={n}, size={size})")
    w = synthetic_weights(dist, d)
    if (w > 0).sum() < size:
        raise ValueError(f"synthetic_sets: fewer than {size} items have positive weight")
    cdf = np.cumsum(w)
    cdf[-1] = 1.0
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(3, 0)))
    out = np.empty((n, size), dtype=np.int32)
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        seen = np.zeros((e - s, d), dtype=bool)
        count = np.zeros(e - s, dtype=np.int64)
        rows = np.arange(e - s)
        while rows.size:
            v = np.minimum(np.searchsorted(cdf, rng.random(rows.size), side="right"), d - 1)
            new = ~seen[rows, v]
            r, v = rows[new], v[new]
            seen[r, v] = True
            out[s + r, count[r]] = v
            count[r] += 1
            rows = rows[count[rows] < size]
    return out


def load_synthetic(name: str, seed: int = 0, n: int | None = None) -> SetData:
    """One of the thesis' synthetic sets (``laplace-50k`` ...), optionally with another n."""
    if name not in SYNTHETIC:
        raise ValueError(f"unknown synthetic set {name!r}; known: {', '.join(SYNTHETIC)}")
    dist, n0 = SYNTHETIC[name]
    nn = n0 if n is None else int(n)
    src = f"synthetic {dist}(mean 500, var 1800), d=1000, 50 items/user, n={nn}, seed {seed}"

    def build() -> SetData:
        rec = synthetic_sets(dist, nn, seed=seed)
        return SetData(name, rec, 1000, tuple(str(v) for v in range(1000)), src)

    return _cached(f"{name}-{nn}-{seed}", f"{SYNTHETIC_VERSION} {src}", build)


# ---- real data ---------------------------------------------------------------------------

CENSUS_NAMES = (
    "age",
    "class-of-worker",
    "industry-code",
    "occupation-code",
    "education",
    "wage-per-hour",
    "enroll-in-edu",
    "marital-status",
    "major-industry",
    "major-occupation",
    "race",
    "hispanic-origin",
    "sex",
    "union-member",
    "reason-unemployment",
    "employment-status",
    "capital-gains",
    "capital-losses",
    "dividends",
    "tax-filer-status",
    "region-prev-res",
    "state-prev-res",
    "household-family-stat",
    "household-summary",
    "instance-weight",
    "migration-msa",
    "migration-reg",
    "migration-within-reg",
    "same-house-1yr",
    "migration-sunbelt",
    "persons-worked-for-employer",
    "family-under-18",
    "country-father",
    "country-mother",
    "country-self",
    "citizenship",
    "own-business",
    "veterans-questionnaire",
    "veterans-benefits",
    "weeks-worked",
    "year",
    "income",
)
_ZERO_POS = {5, 16, 17, 18}


def _census_value(col: int, raw: str) -> str:
    if col == 0:
        return f"{min(int(raw) // 10, 9) * 10}s"
    if col in _ZERO_POS:
        return "0" if float(raw) == 0 else ">0"
    if col == 39:
        w = int(raw)
        return "0" if w == 0 else "1-25" if w <= 25 else "26-51" if w < 52 else "52"
    return raw.rstrip(".")


def _need(path: Path, what: str) -> Path:
    if not path.is_file():
        raise FileNotFoundError(
            f"{what}: {path} not found (pass data_dir=the folder holding the raw datasets, "
            "or set SDP_DATASETS)"
        )
    return path


def cache_dir() -> Path:
    """Parsed-dataset cache: ``$SDP_CACHE`` or ``~/.cache/sdp``."""
    return Path(os.environ.get("SDP_CACHE") or Path.home() / ".cache" / "sdp")


def _cached(key: str, sources: list[Path] | str, build: Callable[[], SetData]) -> SetData:
    """``build()`` once per source version (files, or a generator description string); later
    loads read a compressed ``.npz`` cache."""
    if isinstance(sources, str):
        what = sources
    else:
        what = repr([(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in sources])
    stamp = hashlib.blake2b(what.encode(), digest_size=8).hexdigest()
    path = cache_dir() / f"{key}-{stamp}.npz"
    try:
        with np.load(path, allow_pickle=False) as z:
            return SetData(
                str(z["name"]),
                z["records"],
                int(z["d"]),
                tuple(str(x) for x in z["labels"]),
                str(z["source"]),
            )
    except (OSError, KeyError, ValueError):
        pass
    data = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez_compressed(
            tmp,
            name=data.name,
            records=data.records,
            d=data.d,
            labels=np.asarray(data.labels),
            source=data.source,
        )
        os.replace(tmp, path)  # atomic: concurrent party processes may build at once
    except OSError:
        pass  # read-only home: no cache, still correct
    return data


@lru_cache(maxsize=4)
def load_census_sets(data_dir: str | None = None) -> SetData:
    """Census-Income (KDD) rows as sets of attribute=value items (module docstring)."""
    folder = Path(data_dir or default_data_dir()) / "census-income-kdd"
    files = [folder / f for f in ("census-income.train.csv.gz", "census-income.test.csv.gz")]
    return _cached(
        "census-sets",
        [_need(f, "Census-Income (KDD)") for f in files],
        lambda: _parse_census(folder),
    )


def _parse_census(folder: Path) -> SetData:
    rows: list[list[str]] = []
    for fname in ("census-income.train.csv.gz", "census-income.test.csv.gz"):
        with gzip.open(_need(folder / fname, "Census-Income (KDD)"), "rt") as fh:
            rows.extend(p for p in (line.rstrip("\n").split(", ") for line in fh) if len(p) == 42)
    codes, labels, base = [], [], 0
    for c in range(42):
        if c == 24:  # instance weight: not an attribute
            continue
        col = [r[c] for r in rows]
        if c in (0, 5, 16, 17, 18, 39):
            col = [_census_value(c, x) for x in col]
        index: dict[str, int] = {}
        first = np.fromiter((index.setdefault(x, len(index)) for x in col), np.int32, len(col))
        uniq = sorted(index)
        rank = np.empty(len(uniq), dtype=np.int32)
        rank[[index[u] for u in uniq]] = np.arange(len(uniq), dtype=np.int32)
        codes.append(rank[first] + base)
        labels.extend(f"{CENSUS_NAMES[c]}={u.strip().rstrip('.')}" for u in uniq)
        base += len(uniq)
    rec = np.stack(codes, axis=1)
    src = f"UCI Census-Income (KDD) train+test in {folder}: {rec.shape[0]} rows as item sets"
    return SetData("census-income", rec, base, tuple(labels), src)


FIMI_FILES = {"kosarak": "kosarak-head36682.dat.gz", "t10i4d100k": "T10I4D100K.dat.gz"}
# Public item universes (first and last id), never the items present: T10I4D100K's generator
# draws from 1,000 items (ids 0..999; 870 occur); the Kosarak head's ids 1..17,034 (all occur:
# derived from the data, as in the paper; the full Kosarak has more).
FIMI_UNIVERSE = {"kosarak": (1, 17_034), "t10i4d100k": (0, 999)}
PUBLIC_ELL = {"census-income": 41}  # every row is 41 attribute=value items (the schema)


@lru_cache(maxsize=4)
def load_fimi(name: str, data_dir: str | None = None) -> SetData:
    """A FIMI transaction file (``kosarak`` head or ``t10i4d100k``), items renumbered by id."""
    if name not in FIMI_FILES:
        raise ValueError(f"unknown FIMI dataset {name!r}; known: {', '.join(FIMI_FILES)}")
    path = _need(Path(data_dir or default_data_dir()) / "fimi" / FIMI_FILES[name], name)
    return _cached(f"{name}-universe", [path], lambda: _parse_fimi(name, path))


def _parse_fimi(name: str, path: Path) -> SetData:
    with gzip.open(path, "rt") as fh:
        txs = [sorted({int(x) for x in line.split()}) for line in fh if line.strip()]
    return fimi_sets(name, txs, f"FIMI {path.name} ({len(txs)} transactions) in {path.parent}")


def fimi_sets(name: str, txs: list[list[int]], src: str) -> SetData:
    """Transactions over the public universe :data:`FIMI_UNIVERSE` (item v -> v - first id);
    an id outside it is an error (the domain never grows or shrinks with the data)."""
    lo, hi = FIMI_UNIVERSE[name]
    bad = next((x for t in txs for x in t if not lo <= x <= hi), None)
    if bad is not None:
        raise ValueError(f"{name}: item id {bad} lies outside the public universe [{lo}, {hi}]")
    ids = np.arange(lo, hi + 1)
    rec = from_lists([[x - lo for x in t] for t in txs])
    return SetData(name, rec, int(ids.size), tuple(f"item-{x}" for x in ids), src)


def subsample(data: SetData, n: int, seed: int = 0) -> SetData:
    """n users drawn uniformly without replacement (order kept), for smaller real-data runs."""
    if not 1 <= n <= data.n:
        raise ValueError(f"{data.name}: users must lie in [1, {data.n}], got {n}")
    if n == data.n:
        return data
    rows = np.sort(
        np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(3, 1))).choice(
            data.n, size=n, replace=False
        )
    )
    src = f"{data.source}; {n} users sampled (seed {seed})"
    return SetData(data.name, data.records[rows], data.d, data.labels, src)


def load_set_dataset(
    name: str, data_dir: str | None = None, seed: int = 0, n: int | None = None
) -> SetData:
    """Any of :data:`SET_DATASETS`: synthetic sets are generated with ``n`` users and ``seed``;
    real ones are subsampled to ``n`` users (``seed``) when ``n`` is given."""
    if name in SYNTHETIC:
        data = load_synthetic(name, seed=seed, n=n)
        return replace(data, public_ell=SYNTHETIC_SET_SIZE)  # the generator's set size
    if name == "census-income":
        data = load_census_sets(None if data_dir is None else str(data_dir))
        data = replace(data, public_ell=PUBLIC_ELL[name])
    elif name in ("kosarak", "t10i4d100k"):
        data = load_fimi(name, None if data_dir is None else str(data_dir))
    else:
        raise ValueError(f"unknown set-valued dataset {name!r}; known: {', '.join(SET_DATASETS)}")
    return data if n is None else replace(subsample(data, int(n), seed), public_ell=data.public_ell)
