"""``sdp run srr-ms | arr-ss | psrr-ss | sue-ms | oue-ldp``: seed-000 1-way marginal workloads.

Parameters (all optional; strings from the command line are converted):

* ``dataset``: ``adult`` (default, the bundled copy), ``census-income``, ``kosarak``,
  ``kosarak-synthetic`` (see :mod:`protocols.datasets.categorical`); ``data_dir`` for the raw files;
* ``epsilon``: the central target eps_c (default 1.0); ``delta``: default the project's
  min(1e-6, 0.01/n) (:func:`protocols.privacy.statements.default_delta`; the paper's 1/n would allow
  publishing a record, and an explicit delta must lie below 1/n); ``min_users`` (default n): the
  count each group is calibrated at; ``max_epsilon`` (default eps_c): the gate's cap;
* ``accounting``: ``tight`` (the accountant, default) or ``paper`` (Calculate, the closed form, valid only inside Balle et al.'s theorem; with the default delta it is infeasible on Adult for ARR-SS);
  ``tight_bound``: ``vr`` (variation ratio with the mechanism's parameters, default) or ``fmt21``;
  the launcher's ``bound`` maps onto them (paper/balle -> paper; tight/vr/fmt21 -> tight);
* ``users``: run on a random subset of this many records (seeded by ``data_seed``);
* ``policy``: ``strict`` (default), ``paper_lenient`` or ``fallback``;
* ``estimator``: ``paper`` (default) or ``observed`` where the protocol has it;
* ``data_seed``: seed of the sampled datasets (census-income, kosarak-synthetic; default 0);
  ``seed`` is left to the launcher (client randomness).

``truth()`` gives the true marginals per attribute; ``report(estimate)`` gives per-attribute SSE,
the total over the estimated attributes and the exact expected SSE (sum of the variances).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from protocols.datasets import categorical as datasets
from protocols.datasets.schema import schema_digest
from protocols.datasets.source import categorical_records, declared_users, records_for, schema_of
from protocols.multidim.arr_ss import ARRSS
from protocols.multidim.baselines import SUEMS, OUESampling
from protocols.multidim.common import MultidimProtocol, sse
from protocols.multidim.psrr_ss import PSRRSS
from protocols.multidim.srr_ms import SRRMS
from protocols.params import Values, declare
from protocols.privacy.statements import max_epsilon_param, min_users_param, run_delta
from protocols.workloads import Workload, register_family

# Every seed-000 protocol takes these (``domain`` only to refuse it with the reason).
PARAMS = declare(
    accounting=None,
    bound=None,
    tight_bound=None,
    policy="strict",
    estimator="paper",
    dataset="adult",
    data_dir=None,
    domain=None,
    schema=None,
    data=None,
)


def _dataset(
    p: Values, who: str = ""
) -> tuple[datasets.CategoricalDataset, int, dict[str, Any] | None]:
    """(the records this party holds, the public number of users n, its data report)."""
    schema = schema_of(p.raw, "categorical", who)
    if schema is not None:  # the user's own data: every parameter from the schema
        own = records_for(p.raw, schema)
        ds = datasets.CategoricalDataset(
            schema.name or "your data",
            categorical_records(own, schema),
            schema.domain_sizes,
            schema.attribute_names,
            f"bring-your-own data under schema {schema_digest(schema)[:12]}",
        )
        report = None if own.report is None else own.report.public()
        return ds, declared_users(p.raw, who), report
    ds = _bundled(p)
    return ds, ds.n, None


def _bundled(p: Values) -> datasets.CategoricalDataset:
    name, data_dir, seed = p.dataset, p.data_dir, p.data_seed
    if name == "census-income":
        ds = datasets.load_census_income(data_dir, seed=seed)
    elif name == "kosarak-synthetic":
        ds = datasets.load_kosarak_synthetic(data_dir, seed=seed)
    else:
        ds = datasets.load_dataset(name, data_dir)
    if p.users is None:
        return ds
    n = p.users
    if not 2 <= n <= ds.n:
        raise ValueError(f"users must lie in [2, {ds.n}] for dataset {ds.name}, got {n}")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(7,)))
    pick = np.sort(rng.choice(ds.n, size=n, replace=False))
    return replace(ds, records=ds.records[pick], source=f"{ds.source}; {n} users sampled")


def _accounting(p: Values) -> tuple[str, str]:
    """(accounting, tight_bound) from ``accounting``/``tight_bound`` or the launcher's ``bound``."""
    bound, accounting, tight_bound = p.bound, p.accounting, p.tight_bound
    if bound is not None:
        b = str(bound)
        known = ("paper", "balle", "tight", "vr", "fmt21", "exact", "decomposition")
        if b not in known:
            raise ValueError(f"bound must be {'|'.join(known)} for seed-000 protocols, got {b!r}")
        accounting = accounting or ("paper" if b in ("paper", "balle") else "tight")
        tight_bound = tight_bound or (b if b in ("vr", "fmt21", "exact", "decomposition") else None)
    return str(accounting or "tight"), str(tight_bound or "vr")


