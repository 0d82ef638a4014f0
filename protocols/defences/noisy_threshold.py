"""Release a batch only when its noisy size clears a threshold (Prochlo's crowd threshold).

The survey (section 1.2, after Bittau et al.): the shuffler "waits to collect enough user data"
and, if the volume itself is sensitive, "adds DP noise to the threshold". Here the shuffler
draws Z, two-sided geometric with ratio a = e^(-eps_t/Delta) (Delta = the most messages one user
sends), and releases the batch iff count + Z >= T; it may publish count + Z.

Effect on the accounted epsilon, for a protocol whose guarantee (eps, delta) holds with at least
n_min users:
- the release decision and the noisy count are eps_t-DP in the add/remove-one-user sense
  (geometric mechanism on a Delta-sensitive count), composing sequentially with the protocol:
  (eps + eps_t, ...);
- a batch with fewer than n_min users is released with probability at most
  beta = Pr[Z >= T - n_min + 1] = a^(T - n_min + 1)/(1 + a); that event is charged to delta.
So with T from :func:`threshold_for_minimum` the run is (eps + eps_t, delta + beta)-DP
(:func:`accounted_with_threshold`) and the protocol's releases may be accounted at n_min.
"""

from __future__ import annotations

import math

import numpy as np

from protocols.oracles.central import geometric_mechanism


def _ratio(eps_t: float, sensitivity: int) -> float:
    if not (eps_t > 0 and math.isfinite(eps_t)):
        raise ValueError(f"noisy threshold: eps_t must be finite and > 0, got {eps_t}")
    if int(sensitivity) != sensitivity or sensitivity < 1:
        raise ValueError(f"noisy threshold: sensitivity must be an integer >= 1, got {sensitivity}")
    return math.exp(-eps_t / sensitivity)


def release_probability_below(
    n_min: int, threshold: int, eps_t: float, sensitivity: int = 1
) -> float:
    """beta: the largest release probability of a batch with fewer than n_min users."""
    a = _ratio(eps_t, sensitivity)
    gap = threshold - n_min + 1
    if gap <= 0:
        return 1.0
    return a**gap / (1 + a)


def threshold_for_minimum(n_min: int, eps_t: float, beta: float, sensitivity: int = 1) -> int:
    """Smallest T such that batches with < n_min users are released w.p. <= beta."""
    if not 0 < beta < 1:
        raise ValueError(f"noisy threshold: beta must lie in (0, 1), got {beta}")
    a = _ratio(eps_t, sensitivity)
    gap = max(1, math.ceil(math.log(beta * (1 + a)) / math.log(a)))
    t = n_min - 1 + gap
    while release_probability_below(n_min, t, eps_t, sensitivity) > beta:
        t += 1
    return t


def threshold_release(
    count: int, threshold: int, eps_t: float, rng: np.random.Generator, sensitivity: int = 1
) -> tuple[bool, int]:
    """(release?, noisy count): count + two-sided geometric noise compared with the threshold."""
    _ratio(eps_t, sensitivity)
    noisy = int(geometric_mechanism(np.array([int(count)]), int(sensitivity), eps_t, rng)[0])
    return noisy >= threshold, noisy


def accounted_with_threshold(
    eps: float, delta: float, eps_t: float, beta: float
) -> tuple[float, float]:
    """The run's guarantee with the threshold: (eps + eps_t, delta + beta) (module docstring)."""
    return eps + eps_t, min(1.0, delta + beta)


def threshold_settings(params: dict) -> tuple[int, float, float] | None:
    """(n_min, eps_t, beta) from run parameters ``min_batch``, ``threshold_epsilon`` (default
    0.1) and ``threshold_beta`` (default 1e-9), or None when the run sets no ``min_batch``."""
    if params.get("min_batch") is None:
        return None
    n_min = int(params["min_batch"])
    eps_t = float(params.get("threshold_epsilon", 0.1))
    beta = float(params.get("threshold_beta", 1e-9))
    if n_min < 1:
        raise ValueError(f"min_batch must be >= 1, got {n_min}")
    threshold_for_minimum(n_min, eps_t, beta)  # validates eps_t and beta
    return n_min, eps_t, beta


def threshold_release_entry(info: dict, round: int = 0):  # noqa: ANN201 - a ledger Release
    """The ledger's release of the shuffler's noisy volume test of one round (``info``: the
    public ``{n_min, eps_t, beta, threshold, noisy_users}`` the shuffler announced): eps_t-DP
    (geometric on the user count), and beta charged to delta (a batch below n_min released)."""
    from protocols.privacy.ledger import Release

    return Release(
        f"round {round}: the shuffler's noisy batch size ({info['noisy_users']} vs threshold "
        f"{info['threshold']})",
        f"two-sided geometric, eps_t = {info['eps_t']:g}, sensitivity 1 user",
        float(info["eps_t"]),
        float(info["beta"]),
        int(info["n_min"]),
        int(info["n_min"]),
        "survey sec. 1.2 noisy threshold: (eps + eps_t, delta + beta) at n_min users",
        round=round,
        note="releases of this round may be accounted at min_batch users",
    )
