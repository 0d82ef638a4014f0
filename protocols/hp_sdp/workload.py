"""``sdp run hp-sdp``: HP-SDP histogram publication (and its comparison methods) on seed-002 data.

Parameters (strings from the command line are converted):

* ``dataset``: ``zipf`` (default), ``normal``, ``census-income``, ``kosarak``, ``zipf-kosarak``
  (:mod:`protocols.hp_sdp.data`); ``users``: number of users (default the dataset's paper size);
  ``data_seed``: seed of the data (default 0; ``seed`` stays the launcher's client seed);
  ``data_dir``: folder of the raw datasets;
* ``epsilon``: the central eps_c (the project default 1.0); ``delta`` (default min(1e-6, 0.01/n), must lie
  below 1/n); ``min_users`` (default n: HP-SDP/HP-SM are calibrated at it and re-account below
  it; the multi-message baselines are calibrated at n and refuse below it); ``max_epsilon``
  (default eps_c);
* ``accounting``: ``paper`` (Theorem 1 with the spec's optimal g, default) or ``tight``
  (variation-ratio bound, g chosen for it); ``g``: override the hash range;
* ``method``: ``hp-sdp`` (default), ``hp-sm`` (no POP) or a baseline of
  :mod:`protocols.hp_sdp.baselines` (``sh``, ``aue``, ``murs``, ``pure-dump``, ``mix-dump``).

``report(estimate)`` gives a table of the top bins (published vs true), the MSE (Eq. 6) of the
published histogram, the MSE before POP and the exact expected MSE before POP (mean variance).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.hp_sdp import data as hp_sdp_data
from protocols.hp_sdp.protocol import HPSDPProtocol, calibrate, mse
from protocols.params import HP_SDP_LEGACY, Values, declare
from protocols.privacy.statements import max_epsilon_param, min_users_param, run_delta
from protocols.workloads import Workload, register

TOP_BINS = 20


def build_protocol(
    method: str,
    d: int,
    n: int,
    eps_c: float,
    delta: float,
    accounting: str,
    g: int | None = None,
    min_users: int | None = None,
    max_epsilon: float | None = None,
) -> Any:
    """The shuffle protocol of ``method`` calibrated to (eps_c, delta) over ``min_users``
    (default n) users."""
    m = n if min_users is None else int(min_users)
    if method in ("hp-sdp", "hp-sm"):
        params = calibrate(eps_c, delta, m, g, accounting, d)
        post = "pop" if method == "hp-sdp" else "none"
        return HPSDPProtocol(d, params, post=post, max_epsilon=max_epsilon, n_users=n)
    from protocols.hp_sdp.methods import SHUFFLE_BASELINES

    if method not in SHUFFLE_BASELINES:
        known = ["hp-sdp", "hp-sm", *SHUFFLE_BASELINES]
        raise ValueError(f"hp-sdp workload: unknown method {method!r}; known: {', '.join(known)}")
    if m != n:
        raise ValueError(
            f"hp-sdp workload: method {method!r} is calibrated for all n users (its blanket of "
            "noise, dummies or fakes comes from the other users); min_users does not apply"
        )
    proto = SHUFFLE_BASELINES[method](d, n, eps_c, delta, accounting)
    proto.max_epsilon = eps_c if max_epsilon is None else float(max_epsilon)
    return proto


@register(
    "hp-sdp",
    params=declare(
        dataset="zipf",
        data_dir=None,
        accounting="paper",
        g=None,
        method="hp-sdp",
        legacy=HP_SDP_LEGACY,
    ),
)
def hp_sdp_workload(p: Values) -> Workload:
    """HP-SDP (or ``method``) over a seed-002 dataset; see the module docstring."""
    ds = hp_sdp_data.load(p.dataset, p.users, p.data_seed, p.data_dir)
    eps_c, accounting = p.epsilon, p.accounting
    delta = run_delta(p.raw, ds.n, "hp-sdp")
    protocol = build_protocol(
        p.method,
        ds.d,
        ds.n,
        eps_c,
        delta,
        accounting,
        p.g,
        min_users_param(p.raw, ds.n, "hp-sdp"),
        max_epsilon_param(p.raw, eps_c, "hp-sdp"),
    )
    truth = ds.frequencies()
    expected = float(np.mean(protocol.variance(truth)))
    top = np.argsort(-truth, kind="stable")[:TOP_BINS]

    def truth_fn() -> dict[str, Any]:
        return {"dataset": ds.name, "n": ds.n, "d": ds.d, "frequencies": truth.tolist()}

    def report(est: dict[str, Any]) -> dict[str, Any]:
        pub = np.asarray(est["frequencies"], dtype=np.float64)
        raw = np.asarray(est.get("raw_frequencies", est["frequencies"]), dtype=np.float64)
        rows = [[int(v), float(pub[v]), float(truth[v]), float(pub[v] - truth[v])] for v in top]
        m_pub, m_raw = mse(pub, truth), mse(raw, truth)
        return {
            "table": {
                "title": f"{protocol.name} on {ds.name} (n={ds.n}, d={ds.d}, eps_c={eps_c}, "
                f"delta={delta}, {accounting}): top {len(top)} bins",
                "columns": ["value", "published", "true", "error"],
                "rows": rows,
            },
            "dataset": ds.name,
            "method": protocol.name,
            "mse": m_pub,
            "mse_before_pop": m_raw,
            "expected_mse_before_pop": expected,
            "mse_over_expected": m_raw / expected if expected > 0 else None,
            "pop_gain": m_raw / m_pub if m_pub > 0 else None,
            "privacy": protocol.privacy(),
        }

    return Workload(protocol, ds.values, truth=truth_fn, report=report)
