"""Calm (Zhang, Wang, Li, He, Chen, CCS 2018): k-way marginals from m published w-way marginals.

Seed 000 (spec Sec. 8.1) uses Calm as the LDP baseline and as the frame of Calm_SRR-MS /
Calm_ARR-SS / Calm_PSRR-SS (:mod:`protocols.marginals.calm_shuffle`). The seed gives none of Calm's
parameters; the choices below follow Calm (and PriView, SIGMOD 2014, whose post-processing Calm
adopts) and are the ones the reproduction report lists:

* **Marginal selection.** The published attribute sets are a greedy covering design: w-subsets
  chosen one at a time to cover the most not-yet-covered t-subsets (t = 2, all attribute pairs,
  as PriView/Calm; or t = k, every query set inside one published marginal), ties broken by the
  smaller cell count, only marginals with at most ``max_cells`` cells.
* **Choosing w and m** (Calm's noise-versus-reconstruction trade-off). For every candidate
  (w, t) the expected squared error of the target k-way marginals is modelled as
  NE + RE: a query covered by r published marginals of c cells each has noise error c v / r
  (v the per-cell variance of the frequency oracle with n/m users, summing c/c_Q cells per query
  cell); an uncovered query adds a reconstruction error ``r0`` (the data-dependent part that Calm
  also has to assume a priori; default 2e-5 per k-way marginal, our choice: the order of the
  error of 3-way marginals rebuilt by maximum entropy from exact 2-way ones on Kosarak and
  Census-Income, 0.3-1.6e-5) on top of the noise of
  the marginals it is rebuilt from. The candidate with the smallest mean error over all
  k-subsets wins; m is the size of its covering design.
* **Collection (pure LDP).** Users are split into m balanced random groups; group i reports its
  w-way marginal cell with Calm's adaptive frequency oracle: GRR when the cell count
  c < 3 e^eps + 2, otherwise a unary/hash oracle. Calm uses OLH there; we run OUE, which has the
  same variance 4 e^eps / (N (e^eps - 1)^2) and is simulated exactly from its count law.
* **Post-processing** (Calm Sec. 5, PriView's consistency): Norm-Sub (the Euclidean simplex
  projection, :func:`protocols.oracles.postprocess.project_simplex`) of every marginal, then overlap
  consistency (every attribute set shared by several marginals gets their inverse-variance
  weighted projection, processed from small to large sets), repeated ``rounds`` times and closed
  by a final Norm-Sub.
* **Answering k-way marginals.** A query inside a published marginal is its (averaged)
  projection; otherwise maximum-entropy reconstruction: iterative proportional fitting from the
  uniform table to the published projections onto the query's maximal overlaps.

Tables are numpy arrays shaped by the domain sizes of their attributes (sorted attribute order).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from protocols.oracles.grr import grr_estimate_from_counts, grr_perturb, grr_probabilities
from protocols.oracles.postprocess import project_simplex
from protocols.oracles.unary_encoding import ue_estimate_from_counts, ue_sample_counts

AttrSet = tuple[int, ...]
# per-cell variance of every published marginal given their cell counts (None: infeasible)
CellVariance = Callable[[list[int]], list[float] | None]


# ---------------------------------------------------------------- marginal tables and cells
def cell_count(domain_sizes: Sequence[int], attrs: AttrSet) -> int:
    """Number of cells of the marginal on ``attrs``."""
    return int(math.prod(domain_sizes[a] for a in attrs))


def check_sets(domain_sizes: Sequence[int], sets: Sequence[AttrSet], where: str) -> list[AttrSet]:
    """Sorted, validated attribute sets (ValueError naming ``where``)."""
    d = len(domain_sizes)
    out = []
    for s in sets:
        t = tuple(sorted(int(a) for a in s))
        if not t or len(set(t)) != len(t) or t[0] < 0 or t[-1] >= d:
            raise ValueError(f"{where}: attribute set {s} must be distinct indices in [0, {d})")
        out.append(t)
    return out


def marginal_cells(records: np.ndarray, domain_sizes: Sequence[int], attrs: AttrSet) -> np.ndarray:
    """Each record's cell index in the marginal on ``attrs`` (row-major, first attribute slowest)."""
    x = np.asarray(records)
    return np.ravel_multi_index(tuple(x[:, a] for a in attrs), [domain_sizes[a] for a in attrs])


def marginal_table(records: np.ndarray, domain_sizes: Sequence[int], attrs: AttrSet) -> np.ndarray:
    """True marginal (fractions) on ``attrs``, shaped by their domain sizes."""
    shape = [domain_sizes[a] for a in attrs]
    counts = np.bincount(marginal_cells(records, domain_sizes, attrs), minlength=math.prod(shape))
    return (counts / max(1, len(records))).reshape(shape)


