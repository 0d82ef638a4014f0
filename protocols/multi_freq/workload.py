"""``sdp run prhr | pucm``: the histogram workload (discretized normal over [d]) with the
multi-message protocols of :mod:`protocols.multi_freq`.

Parameters (declared in :data:`PARAMS`) as the histogram workloads (``users``, ``domain``,
``epsilon``, ``delta``, ``data_seed``), plus ``rho`` (prhr: paper | exact | an integer), ``tau`` (prhr: default
ceil(log2 users)), ``noise_rate`` (pucm's gamma: paper | exact | a probability), ``buckets`` (pucm: default
2 users) and ``hash_seed`` (pucm's public hash table, default 0).
"""

from __future__ import annotations

from typing import Any

from protocols.histograms.workload import DATA_DEFAULTS, histogram_workload
from protocols.multi_freq.prhr import PRHR
from protocols.multi_freq.pucm import PUCM
from protocols.params import Values, declare
from protocols.workloads import Workload, register_family

PARAMS = {
    "prhr": declare(**DATA_DEFAULTS, rho="paper", tau=None),
    "pucm": declare(**DATA_DEFAULTS, noise_rate="paper", buckets=None, hash_seed=0),
}


def build_multi_freq(name: str, d: int, n: int, p: Values) -> Any:
    """PRHR or PUCM for n users over [d] from the run parameters."""
    if name == "prhr":
        return PRHR(d, n, p.epsilon, p.delta, rho=p.rho, tau=p.tau)
    if name == "pucm":
        return PUCM(
            d,
            n,
            p.epsilon,
            p.delta,
            gamma=p.noise_rate,
            buckets=p.buckets,
            hash_seed=p.hash_seed,
        )
    raise ValueError(f"unknown multi-message frequency protocol {name!r}")


def multi_freq_workload(name: str, p: Values) -> Workload:
    """Workload of ``prhr`` or ``pucm`` (module docstring)."""
    return histogram_workload(name, p, build=build_multi_freq)


register_family(PARAMS, multi_freq_workload)
