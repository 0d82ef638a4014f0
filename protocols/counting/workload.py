"""``sdp run cnt_rr | cnt_2m | cnt_sgm | cnt_bn``: counting over synthetic Bernoulli(q) bits.

Parameters (declared in :data:`PARAMS`): ``users`` (default 10,000), ``epsilon`` (central, the
project default 1.0), ``delta`` (1e-6), ``q`` (0.5), ``data_seed`` (0); ``bound`` (cnt_rr:
theorem3 | theorem4 | vr), ``accounting`` (cnt_2m, cnt_bn: paper | exact), ``gamma`` (cnt_sgm,
cnt_bn: fraction of honest users, default 1), ``delta_split`` (cnt_sgm: Split-Mix statistical
delta, default 1e-12).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.catalogue.data import bernoulli_bits
from protocols.counting.cnt_2m import Cnt2M
from protocols.counting.cnt_bn import CntBN
from protocols.counting.cnt_rr import CntRR
from protocols.counting.cnt_sgm import CntSGM
from protocols.params import SURVEY_LEGACY, Values, declare
from protocols.workloads import Workload, protocol_facts, register_family, scalar_error

_COMMON = {"users": 10_000, "delta": 1e-6, "gamma": 1.0, "q": 0.5, "legacy": SURVEY_LEGACY}
PARAMS = {
    "cnt_rr": declare(**_COMMON, bound="theorem3"),
    "cnt_2m": declare(**_COMMON, accounting="paper"),
    "cnt_sgm": declare(**_COMMON, delta_split=1e-12),
    "cnt_bn": declare(**_COMMON, accounting="paper"),
}


def build_counting(name: str, n: int, p: Values) -> Any:
    """The counting protocol ``name`` for n users from workload parameters."""
    if name == "cnt_rr":
        return CntRR(n, p.epsilon, p.delta, bound=p.bound)
    if name == "cnt_2m":
        return Cnt2M(n, p.epsilon, p.delta, accounting=p.accounting)
    if name == "cnt_sgm":
        return CntSGM(n, p.epsilon, gamma=p.gamma, delta_split=p.delta_split)
    if name == "cnt_bn":
        return CntBN(n, p.epsilon, p.delta, gamma=p.gamma, accounting=p.accounting)
    raise ValueError(f"unknown counting protocol {name!r}")


def counting_workload(name: str, p: Values) -> Workload:
    """Workload of counting protocol ``name`` (module docstring)."""
    n, q = p.users, p.q
    if n < 3:
        raise ValueError(f"{name}: users must be >= 3, got {n}")
    bits = bernoulli_bits(n, q, p.data_seed)
    protocol = build_counting(name, n, p)
    true_count = int(bits.sum())

    def report(est: dict[str, Any]) -> dict[str, Any]:
        return {
            "true_count": true_count,
            **scalar_error(est["count"], true_count),
            **protocol_facts(protocol),
        }

    return Workload(
        protocol,
        bits.reshape(-1, 1).astype(np.int64),
        truth=lambda: {"count": true_count, "q": q, "n": n},
        report=report,
    )


register_family(PARAMS, counting_workload)