def project(table: np.ndarray, attrs: AttrSet, onto: AttrSet) -> np.ndarray:
    """Projection of a marginal on ``attrs`` onto the subset ``onto`` (sorted)."""
    drop = tuple(i for i, a in enumerate(attrs) if a not in onto)
    if len(attrs) - len(drop) != len(onto):
        raise ValueError(f"project: {onto} is not a subset of {attrs}")
    return table.sum(axis=drop) if drop else table


def _expand(delta: np.ndarray, attrs: AttrSet, onto: AttrSet) -> np.ndarray:
    """Broadcast a table on ``onto`` to the axes of ``attrs``."""
    shape = [1] * len(attrs)
    j = 0
    for i, a in enumerate(attrs):
        if a in onto:
            shape[i] = delta.shape[j]
            j += 1
    return delta.reshape(shape)


# ---------------------------------------------------------------- selection and parameters
def greedy_cover(
    domain_sizes: Sequence[int], w: int, t: int, max_cells: int = 4096
) -> list[AttrSet] | None:
    """Greedy covering design: w-subsets covering every t-subset (None if impossible)."""
    d = len(domain_sizes)
    if not 1 <= t <= w <= d:
        raise ValueError(f"greedy_cover: need 1 <= t <= w <= d, got t={t}, w={w}, d={d}")
    cands = [
        s for s in itertools.combinations(range(d), w) if cell_count(domain_sizes, s) <= max_cells
    ]
    targets = list(itertools.combinations(range(d), t))
    if not cands:
        return None
    tindex = {s: i for i, s in enumerate(targets)}
    inc = np.zeros((len(cands), len(targets)), dtype=bool)
    for i, s in enumerate(cands):
        for u in itertools.combinations(s, t):
            inc[i, tindex[u]] = True
    if not inc.any(axis=0).all():
        return None
    cells = np.array([cell_count(domain_sizes, s) for s in cands], dtype=np.float64)
    left = np.ones(len(targets), dtype=bool)
    chosen: list[AttrSet] = []
    while left.any():
        gain = inc[:, left].sum(axis=1).astype(np.float64)
        best = int(np.argmax(gain - cells / (cells.max() + 1)))  # most gain, then fewer cells
        chosen.append(cands[best])
        left &= ~inc[best]
    return chosen


@dataclass(frozen=True)
class CalmParams:
    """Chosen marginal width w, the m attribute sets and the modelled error per k-way query."""

    w: int
    t: int
    sets: tuple[AttrSet, ...]
    noise_error: float
    reconstruction_error: float

    @property
    def m(self) -> int:
        return len(self.sets)

    @property
    def expected_error(self) -> float:
        return self.noise_error + self.reconstruction_error


def modelled_error(
    domain_sizes: Sequence[int],
    sets: Sequence[AttrSet],
    variances: Sequence[float],
    k: int,
    r0: float,
) -> tuple[float, float]:
    """(mean noise error, mean reconstruction error) over all k-subsets (module docstring)."""
    cells = [cell_count(domain_sizes, s) for s in sets]
    ne = re_ = 0.0
    queries = list(itertools.combinations(range(len(domain_sizes)), k))
    for q in queries:
        cov = [c * v for s, c, v in zip(sets, cells, variances, strict=True) if set(q) <= set(s)]
        if cov:
            ne += 0.0 if min(cov) <= 0 else 1.0 / sum(1.0 / e for e in cov)
            continue
        overl = [c * v for s, c, v in zip(sets, cells, variances, strict=True) if set(q) & set(s)]
        ne += float(np.mean(overl)) if overl else 0.0
        re_ += r0
    return ne / len(queries), re_ / len(queries)


def choose_parameters(
    domain_sizes: Sequence[int],
    cell_variance: CellVariance,
    k: int = 3,
    *,
    w_max: int = 4,
    max_cells: int = 4096,
    r0: float = 2e-5,
) -> CalmParams:
    """Calm's (w, m) choice: the covering design with the smallest modelled NE + RE."""
    d = len(domain_sizes)
    if not 1 <= k <= d:
        raise ValueError(f"choose_parameters: k must lie in [1, {d}], got {k}")
    best: CalmParams | None = None
    for w in range(2 if d >= 2 else 1, min(w_max, d) + 1):
        for t in sorted({min(2, w), min(k, w)}):
            sets = greedy_cover(domain_sizes, w, t, max_cells)
            if sets is None:
                continue
            var = cell_variance([cell_count(domain_sizes, s) for s in sets])
            if var is None:
                continue
            ne, re_ = modelled_error(domain_sizes, sets, var, k, r0)
            cand = CalmParams(w, t, tuple(sets), ne, re_)
            if best is None or cand.expected_error < best.expected_error:
                best = cand
    if best is None:
        raise ValueError(
            f"choose_parameters: no feasible marginal set for domains {tuple(domain_sizes)} "
            f"(max_cells={max_cells}, w_max={w_max})"
        )
    return best


