"""The registry of HP-SDP's shuffle-model comparison methods (``--param method=NAME``).

Kept apart from :mod:`protocols.hp_sdp.baselines` and :mod:`protocols.hp_sdp.murs` because it
names both (MURS uses the baselines' blanket mass), so neither has to import the other's user.
"""

from __future__ import annotations

from collections.abc import Callable

from protocols.base import ShuffleProtocol
from protocols.hp_sdp.baselines import AUEProtocol, MixDUMPProtocol, PureDUMPProtocol, SHProtocol
from protocols.hp_sdp.murs import MURSProtocol


def _murs(d: int, n: int, eps_c: float, delta: float, accounting: str = "paper") -> ShuffleProtocol:
    return MURSProtocol(d, n, eps_c, delta, accounting)


SHUFFLE_BASELINES: dict[str, Callable[..., ShuffleProtocol]] = {
    "sh": SHProtocol,
    "aue": AUEProtocol,
    "murs": _murs,
    "pure-dump": PureDUMPProtocol,
    "mix-dump": MixDUMPProtocol,
}