def expected_sse(protocol: MultidimProtocol, truth: list[np.ndarray]) -> float | None:
    """Sum of the exact per-value variances of the selected estimator (None if not known)."""
    var = getattr(protocol, "variance", None)
    if var is None:
        return None
    parts = var(truth, protocol.estimator)
    return float(sum(v.sum() for v in parts if v is not None))


def build_workload(cls: type[MultidimProtocol], p: Values) -> Workload:
    """Workload for one multidimensional protocol class (module docstring for params)."""
    if p.domain is not None:
        raise ValueError(
            "domain does not apply to seed-000 protocols: the dataset fixes the domains"
        )
    ds, n, data_report = _dataset(p, cls.name)
    delta = run_delta(p.raw, n, cls.name)
    accounting, tight_bound = _accounting(p)
    eps_c = p.epsilon
    protocol = cls(
        ds.domain_sizes,
        n,
        eps_c,
        delta,
        accounting=accounting,
        policy=p.policy,
        estimator=p.estimator,
        attributes=ds.attributes,
        tight_bound=tight_bound,
        min_users=min_users_param(p.raw, n, cls.name),
        max_epsilon=max_epsilon_param(p.raw, eps_c, cls.name),
    )
    if not getattr(protocol, "feasible", True):
        raise ValueError(
            f"{cls.name}: no feasible local epsilon on {ds.name} at eps_c={protocol.eps_c} "
            f"(policy {protocol.policy}, accounting {protocol.accounting}); raise epsilon, "
            "or use policy=fallback or accounting=tight"
        )

    def truth_fn() -> dict[str, Any]:
        truth = ds.marginals()
        return {
            "dataset": ds.name,
            "n": ds.n,
            "marginals": {a: t.tolist() for a, t in zip(ds.attributes, truth, strict=True)},
        }

    def report(estimate: dict[str, Any]) -> dict[str, Any]:
        if ds.n == 0:
            return {"note": "no records here to compare with (bring-your-own data)"}
        truth = ds.marginals()
        per, total = sse(estimate["marginals"], truth)
        rows: list[list[Any]] = []
        for a, est, f, e in zip(ds.attributes, estimate["marginals"], truth, per, strict=True):
            for v in range(len(f)):
                rows.append(
                    [
                        a if v == 0 else "",
                        v,
                        float(f[v]),
                        "-" if est is None else float(est[v]),
                        ("-" if e is None else f"{e:.3e}") if v == 0 else "",
                    ]
                )
        return {
            "table": {
                "title": f"{protocol.name} on {ds.name}: estimated vs true 1-way marginals",
                "columns": ["attribute", "value", "true", "estimate", "attribute SSE"],
                "rows": rows,
            },
            "dataset": ds.name,
            "sse_per_attribute": dict(zip(ds.attributes, per, strict=True)),
            "sse_total": total,
            "expected_sse": expected_sse(protocol, truth),
            "attributes_estimated": sum(p is not None for p in per),
        }

    return Workload(protocol, ds.records, truth=truth_fn, report=report, data_report=data_report)


# The seed-000 protocols (``sdp protocols`` describes each: protocols.workloads.SUMMARIES).
PROTOCOLS: dict[str, type[MultidimProtocol]] = {
    "srr-ms": SRRMS,
    "arr-ss": ARRSS,
    "psrr-ss": PSRRSS,
    "sue-ms": SUEMS,
    "oue-ldp": OUESampling,
}
register_family(
    dict.fromkeys(PROTOCOLS, PARAMS), lambda name, p: build_workload(PROTOCOLS[name], p)
)
