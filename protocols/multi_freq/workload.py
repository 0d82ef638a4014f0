"""``sdp run prhr | pucm``: the histogram workload (discretized normal over [d]) with the
multi-message protocols of :mod:`protocols.multi_freq`.

Parameters as the histogram workloads (``users``, ``domain``, ``epsilon``, ``delta``,
``data_seed``), plus ``rho`` (prhr: paper | exact | an integer), ``tau`` (prhr: default
ceil(log2 users)), ``noise_rate`` (pucm's gamma: paper | exact | a probability), ``buckets`` (pucm: default
2 users) and ``hash_seed`` (pucm's public hash table, default 0).
"""

from __future__ import annotations

from typing import Any

from protocols.histograms.workload import histogram_workload
from protocols.multi_freq.prhr import PRHR
from protocols.multi_freq.pucm import PUCM
from protocols.workloads import Workload, register


def _num_or_mode(x: Any) -> Any:
    """A run parameter that is a mode name or a number (``sdp run --param`` passes strings)."""
    if isinstance(x, str):
        try:
            return int(x)
        except ValueError:
            try:
                return float(x)
            except ValueError:
                return x
    return x


def build_multi_freq(name: str, d: int, n: int, params: dict[str, Any]) -> Any:
    """PRHR or PUCM for n users over [d] from the run parameters."""
    eps = float(params.get("epsilon", 0.9))
    delta = float(params.get("delta", 1e-6))
    if name == "prhr":
        tau = params.get("tau")
        rho = _num_or_mode(params.get("rho", "paper"))
        return PRHR(d, n, eps, delta, rho=rho, tau=None if tau is None else int(tau))
    if name == "pucm":
        b = params.get("buckets")
        return PUCM(
            d,
            n,
            eps,
            delta,
            gamma=_num_or_mode(params.get("noise_rate", "paper")),
            buckets=None if b is None else int(b),
            hash_seed=int(params.get("hash_seed", 0)),
        )
    raise ValueError(f"unknown multi-message frequency protocol {name!r}")


def multi_freq_workload(name: str, params: dict[str, Any]) -> Workload:
    """Workload of ``prhr`` or ``pucm`` (module docstring)."""
    return histogram_workload(name, params, build=build_multi_freq)


for _name in ("prhr", "pucm"):
    register(_name)(lambda params, _n=_name: multi_freq_workload(_n, params))
