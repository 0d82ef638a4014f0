"""``sdp run gfim`` / ``sdp run ldpminer``: top-k frequent items on set-valued data (seed 003).

Parameters (``--param KEY=VALUE`` unless a launcher option exists):

* ``dataset``: ``laplace-50k`` (default; generated, needs no files), ``laplace-500k``,
  ``normal-50k``, ``normal-500k``, ``census-income``, ``kosarak``, ``t10i4d100k``
  (:mod:`protocols.gfim.setvalued_data`); ``data_dir`` for the raw files; ``users`` and ``data_seed``
  resize / reseed the synthetic sets, or subsample the real ones;
* ``k`` (default 10), ``k_max`` (default 2k), ``ell``: the padding length, a public parameter:
  the run's ``ell``, else the one the dataset's public schema fixes (50 for the synthetic sets,
  the generator's set size; 41 for census-income, whose rows all hold 41 items). Kosarak and
  T10I4D100K have none: give ``ell``. The thesis' 90th percentile of the users' set sizes is
  computed from the private data and uncharged: it is used by the seed-003 reproduction only,
  listed there as a public parameter derived from the data, never by ``sdp run``;
* ``method``: ``gfim`` (default for ``sdp run gfim``), ``ldpminer``, ``one-phase``;
  ``combination``: ``thesis`` (default), ``ivw`` (variance-weighted), ``phase2``;
* ``shuffle``: ``true`` (default) runs the shuffle model, ``false`` pure local DP (an explicit
  choice: ``epsilon`` is then the local budget and nothing is amplified);
* ``epsilon`` (default 1.0): with ``shuffle=true`` (default) the central target eps_c
  (local epsilon from the accountant for the per-round user count floor(min_users/2) for GFIM,
  min_users for LDPMiner; ``bound`` = ``vr`` default or ``fmt21``; ``delta`` default
  min(1e-6, 0.01/n); ``local_epsilon`` overrides it and the statement is then its own, the target
  shown as missed; ``min_users`` default n; ``max_epsilon`` default eps_c);
* ``seed``: the launcher's client seed.

``report()`` lists the estimated top-k items with their estimated and true frequencies next to
the true top-k, and gives precision, relative error (median over the true top-k) and NCR.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.datasets.schema import schema_digest
from protocols.datasets.source import declared_users, records_for, schema_of
from protocols.gfim.ldpminer import LDPMiner, OnePhase
from protocols.gfim.protocol import GFIM, TwoPhaseMiner, topk_metrics, true_top
from protocols.gfim.setvalued_data import SET_DATASETS, SetData, load_set_dataset
from protocols.gfim.shuffle import gfim_shuffle, ldpminer_shuffle
from protocols.params import Values, declare
from protocols.privacy.statements import max_epsilon_param, min_users_param, run_delta
from protocols.workloads import Workload, register

METHODS = ("gfim", "ldpminer", "one-phase")


_DEFAULTS: dict[str, Any] = {
    "dataset": "laplace-50k",
    "data_dir": None,
    "k": 10,
    "k_max": None,
    "ell": None,
    "shuffle": True,  # pinned: a run's record names the model that ran
    "local_epsilon": None,
    "combination": "thesis",
    "bound": "vr",
    "schema": None,
    "data": None,
}
PARAMS = {
    "gfim": declare(**_DEFAULTS, method="gfim", pin=("shuffle",)).named("gfim"),
    "ldpminer": declare(**_DEFAULTS, pin=("shuffle",)).named("ldpminer"),
}


def dataset_of(p: Values) -> tuple[SetData, int, dict[str, Any] | None]:
    """(the set-valued records this party holds, the public number of users, its data report):
    from a run's own data under a public set-valued schema (``ell`` defaults to the schema's
    ``max_items``), or the bundled ``dataset``/``users``/``data_seed``/``data_dir``."""
    schema = schema_of(p.raw, "setvalued", "gfim")
    if schema is not None:
        own = records_for(p.raw, schema)
        records = np.full((0, 1), -1, dtype=np.int32)
        if own.data is not None and own.data.n:
            # storage layout only (local, never released): the party's largest set
            records = own.data.padded(max(1, int(own.data.sizes().max())))
        data = SetData(
            schema.name or "your data",
            np.asarray(records, dtype=np.int32),
            int(schema.d),
            tuple(schema.universe.labels()),
            f"bring-your-own data under schema {schema_digest(schema)[:12]}",
            public_ell=None if schema.max_items is None else int(schema.max_items),
        )
        report = None if own.report is None else own.report.public()
        return data, declared_users(p.raw, "gfim"), report
    return _bundled(p), 0, None


def _bundled(p: Values) -> SetData:
    if p.dataset not in SET_DATASETS:
        raise ValueError(f"gfim: unknown dataset {p.dataset!r}; known: {', '.join(SET_DATASETS)}")
    return load_set_dataset(p.dataset, p.data_dir, seed=p.data_seed, n=p.users)


def build_protocol(
    params: Values | dict[str, Any], data: SetData, method: str, n: int | None = None
) -> Any:
    """The protocol object for ``method`` with the privacy mode of ``params`` (a run's
    parameters, read as gfim's declaration reads them); ``n`` is the public number of users
    (default: ``data``'s, for bundled data)."""
    p = params if isinstance(params, Values) else PARAMS["gfim"].read(params)
    n = data.n if n is None else int(n)
    if method not in METHODS:
        raise ValueError(f"gfim: unknown method {method!r}; expected one of {METHODS}")
    k, k_max = p.k, p.k_max
    if not 1 <= k <= data.d // 2:
        raise ValueError(f"gfim: k must lie in [1, {data.d // 2}] for {data.name}, got {k}")
    if p.ell is not None:
        ell = p.ell
    elif data.public_ell is not None:
        ell = data.public_ell
    else:
        raise ValueError(
            f"gfim: {data.name} has no public padding length: give one with --param ell=N (the "
            "number of items each user pads or samples its set to; a public choice, e.g. a "
            "typical basket size: the thesis' 90th percentile of the users' set sizes would be "
            "read from private data)"
        )
    if not 1 <= ell <= data.d:
        raise ValueError(
            f"gfim: ell must lie in [1, {data.d}] (the {data.d} items of {data.name}'s universe: "
            f"a set holds at most that many), got {ell}"
        )
    eps, comb, eps_l = p.epsilon, p.combination, p.local_epsilon
    if not p.shuffle:
        if eps_l is not None:
            eps = eps_l
        if method == "gfim":
            return GFIM(data.d, k, ell, eps, k_max=k_max, combination=comb, n=n)
        if method == "ldpminer":
            return LDPMiner(data.d, k, ell, eps, k_max=k_max, combination=comb)
        return OnePhase(data.d, k, ell, eps)
    bound = p.bound
    if bound not in ("vr", "fmt21"):
        raise ValueError(f"gfim: shuffle accounting supports bound vr or fmt21, got {bound!r}")
    delta = run_delta(p.raw, n, "gfim")
    shuffled = {"gfim": gfim_shuffle, "ldpminer": ldpminer_shuffle}.get(method)
    if shuffled is None:
        raise ValueError("gfim: the one-phase baseline has no shuffle variant here")
    return shuffled(
        data.d,
        k,
        ell,
        eps,
        n,
        delta,
        bound=bound,
        k_max=k_max,
        combination=comb,
        eps_local=eps_l,
        min_users=min_users_param(p.raw, n, "gfim"),
        max_epsilon=max_epsilon_param(p.raw, eps, "gfim"),
    )


def report_table(
    data: SetData, true_f: np.ndarray, estimate: dict[str, Any], k: int
) -> dict[str, Any]:
    """Estimated top-k next to the true top-k, with precision, RE and NCR."""
    est_top = np.asarray(estimate["top_k"], dtype=np.int64)
    f_hat = np.asarray(estimate["frequencies"], dtype=np.float64)
    truth = true_top(true_f, k)
    truth_set = set(truth.tolist())
    rows = []
    for r in range(k):
        v, t = int(est_top[r]), int(truth[r])
        rows.append(
            [
                r + 1,
                data.labels[v],
                round(float(f_hat[v]), 4),
                round(float(true_f[v]), 4),
                "yes" if v in truth_set else "no",
                data.labels[t],
                round(float(true_f[t]), 4),
            ]
        )
    m = topk_metrics(est_top, f_hat, true_f, k)
    return {
        "table": {
            "title": f"top-{k} of {data.name} (n={data.n}, d={data.d}): estimated vs true",
            "columns": [
                "rank",
                "estimated item",
                "f_hat",
                "true f",
                "in true top-k",
                "true item",
                "true f (true item)",
            ],
            "rows": rows,
        },
        "precision": m["precision"],
        "relative_error": m["re"],
        "ncr": m["ncr"],
        "true_top_k": truth.tolist(),
        "gap_rank_k_to_k+1": float(true_f[truth[-1]] - np.sort(true_f)[::-1][k])
        if k < data.d
        else None,
    }


def build_workload(p: Values, method: str) -> Workload:
    data, n, data_report = dataset_of(p)
    protocol = build_protocol(p, data, method, n or None)

    def truth() -> dict[str, Any]:
        true_f = data.frequencies()
        return {
            "dataset": data.name,
            "n": data.n,
            "d": data.d,
            "top_k": true_top(true_f, protocol.k).tolist(),
        }

    def report(estimate: dict[str, Any]) -> dict[str, Any]:
        if data.n == 0:
            return {"note": "no records here to compare with (bring-your-own data)"}
        true_f = data.frequencies()
        out = report_table(data, true_f, estimate, protocol.k)
        out.update(dataset=data.name, source=data.source, ell=protocol.ell, method=protocol.name)
        if isinstance(protocol, TwoPhaseMiner):
            var = protocol.variances(
                data.records,
                np.asarray(estimate["candidates"]),
                int(estimate["n1"]),
                int(estimate["n2"]),
            )
            top = np.asarray(estimate["top_k"])
            out["std_of_reported_frequencies"] = np.sqrt(var["combined"][top]).tolist()
            out["k_max"] = protocol.k_max
        return out

    return Workload(protocol, data.records, truth=truth, report=report, data_report=data_report)


@register("gfim", params=PARAMS["gfim"])
def gfim_workload(p: Values) -> Workload:
    """GFIM (or ``method=ldpminer|one-phase``) on a set-valued dataset (module docstring)."""
    return build_workload(p, p.method)


@register("ldpminer", params=PARAMS["ldpminer"])
def ldpminer_workload(p: Values) -> Workload:
    """LDPMiner-SH (eps/2 per round, all users in both rounds) on a set-valued dataset."""
    return build_workload(p, "ldpminer")
