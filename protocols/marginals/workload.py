"""``sdp run calm-psrr-ss | calm-srr-ms | calm-arr-ss``: Calm marginals through the shuffle.

The analyzer publishes Calm's consistent w-way marginals (:class:`protocols.marginals.calm_shuffle.CalmShuffle`)
and, after publication, writes ``synthetic.csv`` (records generated from the published marginals,
:mod:`protocols.marginals.synthetic_data`) next to ``result.json`` through ``Workload.artifacts``.

Parameters (strings from the command line are converted):

* ``dataset``: ``census-income`` (default, 13 attributes), ``kosarak``, ``kosarak-synthetic``,
  ``adult`` or ``census-income-learning`` (the 6-attribute SGD subset, its 80 % training split;
  the report then adds the three SGD models trained on the synthetic data and the non-private
  reference, tested on the real 20 %); ``data_dir``, ``data_seed`` as for the seed-000 workloads;
* ``users``: a random subset of that many records (seed ``data_seed``), e.g. for mix-net runs;
* ``epsilon`` (eps_c, default 1.0), ``delta`` (default min(1e-6, 0.01/n), must lie below 1/n),
  ``accounting`` (``tight``, default, or ``paper``), ``policy``, ``estimator``, ``tight_bound``,
  ``min_users`` (default n), ``max_epsilon`` (default eps_c);
* ``k``: the query width the (w, m) choice targets (default 3); ``w_max`` (4), ``max_cells``
  (4096), ``r0`` (2e-5) for the choice;
* ``synthetic``: ``auto`` (default), ``joint``, ``sequential`` or ``none``; ``synthetic_n``
  (default n) and ``synthetic_seed`` (default 0).

``report(estimate)`` gives the mean k-way marginal SSE over all C(d, k) queries and the SSE of
the published marginals against the truth.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from protocols.datasets import categorical as datasets
from protocols.marginals.calm import answer_marginal, kway_queries, marginal_table, true_marginals
from protocols.marginals.calm_shuffle import CalmShuffle, published_tables
from protocols.marginals.synthetic_data import METHODS, synthesize, write_csv
from protocols.params import Values, declare
from protocols.privacy.statements import max_epsilon_param, min_users_param, run_delta
from protocols.rng import experiment_rng
from protocols.workloads import Workload, register_family

LEARNING = "census-income-learning"


PARAMS = declare(
    accounting="tight",
    tight_bound="vr",
    policy="strict",
    estimator="paper",
    dataset="census-income",
    data_dir=None,
    k=3,
    max_cells=None,
    w_max=None,
    r0=None,
    synthetic="auto",
    synthetic_n=None,
    synthetic_seed=0,
    bound=None,
)


def _dataset(p: Values) -> tuple[datasets.CategoricalDataset, Any]:
    """(dataset whose records the users hold, learning split or None)."""
    name, data_dir, seed = p.dataset, p.data_dir, p.data_seed
    if name == LEARNING:
        from protocols.marginals.sgd_models import load_census_learning

        learn = load_census_learning(data_dir, seed=seed)
        ds = learn.dataset
        return datasets.CategoricalDataset(
            ds.name, learn.train, ds.domain_sizes, ds.attributes, ds.source + " (80 % split)"
        ), learn
    if name == "census-income":
        return datasets.load_census_income(data_dir, seed=seed), None
    if name == "kosarak-synthetic":
        return datasets.load_kosarak_synthetic(data_dir, seed=seed), None
    return datasets.load_dataset(name, data_dir), None


def build_calm_workload(mechanism: str, p: Values) -> Workload:
    """Workload for Calm over ``mechanism`` (module docstring for params)."""
    ds, learn = _dataset(p)
    if p.users is not None and p.users < ds.n:
        users = p.users
        if users < 2:
            raise ValueError(f"calm-{mechanism}: users must be >= 2, got {users}")
        pick = np.sort(np.random.default_rng(p.data_seed).choice(ds.n, users, replace=False))
        ds = datasets.CategoricalDataset(
            ds.name,
            ds.records[pick],
            ds.domain_sizes,
            ds.attributes,
            ds.source + f", {users} users",
        )
    delta = run_delta(p.raw, ds.n, f"calm-{mechanism}")
    eps_c = p.epsilon
    # the (w, m) choice's constants: CalmShuffle's own defaults unless given
    given = {"w_max": p.w_max, "max_cells": p.max_cells, "r0": p.r0}
    choose = {key: v for key, v in given.items() if v is not None}
    protocol = CalmShuffle(
        ds.domain_sizes,
        ds.n,
        eps_c,
        delta,
        mechanism,
        k=p.k,
        attributes=ds.attributes,
        accounting=p.accounting,
        policy=p.policy,
        estimator=p.estimator,
        tight_bound=p.tight_bound,
        min_users=min_users_param(p.raw, ds.n, f"calm-{mechanism}"),
        max_epsilon=max_epsilon_param(p.raw, eps_c, f"calm-{mechanism}"),
        **choose,
    )
    if not protocol.feasible:
        raise ValueError(
            f"{protocol.name}: no feasible local epsilon on {ds.name} at eps_c={protocol.eps_c}; "
            "raise epsilon, or use accounting=tight or policy=fallback"
        )
    method = p.synthetic
    if method not in METHODS + ("none",):
        raise ValueError(
            f"{protocol.name}: synthetic must be one of {METHODS + ('none',)}, got {method!r}"
        )
    synth_n = ds.n if p.synthetic_n is None else p.synthetic_n
    synth_seed = p.synthetic_seed
    k = protocol.k
    queries = kway_queries(ds.d, k)

    @lru_cache(maxsize=1)
    def truth_k() -> dict[tuple[int, ...], np.ndarray]:
        return true_marginals(ds.records, ds.domain_sizes, queries)

    def synthetic(estimate: dict[str, Any]) -> np.ndarray:
        tables, sets, ks = published_tables(estimate)
        rng = experiment_rng(synth_seed, "calm-synthetic")
        return synthesize(tables, sets, ks, synth_n, rng, "auto" if method == "none" else method)

    def truth_fn() -> dict[str, Any]:
        return {
            "dataset": ds.name,
            "n": ds.n,
            "marginal_sets": [list(s) for s in protocol.sets],
            "marginals": [
                marginal_table(ds.records, ds.domain_sizes, s).ravel().tolist()
                for s in protocol.sets
            ],
        }

    def report(estimate: dict[str, Any]) -> dict[str, Any]:
        tables, sets, ks = published_tables(estimate)
        truth = truth_k()
        errs = [
            float(np.sum((answer_marginal(tables, sets, q, ks) - t) ** 2)) for q, t in truth.items()
        ]
        pub = [
            float(np.sum((t - marginal_table(ds.records, ks, s)) ** 2))
            for t, s in zip(tables, sets, strict=True)
        ]
        out: dict[str, Any] = {
            "dataset": ds.name,
            "w": estimate["w"],
            "m": estimate["m"],
            f"{k}way_sse_mean": float(np.mean(errs)),
            f"{k}way_queries": len(errs),
            "published_sse_mean": float(np.mean(pub)),
            "eps_l": protocol.inner.eps_local,
        }
        if learn is not None and method != "none":
            from protocols.marginals.sgd_models import evaluate_models, income_threshold

            thr = income_threshold(learn.train)
            fs = learn.feature_sizes
            syn = evaluate_models(
                synthetic(estimate), learn.test, fs, thr, experiment_rng(synth_seed, "sgd")
            )
            ref = evaluate_models(
                learn.train, learn.test, fs, thr, experiment_rng(synth_seed, "sgd")
            )
            out["sgd_synthetic"] = syn
            out["sgd_non_private"] = ref
            out["table"] = {
                "title": f"{protocol.name}: SGD on synthetic vs real training data ({ds.name})",
                "columns": ["model", "metric", "synthetic", "non-private"],
                "rows": [
                    ["linear regression", "MSE (bins)", syn["linear_mse"], ref["linear_mse"]],
                    [
                        "logistic regression",
                        "misclassification",
                        syn["logistic_misclassification"],
                        ref["logistic_misclassification"],
                    ],
                    [
                        "linear SVM",
                        "misclassification",
                        syn["svm_misclassification"],
                        ref["svm_misclassification"],
                    ],
                ],
            }
        return out

    def artifacts(estimate: dict[str, Any], run_dir: Path) -> list[str]:
        if method == "none":
            return []
        path = write_csv(Path(run_dir) / "synthetic.csv", synthetic(estimate), ds.attributes)
        return [path.name]

    return Workload(protocol, ds.records, truth=truth_fn, report=report, artifacts=artifacts)


# Calm over each seed-000 mechanism (``sdp protocols``: protocols.workloads.SUMMARIES).
register_family(
    {f"calm-{m}": PARAMS for m in ("psrr-ss", "srr-ms", "arr-ss")},
    lambda name, p: build_calm_workload(name.removeprefix("calm-"), p),
)
