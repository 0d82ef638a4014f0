"""``sdp run put | aut``: uniformity testing of data that is uniform or Paninski-far.

Parameters: ``users`` (default 20,000), ``domain`` (k, default 16), ``bins`` (default k),
``epsilon`` (0.9), ``delta`` (AUT, 1e-6), ``gamma`` (1), ``size`` (0.1), ``alpha`` (TV distance of
the data from uniform, default 0 = uniform data; > 0 draws from Paninski's alternative),
``data_seed`` (0). The report states whether the decision is correct.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.rng import experiment_rng
from protocols.uniformity.sample_complexity import paninski
from protocols.uniformity.testers import AUT, PUT
from protocols.workloads import Workload, register


def uniformity_workload(name: str, params: dict[str, Any]) -> Workload:
    """Workload of tester ``name`` (module docstring)."""
    n = int(params.get("users", 20_000))
    k = int(params.get("domain", 16))
    bins = params.get("bins")
    bins = None if bins is None else int(bins)
    eps = float(params.get("epsilon", 0.9))
    gamma = float(params.get("gamma", 1.0))
    size = float(params.get("size", 0.1))
    alpha = float(params.get("alpha", 0.0))
    pi = np.full(k, 1 / k) if alpha == 0 else paninski(k, alpha)
    rng = experiment_rng(int(params.get("data_seed", 0)), "seed004", "uniformity")
    values = rng.choice(k, size=n, p=pi)
    if name == "put":
        protocol: Any = PUT(k, n, eps, bins=bins, gamma=gamma, size=size)
    else:
        protocol = AUT(
            k, n, eps, float(params.get("delta", 1e-6)), bins=bins, gamma=gamma, size=size
        )

    def report(est: dict[str, Any]) -> dict[str, Any]:
        return {
            "data_alpha": alpha,
            "reject_uniform": est["reject_uniform"],
            "correct": bool(est["reject_uniform"]) == (alpha > 0),
            "messages_per_user": protocol.messages_per_user(),
            "privacy": protocol.privacy(),
        }

    return Workload(
        protocol, values.reshape(-1, 1), truth=lambda: {"alpha": alpha, "k": k}, report=report
    )


for _name in ("put", "aut"):
    register(_name)(lambda params, _n=_name: uniformity_workload(_n, params))
