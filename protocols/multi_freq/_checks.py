"""What PRHR and PUCM share: parameter checks (one-line ValueErrors naming the protocol), the
certified blanket guarantee and the privacy statement around it."""

from __future__ import annotations

import math
from typing import Any

from protocols.catalogue.common import Guarantee
from protocols.privacy.record import PrivacyStatement


def check_setting(name: str, d: int, n: int, eps: float, delta: float) -> None:
    """d >= 2 and n >= 2 integers, eps > 0 finite, delta in (0, 1)."""
    if int(d) != d or d < 2 or int(n) != n or n < 2:
        raise ValueError(f"{name}: need an integer domain size d >= 2 and n >= 2, got d={d}, n={n}")
    if not (eps > 0 and math.isfinite(eps)) or not 0 < delta < 1:
        raise ValueError(f"{name}: need eps > 0 and delta in (0, 1), got {eps}, {delta}")


def certified(eps: float | None, delta: float, users: int, noise: str, theorem: str) -> Guarantee:
    """The blanket accountant's answer as a guarantee; no answer is a one-line error."""
    if eps is None:
        raise ValueError(f"the {noise} of {users} users certifies no epsilon")
    return Guarantee(eps, delta, theorem)


def blanket_privacy(proto: Any, bound: str, **params: Any) -> dict[str, Any]:
    """The privacy statement of a blanket protocol at its planned users (``proto.n``)."""
    return PrivacyStatement(
        certified_epsilon=proto.guarantee(proto.n).eps,
        target_epsilon=proto.eps_c,
        delta=proto.delta,
        local_epsilon=None,
        bound=bound,
        mechanism=proto.mechanism(),
        extra=params,
    ).wire()
