"""How a protocol states its guarantee: the default delta, the calibration count, re-accounting.

Three run parameters shape every privacy statement (``docs/privacy.md``):

* ``delta``: default :func:`default_delta` = min(1e-6, 0.01/n), strictly below 1/n for every n
  (a delta of 1/n allows publishing one user's record). An explicit delta must also lie below
  1/n (:func:`check_delta`).
* ``min_users`` (default n, no dropout tolerance): the count a protocol is calibrated at. The
  target epsilon then holds for every run in which at least ``min_users`` well-formed reports
  (per group, proportionally, for grouped protocols) reach the shuffler.
* ``max_epsilon`` (default the target epsilon): the largest total epsilon the gate lets a run
  publish. Below the calibration count a protocol whose local epsilon is fixed re-accounts at the
  count received (:func:`shuffled_release`); the gate refuses when that exceeds ``max_epsilon``.

:func:`shuffled_release` is the common re-accounting path of the single-message protocols: at or
above the calibration count it returns the statement computed when the protocol was built (no
accountant call); below it, the accountant's variation-ratio bound for the mechanism actually
run, at the count received, or the local epsilon itself (pure LDP, delta 0) when the bound gives
no amplification there: an eps-LDP report is eps-DP whatever the crowd, so re-accounting never
fails, it only gets worse.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from protocols.privacy.ledger import PrivacyRefusal, Release

DELTA_CAP = 1e-6
DELTA_FRACTION_OF_ONE_OVER_N = 0.01
REACCOUNT_BOUND = "vr"


def default_delta(n: int) -> float:
    """The project-wide default delta for n users: min(1e-6, 0.01/n), strictly below 1/n."""
    if int(n) != n or n < 1:
        raise ValueError(f"default_delta: n must be a positive integer, got {n}")
    return min(DELTA_CAP, DELTA_FRACTION_OF_ONE_OVER_N / n)


def check_delta(delta: float, n: int, where: str) -> float:
    """``delta`` as a float, or ValueError unless 0 < delta < 1/n."""
    d = float(delta)
    if not (0 < d < 1.0 / n):
        raise ValueError(
            f"{where}: delta must lie in (0, 1/n) = (0, {1.0 / n:.3g}) for n = {n} "
            f"(a delta of 1/n or more allows publishing a user's record), got {d:g}"
        )
    return d


def run_delta(params: Mapping[str, Any], n: int, where: str) -> float:
    """``params['delta']`` checked against n, or the project default for n."""
    if params.get("delta") is None:
        return default_delta(n)
    return check_delta(float(params["delta"]), n, where)


def min_users_param(params: Mapping[str, Any], n: int, where: str) -> int:
    """``params['min_users']`` (default n): the calibration count, 2 <= min_users <= n."""
    m = params.get("min_users")
    if m is None:
        return int(n)
    if isinstance(m, float) and not m.is_integer():
        raise ValueError(f"{where}: min_users must be an integer, got {m}")
    m = int(m)
    if not 2 <= m <= n:
        raise ValueError(f"{where}: min_users must lie in [2, {n}] (the users), got {m}")
    return m


def max_epsilon_param(params: Mapping[str, Any], target: float | None, where: str) -> float | None:
    """``params['max_epsilon']`` (default: the target epsilon), > 0 and finite."""
    v = params.get("max_epsilon")
    if v is None:
        return target
    v = float(v)
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{where}: max_epsilon must be finite and > 0, got {v}")
    return v


def shuffled_release(
    what: str,
    mechanism: str,
    *,
    eps_local: float,
    eps_planned: float,
    delta: float,
    n_accounted: int,
    n_received: int,
    bound: str,
    accountant: Mapping[str, Any],
    group: str | None = None,
    note: str = "",
) -> Release:
    """One single-message shuffled release, re-accounted below its calibration count.

    ``eps_planned`` is the guarantee at ``n_accounted`` reports (computed when the protocol was
    built); ``accountant`` the keyword arguments of :func:`protocols.accountant.amplify` for the
    mechanism actually run (``mechanism``, ``k``, ``g``, ``d``).
    """
    if n_received >= n_accounted:
        return Release(
            what, mechanism, float(eps_planned), float(delta), int(n_accounted), int(n_received),
            bound, group=group, note=note,
        )  # fmt: skip
    eps_l = float(eps_local)
    if n_received >= 2:
        from protocols.accountant import amplify

        amp = amplify(eps_l, int(n_received), float(delta), bound=REACCOUNT_BOUND, **accountant)
        if amp.valid and amp.eps_central is not None and amp.eps_central < eps_l:
            return Release(
                what, mechanism, float(amp.eps_central), float(delta), int(n_received),
                int(n_received), f"{REACCOUNT_BOUND} ({accountant.get('mechanism')}), "
                f"re-accounted at the count received", group=group, reaccounted=True,
                note=f"calibrated for {n_accounted} reports, {n_received} received. {note}".strip(),
            )  # fmt: skip
    return Release(
        what, mechanism, eps_l, 0.0, int(n_received), int(n_received),
        "pure LDP (no amplification at the count received)", group=group, reaccounted=True,
        note=f"calibrated for {n_accounted} reports, {n_received} received. {note}".strip(),
    )  # fmt: skip


def refuse_below(what: str, n_accounted: int, n_received: int, why: str) -> None:
    """A protocol that cannot re-account refuses (PrivacyRefusal with a one-line reason) when
    fewer than ``n_accounted`` were received."""
    if n_received < n_accounted:
        raise PrivacyRefusal(
            f"{what}: {n_received} received, the guarantee was calibrated for {n_accounted} and "
            f"cannot be recomputed for fewer ({why}); refusing to publish"
        )
