"""Which catalogue counting protocols are pure (delta = 0) in the shuffle model, exactly.

For each protocol at the experiment's (n, eps_c, delta): the face lower bound (valid at every n)
and the exact pure epsilon of the shuffled view at n0 users (a certificate for every n >= n0,
since the pure epsilon is non-increasing in n). A protocol whose face bound is infinite is not
pure at any n; one whose face bound equals its exact epsilon at n0 has that epsilon at every n.
"""

from __future__ import annotations

import math
from typing import Any

from protocols.counting.cnt_2m import Cnt2M
from protocols.counting.cnt_bn import CntBN
from protocols.counting.cnt_rr import CntRR
from protocols.pure_dp.exact import face_bound, pure_epsilon
from protocols.pure_dp.laws import counting_laws


def _num(x: float) -> float | None:
    return None if math.isinf(x) else float(x)


def pure_audit(n: int, eps_c: float, delta: float, n0: int = 8) -> dict[str, Any]:
    """Pure-epsilon audit of Cnt_RR, Cnt_BN and Cnt_2M (module docstring); None = infinite."""
    out: dict[str, Any] = {"n": n, "eps_c": eps_c, "delta": delta, "n0": n0}
    for name, proto in (
        ("cnt_rr", CntRR(n, eps_c, delta)),
        ("cnt_bn", CntBN(n, eps_c, delta)),
        ("cnt_2m", Cnt2M(n, eps_c, delta)),
    ):
        laws = counting_laws(proto)
        lower = face_bound(laws)
        upper = pure_epsilon(laws, n0).eps
        out[name] = {
            "pure_eps_lower_every_n": _num(lower),
            "pure_eps_upper_n_ge_n0": _num(upper),
            "exact_every_n": bool(math.isinf(lower) or math.isclose(lower, upper, rel_tol=1e-9)),
            "eps_local": getattr(proto, "eps_l", None),
        }
    return out


__all__ = ["pure_audit"]
