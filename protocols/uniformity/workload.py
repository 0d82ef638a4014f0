"""``sdp run put | aut``: uniformity testing of data that is uniform or Paninski-far.

Parameters (declared in :data:`PARAMS`): ``users`` (default 20,000), ``domain`` (k, default 16),
``bins`` (default k), ``epsilon`` (the project default 1.0), ``delta`` (AUT, 1e-6), ``gamma`` (1), ``size`` (0.1), ``alpha`` (TV distance of
the data from uniform, default 0 = uniform data; > 0 draws from Paninski's alternative),
``data_seed`` (0). The report states whether the decision is correct.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.params import SURVEY_LEGACY, Values, declare
from protocols.rng import experiment_rng
from protocols.uniformity.sample_complexity import paninski
from protocols.uniformity.testers import AUT, PUT
from protocols.workloads import Workload, protocol_facts, register_family

_DEFAULTS = {
    **{"users": 20_000, "domain": 16, "bins": None, "gamma": 1.0, "size": 0.1, "alpha": 0.0},
    "legacy": SURVEY_LEGACY,
}
PARAMS = {"put": declare(**_DEFAULTS), "aut": declare(**_DEFAULTS, delta=1e-6)}


def uniformity_workload(name: str, p: Values) -> Workload:
    """Workload of tester ``name`` (module docstring)."""
    n, k, bins, eps, gamma, size, alpha = (
        p.users, p.domain, p.bins, p.epsilon, p.gamma, p.size, p.alpha
    )  # fmt: skip
    pi = np.full(k, 1 / k) if alpha == 0 else paninski(k, alpha)
    rng = experiment_rng(p.data_seed, "seed004", "uniformity")
    values = rng.choice(k, size=n, p=pi)
    if name == "put":
        protocol: Any = PUT(k, n, eps, bins=bins, gamma=gamma, size=size)
    else:
        protocol = AUT(k, n, eps, p.delta, bins=bins, gamma=gamma, size=size)

    def report(est: dict[str, Any]) -> dict[str, Any]:
        return {
            "data_alpha": alpha,
            "reject_uniform": est["reject_uniform"],
            "correct": bool(est["reject_uniform"]) == (alpha > 0),
            **protocol_facts(protocol),
        }

    return Workload(
        protocol, values.reshape(-1, 1), truth=lambda: {"alpha": alpha, "k": k}, report=report
    )


register_family(PARAMS, uniformity_workload)