def adaptive_oracle(cells: int, eps: float) -> str:
    """Calm's adaptive choice: 'grr' if cells < 3 e^eps + 2, else 'oue' (OLH's variance)."""
    return "grr" if cells < 3 * math.exp(eps) + 2 else "oue"


def fo_cell_variance(cells: int, eps: float, users: float) -> float:
    """Per-cell variance (f-term dropped) of the adaptive oracle with ``users`` reports."""
    e = math.exp(eps)
    if adaptive_oracle(cells, eps) == "grr":
        p, q = grr_probabilities(cells, eps)
        return q * (1 - q) / (users * (p - q) ** 2)
    return 4 * e / (users * (e - 1) ** 2)


def ldp_cell_variance(n: int, eps: float) -> CellVariance:
    """Calm's LDP variance model: m groups of n/m users, adaptive oracle at eps."""
    return lambda cells: [fo_cell_variance(c, eps, n / len(cells)) for c in cells]


# ---------------------------------------------------------------- post-processing
def _closure(sets: Sequence[AttrSet]) -> list[AttrSet]:
    """All intersections of two or more published sets (including the empty set), small first."""
    found: set[AttrSet] = set()
    frontier = {tuple(sorted(set(a) & set(b))) for a, b in itertools.combinations(sets, 2)}
    while frontier:
        found |= frontier
        frontier = {
            tuple(sorted(set(a) & set(b))) for a in frontier for b in sets if not set(a) <= set(b)
        } - found
    found.add(())
    return sorted(found, key=lambda s: (len(s), s))


def make_consistent(
    tables: list[np.ndarray], sets: Sequence[AttrSet], variances: Sequence[float] | None = None
) -> list[np.ndarray]:
    """PriView/Calm overlap consistency: shared projections replaced by their weighted mean."""
    out = [np.array(t, dtype=np.float64) for t in tables]
    var = [1.0] * len(sets) if variances is None else list(variances)
    for a in _closure(sets):
        members = [i for i, s in enumerate(sets) if set(a) <= set(s)]
        if len(members) < 2:
            continue
        ca = math.prod(out[members[0]].shape[j] for j, x in enumerate(sets[members[0]]) if x in a)
        projs = [project(out[i], sets[i], a) for i in members]
        ratio = [out[i].size / ca for i in members]
        wts = np.array([1.0 / (r * var[i]) for r, i in zip(ratio, members, strict=True)])
        avg = sum(wt * p for wt, p in zip(wts, projs, strict=True)) / wts.sum()
        for i, p, r in zip(members, projs, ratio, strict=True):
            out[i] = out[i] + _expand((avg - p) / r, sets[i], a)
    return out


def norm_sub_tables(tables: list[np.ndarray]) -> list[np.ndarray]:
    """Norm-Sub of every table: non-negative, summing to 1."""
    return [project_simplex(t.ravel()).reshape(t.shape) for t in tables]


def postprocess(
    tables: list[np.ndarray],
    sets: Sequence[AttrSet],
    variances: Sequence[float] | None = None,
    rounds: int = 3,
) -> list[np.ndarray]:
    """Norm-Sub and consistency alternated ``rounds`` times, then a final Norm-Sub."""
    out = [np.asarray(t, dtype=np.float64) for t in tables]
    for _ in range(rounds):
        out = make_consistent(norm_sub_tables(out), sets, variances)
    return norm_sub_tables(out)


# ---------------------------------------------------------------- answering queries
def maxent_table(
    constraints: list[tuple[AttrSet, np.ndarray]],
    query: AttrSet,
    domain_sizes: Sequence[int],
    iterations: int = 50,
    tol: float = 1e-10,
) -> np.ndarray:
    """Maximum-entropy table on ``query`` matching the given projections (IPF from uniform)."""
    shape = [domain_sizes[a] for a in query]
    p = np.full(shape, 1.0 / math.prod(shape))
    for _ in range(iterations):
        worst = 0.0
        for attrs, target in constraints:
            cur = project(p, query, attrs)
            with np.errstate(divide="ignore", invalid="ignore"):
                factor = np.where(cur > 0, target / cur, 0.0)
            p = p * _expand(factor, query, attrs)
            worst = max(worst, float(np.abs(cur - target).max()))
        if worst < tol:
            break
    return p


