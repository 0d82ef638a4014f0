"""Seed-002 datasets: one categorical value per user (paper's Table 1 and its offline stand-ins).

The paper gives neither the synthetic distributions' parameters nor seeds (spec 11); these are ours:

* ``normal``: n = 600,000, d = 600; v = round(X), X ~ N(mu = (d-1)/2, sigma = d/10 = 60), clipped to
  [0, d-1] (clipping touches < 1e-6 of the mass).
* ``zipf``: n = 600,000, d = 600; Pr[v = i] proportional to (i + 1)^-1.1 (exponent 1.1, the value the
  spec's own simulation used).
* ``census-income`` (stand-in for IPUMS 1940 "city", d = 915, n = 602,325): UCI Census-Income (KDD),
  train + test (299,285 rows). The attribute is the *detailed job code*, "detailed industry recode"
  x "detailed occupation recode" (columns 2 and 3, 1,569 distinct codes; code (0, 0) = "not in
  universe", about half of the people, like the city attribute's "not in a city" mass). The 914 most
  frequent codes keep their own value (by decreasing frequency), the rest share value 914, so
  d = 915. The 914 codes are frozen in ``protocols/data/schemas.json`` (derived once from the
  data, as in the paper; public parameters derived from the data, not private). Users: the rows resampled with replacement to n (default the paper's 602,325; seeded).
* ``kosarak``: the FIMI Kosarak head (36,683 transactions); each user is one transaction with one
  item chosen uniformly at random from it (the paper's rule), value = item id - 1, d = 17,034 (the
  largest item id of the head). n = 36,683 unless ``n`` resamples with replacement.
* ``zipf-kosarak``: the full-Kosarak-scale stand-in, n = 1,000,000, d = 42,178, Zipf exponent 1.0
  (a least-squares fit of log frequency on log rank over the 1,000 most frequent items of the
  one-item-per-transaction Kosarak head gives 0.99).

Every loader is deterministic in ``seed`` (``protocols.rng`` paths).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from protocols.datasets.categorical import default_data_dir
from protocols.rng import experiment_rng

DATASETS = ("zipf", "normal", "census-income", "kosarak", "zipf-kosarak")
PAPER_SIZES = {  # (n, d) of the paper's Table 1 or of our stand-in
    "normal": (600_000, 600),
    "zipf": (600_000, 600),
    "census-income": (602_325, 915),
    "kosarak": (36_683, 17_034),
    "zipf-kosarak": (1_000_000, 42_178),
}
NORMAL_SIGMA_FRACTION = 0.1
ZIPF_EXPONENT = 1.1
KOSARAK_ZIPF_EXPONENT = 1.0
CENSUS_JOB_COLUMNS = (2, 3)


@dataclass(frozen=True)
class HistogramDataset:
    """One value in [0, d) per user."""

    name: str
    values: np.ndarray  # int64 (n,)
    d: int
    source: str

    @property
    def n(self) -> int:
        return int(self.values.size)

    def frequencies(self) -> np.ndarray:
        """True histogram as fractions."""
        return np.bincount(self.values, minlength=self.d) / self.n


def _check_nd(name: str, n: int, d: int) -> None:
    if int(n) != n or n < 2:
        raise ValueError(f"{name}: n must be an integer >= 2, got {n}")
    if int(d) != d or d < 2:
        raise ValueError(f"{name}: d must be an integer >= 2, got {d}")


def zipf_dataset(
    n: int = 600_000,
    d: int = 600,
    exponent: float = ZIPF_EXPONENT,
    seed: int = 0,
    name: str = "zipf",
) -> HistogramDataset:
    """n i.i.d. values with Pr[i] proportional to (i + 1)^-exponent."""
    _check_nd(name, n, d)
    if not exponent > 0:
        raise ValueError(f"{name}: Zipf exponent must be > 0, got {exponent}")
    p = 1.0 / np.arange(1, d + 1, dtype=np.float64) ** exponent
    rng = experiment_rng(seed, "seed002", name, n, d)
    values = rng.choice(d, size=int(n), p=p / p.sum()).astype(np.int64)
    return HistogramDataset(name, values, int(d), f"Zipf(s={exponent}) n={n} d={d} seed={seed}")


def normal_dataset(n: int = 600_000, d: int = 600, seed: int = 0) -> HistogramDataset:
    """n values round(N((d-1)/2, (d/10)^2)) clipped to [0, d-1]."""
    _check_nd("normal", n, d)
    rng = experiment_rng(seed, "seed002", "normal", n, d)
    x = rng.normal((d - 1) / 2, NORMAL_SIGMA_FRACTION * d, size=int(n))
    values = np.clip(np.rint(x), 0, d - 1).astype(np.int64)
    return HistogramDataset(
        "normal",
        values,
        int(d),
        f"Normal(mu={(d - 1) / 2}, sigma={NORMAL_SIGMA_FRACTION * d}) n={n} d={d} seed={seed}",
    )


@lru_cache(maxsize=2)
def _census_job_codes(folder: str) -> tuple[np.ndarray, int]:
    """Per row: job code rank (0 = most frequent), 914+ merged; and the number of raw rows."""
    pairs: list[tuple[str, str]] = []
    for fname in ("census-income.train.csv.gz", "census-income.test.csv.gz"):
        path = Path(folder) / fname
        if not path.is_file():
            raise FileNotFoundError(
                f"census-income: {path} not found (set SDP_DATASETS or pass data_dir)"
            )
        with gzip.open(path, "rt") as fh:
            for line in fh:
                parts = line.split(",", 4)
                if len(parts) < 5:
                    continue
                pairs.append((parts[2].strip(), parts[3].strip()))
    from protocols.datasets.categorical import frozen_schema

    # the 914 most frequent codes, frozen in protocols/data/schemas.json (derived once from the
    # data as in the paper; never recomputed from the rows parsed here); the rest share 914
    top = frozen_schema()["hp_sdp_census_top_codes"]
    rank = {(a, b): i for i, (a, b) in enumerate(top)}
    codes = np.fromiter((rank.get(p, 914) for p in pairs), dtype=np.int64, count=len(pairs))
    codes.setflags(write=False)
    return codes, len(pairs)


def census_income_dataset(
    n: int = 602_325, seed: int = 0, data_dir: str | Path | None = None
) -> HistogramDataset:
    """Census-Income job code (d = 915), n users resampled with replacement (module docstring)."""
    folder = Path(data_dir or default_data_dir()) / "census-income-kdd"
    codes, rows = _census_job_codes(str(folder))
    _check_nd("census-income", n, 915)
    idx = experiment_rng(seed, "seed002", "census-income", n).integers(0, rows, size=int(n))
    return HistogramDataset(
        "census-income",
        codes[idx],
        915,
        f"UCI Census-Income (KDD) industry x occupation code, {rows} rows "
        f"resampled to n={n} (seed {seed})",
    )


@lru_cache(maxsize=2)
def _kosarak_items(path: str, seed: int) -> np.ndarray:
    with gzip.open(path, "rt") as fh:
        txs = [line.split() for line in fh if line.strip()]
    rng = experiment_rng(seed, "seed002", "kosarak", "pick")
    picks = rng.random(len(txs))
    out = np.fromiter(
        (int(t[int(u * len(t))]) - 1 for t, u in zip(txs, picks, strict=True)),
        dtype=np.int64,
        count=len(txs),
    )
    out.setflags(write=False)
    return out


def kosarak_dataset(
    n: int | None = None, seed: int = 0, data_dir: str | Path | None = None
) -> HistogramDataset:
    """One uniformly chosen item per Kosarak-head transaction (d = 17,034)."""
    path = Path(data_dir or default_data_dir()) / "fimi" / "kosarak-head36682.dat.gz"
    if not path.is_file():
        raise FileNotFoundError(f"kosarak: {path} not found (set SDP_DATASETS or pass data_dir)")
    items = _kosarak_items(str(path), seed)
    d = PAPER_SIZES["kosarak"][1]
    if items.max() >= d:
        raise ValueError(f"kosarak: item id {items.max() + 1} exceeds the expected d={d}")
    if n is None or n == items.size:
        values, how = items, "all transactions"
    else:
        _check_nd("kosarak", n, d)
        idx = experiment_rng(seed, "seed002", "kosarak", n).integers(0, items.size, size=int(n))
        values, how = items[idx], f"resampled to n={n}"
    return HistogramDataset(
        "kosarak",
        np.asarray(values),
        d,
        f"FIMI kosarak head, one random item per transaction, {how} (seed {seed})",
    )


def load(
    name: str, n: int | None = None, seed: int = 0, data_dir: str | Path | None = None
) -> HistogramDataset:
    """Dataset ``name`` of :data:`DATASETS` with n users (default the paper's / native size)."""
    if name not in DATASETS:
        raise ValueError(f"unknown seed-002 dataset {name!r}; known: {', '.join(DATASETS)}")
    if name == "kosarak":
        return kosarak_dataset(n, seed, data_dir)
    n0, d = PAPER_SIZES[name]
    n = n0 if n is None else int(n)
    if name == "zipf":
        return zipf_dataset(n, d, seed=seed)
    if name == "normal":
        return normal_dataset(n, d, seed)
    if name == "census-income":
        return census_income_dataset(n, seed, data_dir)
    return zipf_dataset(n, d, KOSARAK_ZIPF_EXPONENT, seed, name="zipf-kosarak")
