"""PRHR's and PUCM's privacy by brute force: the exact distribution of the whole shuffled
multiset (every user's tuples or labels) on neighbouring datasets at small n, against the
accountants used for their releases; each check fails with a deliberately wrong parameter."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import pytest

from protocols.multi_freq.hadamard import hadamard_order
from protocols.multi_freq.prhr import PRHR
from protocols.multi_freq.prhr_privacy import prhr_delta
from protocols.multi_freq.pucm import PUCM
from protocols.privacy.ledger import USERS


def _hadamard_even(r: int, c: int) -> bool:
    return bin(r & c).count("1") % 2 == 0


def _tuple_dist(values: list[int], rho: int, tau: int, order: int) -> dict[tuple, float]:
    """Exact law of the histogram of all tuples (a multiset) over the cells [2^L]^tau."""
    cells = list(itertools.product(range(1 << order), repeat=tau))
    index = {c: i for i, c in enumerate(cells)}
    per_msg = []
    for v in values:
        own = [c for c in cells if all(_hadamard_even(v + 1, x) for x in c)]
        per_msg.append({index[c]: 1 / len(own) for c in own})
        per_msg += [{i: 1 / len(cells) for i in range(len(cells))}] * rho
    dist: dict[tuple, float] = {tuple([0] * len(cells)): 1.0}
    for law in per_msg:
        nxt: dict[tuple, float] = defaultdict(float)
        for h, p in dist.items():
            for i, q in law.items():
                g = list(h)
                g[i] += 1
                nxt[tuple(g)] += p * q
        dist = nxt
    return dist


def _delta(p: dict, q: dict, eps: float) -> float:
    """max over both directions of sum [P - e^eps Q]_+ on the union of the supports."""
    keys = set(p) | set(q)
    e = math.exp(eps)
    d1 = sum(max(0.0, p.get(k, 0.0) - e * q.get(k, 0.0)) for k in keys)
    d2 = sum(max(0.0, q.get(k, 0.0) - e * p.get(k, 0.0)) for k in keys)
    return max(d1, d2)


def test_prhr_accountant_equals_brute_force_on_the_dominating_view():
    # one user's codeword tuple plus N uniform tuples: the accountant's view, exactly
    order, tau, rho = 2, 2, 3
    p = _tuple_dist([0], rho, tau, order)
    q = _tuple_dist([1], rho, tau, order)
    for eps in (0.0, 0.3, 0.7, 1.2, 2.0):
        assert prhr_delta(eps, 1, rho, tau) == pytest.approx(_delta(p, q, eps), abs=1e-12)


def test_prhr_release_guarantee_holds_on_the_whole_multiset_and_can_fail():
    d, n, rho, tau = 3, 2, 3, 1
    proto = PRHR(d, n, 2.0, 0.05, rho=rho, tau=tau)
    assert proto.order == hadamard_order(d) == 2
    rel = proto.releases(0, {"tuples": n * (1 + rho), USERS: n})[0]
    worst = 0.0
    for others in range(d):
        for x, x2 in itertools.permutations(range(d), 2):
            p = _tuple_dist([x, others], rho, tau, proto.order)
            q = _tuple_dist([x2, others], rho, tau, proto.order)
            worst = max(worst, _delta(p, q, rel.eps))
            assert _delta(p, q, rel.eps) <= rel.delta + 1e-12
    # the statement is not vacuous: at half the epsilon the real multiset breaks delta
    p = _tuple_dist([0, 0], rho, tau, proto.order)
    q = _tuple_dist([1, 0], rho, tau, proto.order)
    assert _delta(p, q, rel.eps / 2) > rel.delta
    assert worst > 0.2 * rel.delta


def _bucket_dist(proto: PUCM, values: list[int], gamma: float) -> dict[tuple, float]:
    """Exact law of the bucket counts: own labels plus Bin(n, gamma) in every bucket."""
    n, k = len(values), proto.tau * proto.s
    own = np.bincount(proto.signal_labels(np.array(values)).reshape(-1), minlength=k)
    pmf = [math.comb(n, j) * gamma**j * (1 - gamma) ** (n - j) for j in range(n + 1)]
    dist = {}
    for noise in itertools.product(range(n + 1), repeat=k):
        pr = math.prod(pmf[j] for j in noise)
        dist[tuple(int(o) + j for o, j in zip(own, noise, strict=True))] = pr
    return dist


def test_pucm_release_guarantee_holds_on_the_bucket_histogram_and_can_fail():
    n = 5
    proto = PUCM(2, n, 20.0, 0.3, gamma=0.5, buckets=2)
    assert proto.tau == 2
    proto.hashes = np.array([[0, 1], [1, 0]])  # the worst public table: no collision
    rel = proto.releases(0, {"buckets": 10, USERS: n})[0]
    for others in itertools.product(range(2), repeat=n - 1):
        p = _bucket_dist(proto, [0, *others], proto.gamma)
        q = _bucket_dist(proto, [1, *others], proto.gamma)
        assert _delta(p, q, rel.eps) <= rel.delta + 1e-12
    # running with a fifth of the noise the guarantee was computed for breaks it
    p = _bucket_dist(proto, [0] * n, proto.gamma / 5)
    q = _bucket_dist(proto, [1] + [0] * (n - 1), proto.gamma / 5)
    assert _delta(p, q, rel.eps) > rel.delta