def answer_marginal(
    tables: list[np.ndarray],
    sets: Sequence[AttrSet],
    query: AttrSet,
    domain_sizes: Sequence[int],
    iterations: int = 50,
) -> np.ndarray:
    """The k-way marginal on ``query`` from published (post-processed) marginals."""
    q = tuple(sorted(query))
    inside = [project(t, s, q) for t, s in zip(tables, sets, strict=True) if set(q) <= set(s)]
    if inside:
        return np.mean(inside, axis=0)
    overl: dict[AttrSet, list[np.ndarray]] = {}
    for t, s in zip(tables, sets, strict=True):
        a = tuple(x for x in s if x in q)
        if a:
            overl.setdefault(a, []).append(project(t, s, a))
    maximal = [a for a in overl if not any(set(a) < set(b) for b in overl)]
    cons = [(a, np.mean(overl[a], axis=0)) for a in maximal]
    return maxent_table(cons, q, domain_sizes, iterations)


def true_marginals(
    records: np.ndarray, domain_sizes: Sequence[int], queries: Sequence[AttrSet]
) -> dict[AttrSet, np.ndarray]:
    """True marginal of every query set (evaluation only)."""
    return {tuple(q): marginal_table(records, domain_sizes, tuple(q)) for q in queries}


def kway_queries(d: int, k: int) -> list[AttrSet]:
    """All C(d, k) attribute sets of size k."""
    return list(itertools.combinations(range(d), k))


def kway_sse(
    tables: list[np.ndarray],
    sets: Sequence[AttrSet],
    truth: dict[AttrSet, np.ndarray],
    domain_sizes: Sequence[int],
) -> float:
    """Mean over the query sets of ``truth`` of the per-marginal SSE (sum over cells)."""
    if not truth:
        raise ValueError("kway_sse: no query marginals given")
    errs = [
        float(np.sum((answer_marginal(tables, sets, q, domain_sizes) - t) ** 2))
        for q, t in truth.items()
    ]
    return float(np.mean(errs))


# ---------------------------------------------------------------- Calm under pure LDP
class CalmLDP:
    """Calm with pure eps-LDP: m balanced groups, one w-way marginal each, adaptive oracle."""

    name = "calm"

    def __init__(
        self,
        domain_sizes: Sequence[int],
        n: int,
        eps: float,
        *,
        k: int = 3,
        sets: Sequence[AttrSet] | None = None,
        **choose: Any,
    ) -> None:
        """Choose (w, m) for ``n`` users at ``eps`` unless ``sets`` fixes the marginals."""
        self.domain_sizes = tuple(int(x) for x in domain_sizes)
        if min(self.domain_sizes, default=0) < 2:
            raise ValueError(f"calm: every domain size must be >= 2, got {self.domain_sizes}")
        if not (eps > 0 and math.isfinite(eps)):
            raise ValueError(f"calm: eps must be a positive finite number, got {eps}")
        if n < 2:
            raise ValueError(f"calm: need at least 2 users, got n={n}")
        self.n, self.eps, self.k = int(n), float(eps), int(k)
        model = ldp_cell_variance(self.n, self.eps)
        if sets is None:
            self.params = choose_parameters(self.domain_sizes, model, self.k, **choose)
        else:
            s = check_sets(self.domain_sizes, sets, "calm")
            var = model([cell_count(self.domain_sizes, x) for x in s])
            ne, re_ = modelled_error(
                self.domain_sizes, s, var or [], self.k, choose.get("r0", 2e-5)
            )
            self.params = CalmParams(max(map(len, s)), 0, tuple(s), ne, re_)
        self.sets = list(self.params.sets)
        self.cells = [cell_count(self.domain_sizes, s) for s in self.sets]
        self.oracles = [adaptive_oracle(c, self.eps) for c in self.cells]

    def collect(self, records: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        """Raw unbiased estimates (flat) of every published marginal from one LDP collection."""
        x = np.asarray(records, dtype=np.int64)
        m = len(self.sets)
        groups = np.empty(x.shape[0], dtype=np.int64)
        groups[rng.permutation(x.shape[0])] = np.arange(x.shape[0]) % m
        out = []
        for i, (s, c, fo) in enumerate(zip(self.sets, self.cells, self.oracles, strict=True)):
            cells = marginal_cells(x[groups == i], self.domain_sizes, s)
            if fo == "grr":
                counts = np.bincount(grr_perturb(cells, c, self.eps, rng), minlength=c)
                out.append(grr_estimate_from_counts(counts.astype(np.float64), self.eps))
            else:
                counts = ue_sample_counts(cells, c, self.eps, rng, "oue")
                out.append(ue_estimate_from_counts(counts, self.eps, max(1, cells.size), "oue"))
        return out

    def publish(self, records: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
        """Collected marginals after Norm-Sub and consistency, shaped by their domains."""
        raw = self.collect(records, rng)
        shaped = [
            r.reshape([self.domain_sizes[a] for a in s])
            for r, s in zip(raw, self.sets, strict=True)
        ]
        var = [fo_cell_variance(c, self.eps, self.n / len(self.sets)) for c in self.cells]
        return postprocess(shaped, self.sets, var)
