"""Exact pure epsilon of a shuffled multi-message protocol, by enumeration of the view's law.

A user with input v sends a random multiset of messages over T types; its law is an array
``laws[v]`` of shape (s_1, ..., s_T) whose entry [c_1, ..., c_T] is the probability of sending
c_t messages of type t (finite support). The shuffler publishes the multiset of all messages,
i.e. the count vector, whose law for a dataset with counts (k_0, ..., k_{K-1}) of each input is
the convolution of laws[v]^{*k_v}. Neighbouring datasets replace one user's input v by v', so

    eps = max over the others' counts c (summing to n - 1), v != v' and views w of
          |log (laws[v] * Q_c)(w) - log (laws[v'] * Q_c)(w)|,   Q_c = conv_v laws[v]^{*c_v},

infinite when one law puts mass on a view the other cannot produce (delta = 0 exactly: no
probability is set aside). Sums of non-negative products are computed directly (no FFT), so every
probability keeps its relative precision and structural zeros stay exact zeros.

The epsilon is non-increasing in n: a dataset of n + 1 users is one of n users plus a user whose
messages are independent of the changed user's, and adding them (a convolution with a fixed law)
is post-processing of the n-user view. So ``pure_epsilon(laws, n0)`` certifies every n >= n0.

Underflow would turn a possible view into a probability of 0 and silently drop it from the
maximum; the support is therefore convolved separately (indicators, no underflow) and a view
that is possible but computed as 0 raises ``ArithmeticError``.

``face_bound`` is a lower bound valid at every n: for a set S of types, the probability that the
view holds no message of a type in S is the product over users of P(user sends none | x_i), so
neighbours differ by one user's factor and eps >= |log P(none in S | v) / P(none in S | v')|.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.signal import convolve

from protocols.oracles.privacy_audit import max_log_ratio


@dataclass(frozen=True)
class PureCertificate:
    """Result of an exact enumeration: eps and where it is attained."""

    eps: float
    n: int
    others: tuple[int, ...]  # counts of each input among the other n - 1 users
    pair: tuple[int, int]  # (v, v') of the changed user
    datasets: int  # datasets (compositions of the others) enumerated


def check_laws(laws: Sequence[np.ndarray], where: str = "pure_dp") -> list[np.ndarray]:
    """The per-input laws as float arrays of one shape, each summing to 1; ValueError otherwise."""
    out = [np.asarray(law, dtype=np.float64) for law in laws]
    if len(out) < 2:
        raise ValueError(f"{where}: need the laws of at least two inputs, got {len(out)}")
    shape = out[0].shape
    for v, law in enumerate(out):
        if law.shape != shape:
            raise ValueError(f"{where}: law of input {v} has shape {law.shape}, expected {shape}")
        if (law < 0).any() or not math.isclose(float(law.sum()), 1.0, abs_tol=1e-9):
            raise ValueError(f"{where}: law of input {v} is not a probability vector")
    return out


def _powers(law: np.ndarray, top: int) -> list[np.ndarray]:
    pw = [np.ones((1,) * law.ndim)]
    for _ in range(top):
        pw.append(convolve(pw[-1], law, method="direct"))
    return pw


def _compositions(total: int, parts: int):
    for cut in itertools.combinations(range(total + parts - 1), parts - 1):
        prev, comp = -1, []
        for c in (*cut, total + parts - 1):
            comp.append(c - prev - 1)
            prev = c
        yield tuple(comp)


def _check_underflow(views, supports, indicators, comp) -> None:
    """ArithmeticError if a view the support allows was computed as probability 0."""
    s = np.ones((1,) * views[0].ndim)
    for v, c in enumerate(comp):
        s = convolve(s, supports[v][c], method="direct")
    for v, view in enumerate(views):
        own = convolve(s, indicators[v], method="direct") > 0.5
        if (own & (view <= 0)).any():
            raise ArithmeticError(
                f"pure_epsilon: probability underflow at others={comp}, input {v}"
            )


def view_law(laws: Sequence[np.ndarray], counts: Sequence[int]) -> np.ndarray:
    """Law of the shuffled count vector when counts[v] users hold input v."""
    laws = check_laws(laws)
    out = np.ones((1,) * laws[0].ndim)
    for law, c in zip(laws, counts, strict=True):
        for _ in range(int(c)):
            out = convolve(out, law, method="direct")
    return out


def pure_epsilon(
    laws: Sequence[np.ndarray], n: int, max_datasets: int = 100_000
) -> PureCertificate:
    """Exact pure epsilon of the shuffled view over all datasets of n users (module docstring)."""
    laws = check_laws(laws)
    if int(n) != n or n < 1:
        raise ValueError(f"pure_epsilon: n must be an integer >= 1, got {n}")
    k = len(laws)
    total = math.comb(n - 1 + k - 1, k - 1)
    if total > max_datasets:
        raise ValueError(f"pure_epsilon: {total} datasets to enumerate (limit {max_datasets})")
    powers = [_powers(law, n - 1) for law in laws]
    indicators = [(law > 0).astype(np.float64) for law in laws]
    supports = [_powers(ind, n - 1) for ind in indicators]
    best = PureCertificate(0.0, n, (0,) * k, (0, 1), total)
    for comp in _compositions(n - 1, k):
        q = np.ones((1,) * laws[0].ndim)
        for v, c in enumerate(comp):
            q = convolve(q, powers[v][c], method="direct")
        views = [convolve(q, law, method="direct") for law in laws]
        _check_underflow(views, supports, indicators, comp)
        for v, w in itertools.combinations(range(k), 2):
            eps = max_log_ratio(views[v], views[w])
            if eps > best.eps:
                best = PureCertificate(eps, n, comp, (v, w), total)
            if math.isinf(eps):
                return best
    return best


def empirical_law(counts: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Frequencies of sampled per-user count vectors (rows of ``counts``) on an array of ``shape``
    (to check that an analytic law is the law of a real encoder)."""
    c = np.asarray(counts, dtype=np.int64).reshape(len(counts), -1)
    if c.shape[1] != len(shape) or (c < 0).any() or (c >= np.array(shape)).any():
        raise ValueError(f"empirical_law: count vectors do not fit an array of shape {shape}")
    out = np.zeros(shape)
    np.add.at(out, tuple(c.T), 1.0)
    return out / max(len(c), 1)


def face_bound(laws: Sequence[np.ndarray]) -> float:
    """Lower bound on the pure epsilon at every n (module docstring): max over sets of types."""
    laws = check_laws(laws)
    ndim = laws[0].ndim
    best = 0.0
    for size in range(1, ndim + 1):
        for types in itertools.combinations(range(ndim), size):
            index = tuple(0 if t in types else slice(None) for t in range(ndim))
            none = [float(law[index].sum()) for law in laws]
            for a, b in itertools.combinations(none, 2):
                if a > 0 or b > 0:
                    best = max(best, max_log_ratio(np.array([a]), np.array([b])))
    return best


__all__ = [
    "PureCertificate",
    "check_laws",
    "empirical_law",
    "face_bound",
    "pure_epsilon",
    "view_law",
]
