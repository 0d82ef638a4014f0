"""Parameter checks shared by PRHR and PUCM (one-line ValueErrors naming the protocol)."""

from __future__ import annotations

import math


def check_setting(name: str, d: int, n: int, eps: float, delta: float) -> None:
    """d >= 2 and n >= 2 integers, eps > 0 finite, delta in (0, 1)."""
    if int(d) != d or d < 2 or int(n) != n or n < 2:
        raise ValueError(f"{name}: need an integer domain size d >= 2 and n >= 2, got d={d}, n={n}")
    if not (eps > 0 and math.isfinite(eps)) or not 0 < delta < 1:
        raise ValueError(f"{name}: need eps > 0 and delta in (0, 1), got {eps}, {delta}")
