"""``sdp run splitmix-sum``: private summation of values in [0, 1] through any shuffler.

Parameters: ``users`` (default 10,000), ``epsilon`` (1.0), ``delta`` (default the project's
min(1e-6, 0.01/n); must lie below 1/n), ``min_users`` (default n: the Polya noise shape 1/n_min
and the share count are calibrated for it; the single-message baseline's local epsilon too),
``max_epsilon`` (default epsilon),
``sigma`` / ``precision`` (override Split-Mix's defaults), ``variant`` (``splitmix``, default,
or ``single`` for the single-message k-RR baseline), ``dataset`` (``beta``, default: Beta(2, 5)
values fixed by ``data_seed``; ``adult``: (age/130)^2 of UCI Adult's ``adult.data`` rows, read
from ``data_dir`` / ``$SDP_DATASETS`` / ``../shared/datasets``; ``users`` then defaults to all
32,561 and must not exceed it).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np

from protocols.datasets.source import declared_users, records_for, schema_of
from protocols.params import Values, declare
from protocols.privacy.statements import max_epsilon_param, min_users_param, run_delta
from protocols.summation.split_mix import SingleMessageSum, SplitMixSum, splitmix_parameters
from protocols.workloads import Workload, register

ADULT_TRAIN_ROWS = 32_561
BETA_USERS = 10_000  # users of the generated Beta(2, 5) data when ``users`` is not given


def load_adult_ages(data_dir: str | Path | None = None) -> np.ndarray:
    """Ages of every row of UCI Adult's ``adult.data`` (32,561; age is never missing)."""
    from protocols.datasets.categorical import _need, default_data_dir

    path = _need(Path(data_dir or default_data_dir()) / "adult" / "adult.data.gz", "Adult")
    ages = []
    with gzip.open(path, "rt") as fh:
        for line in fh:
            parts = line.split(",")
            if len(parts) == 15:
                ages.append(int(parts[0]))
    a = np.asarray(ages, dtype=np.float64)
    if a.size != ADULT_TRAIN_ROWS:
        raise ValueError(f"{path}: expected {ADULT_TRAIN_ROWS} rows, read {a.size}")
    return a


def adult_age_values(data_dir: str | Path | None = None) -> np.ndarray:
    """The published anchor's encoding of Adult: x = (age / 130)^2 in [0, 1]."""
    return (load_adult_ages(data_dir) / 130.0) ** 2


def splitmix_mean_std(protocol: SplitMixSum, values: np.ndarray) -> float:
    """Exact standard deviation of Split-Mix's mean estimate on ``values`` (all n users
    present): randomized rounding (Bernoulli of each value's fractional part) plus the n users'
    Polya difference shares, each of variance 2 r a / (1 - a)^2 with shape r = 1 / n_min."""
    pr = protocol.params
    y = np.asarray(values, dtype=np.float64) * pr.precision
    frac = y - np.floor(y)
    a = pr.noise_ratio
    noise = pr.n * 2.0 * a / (pr.n_min * (1.0 - a) ** 2)
    var = (float(np.sum(frac * (1.0 - frac))) + noise) / (pr.precision * pr.n) ** 2
    return float(np.sqrt(var))


@register(
    "splitmix-sum",
    params=declare(
        dataset="beta", data_dir=None, precision=None, sigma=None, variant="splitmix",
        bound="vr", schema=None, data=None,
    ),
)  # fmt: skip
def splitmix_workload(p: Values) -> Workload:
    """Split-Mix (or single-message) summation workload; see the module docstring."""
    data = p.dataset
    schema = schema_of(p.raw, "numeric", "splitmix-sum")
    data_report = None
    if schema is not None:  # the user's own values, clipped to the schema's public range
        own = records_for(p.raw, schema)
        values = np.zeros(0) if own.data is None else np.asarray(own.data.values, dtype=np.float64)
        n = declared_users(p.raw, "splitmix-sum")
        data_report = None if own.report is None else own.report.public()
    elif data == "adult":
        values = adult_age_values(p.data_dir)
        n = values.size if p.users is None else p.users
        if not 3 <= n <= values.size:
            raise ValueError(f"splitmix-sum: users must lie in [3, {values.size}] for adult")
        values = values[:n]
    elif data == "beta":
        n = BETA_USERS if p.users is None else p.users
        if n < 3:
            raise ValueError(f"splitmix-sum: users must be >= 3, got {n}")
        rng = np.random.default_rng(np.random.SeedSequence(p.data_seed))
        values = rng.beta(2.0, 5.0, size=n)
    else:
        raise ValueError(f"splitmix-sum: dataset must be 'beta' or 'adult', got {data!r}")
    eps = p.epsilon
    delta = run_delta(p.raw, n, "splitmix-sum")
    min_users = min_users_param(p.raw, n, "splitmix-sum")
    if p.variant == "splitmix":
        protocol: SplitMixSum | SingleMessageSum = SplitMixSum(
            splitmix_parameters(
                n, eps, delta, sigma=p.sigma, precision=p.precision, min_users=min_users
            )
        )
    else:
        protocol = SingleMessageSum(n, eps, delta, bound=p.bound, min_users=min_users)
    protocol.max_epsilon = max_epsilon_param(p.raw, eps, "splitmix-sum")

    def report(est: dict[str, Any]) -> dict[str, Any]:
        if values.size == 0:
            return {"note": "no records here to compare with (bring-your-own data)"}
        true_mean = float(values.mean())
        out = {"true_mean": true_mean, "abs_error_mean": abs(float(est["mean"]) - true_mean)}
        if isinstance(protocol, SplitMixSum):
            out["expected_std_of_mean"] = splitmix_mean_std(protocol, values)
        return out

    return Workload(
        protocol,
        values,
        truth=lambda: {"mean": float(values.mean()), "sum": float(values.sum())},
        report=report,
        data_report=data_report,
    )
