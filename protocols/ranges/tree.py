"""Range counting over [d]: the hierarchical encoding + any frequency oracle + the matrix mechanism.

Encoding (the survey's Fig. 6 range tree; Ghazi et al.'s reduction). Pad [d] to D = b^L
(b = ``branching``, L = ceil(log_b d)). Column x of the strategy matrix M has a one at the node
containing x on every level 1..L, so a user holding x sends L messages, one per level: the index
x // b^(L - l) of its level-l node, through the level's frequency oracle, in its own batch
``level{l}`` (the level index is public). Oracles: ``"krr"`` (Hist_KR over the b^l nodes, with
Theorem 4 or, ``bound="vr"``, the project accountant's variation-ratio bound) or ``"slh"`` (SLH
over them), each at (eps/L, delta/L) so that basic composition over the L
messages gives (eps, delta) (the levels are the same users: sequential, not parallel).

Analyzer: per level, the oracle's unbiased node counts z_l and their variance (at uniform data,
used only as weights); then the GLS leaf estimates by
:func:`protocols.ranges.matrix_mechanism.tree_consistent_leaves` with the known root n; any range
[j, j'] is <w, Y-hat> = the sum of the consistent leaves over [j, j'] (the analyzer publishes the
leaves, so every range query is a post-processing of one release).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.accountant import survey
from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee
from protocols.catalogue.inputs import check_values
from protocols.histograms.hist_kr import HistKR
from protocols.histograms.slh import SLH
from protocols.ranges.matrix_mechanism import range_answers, tree_consistent_leaves

ORACLES = ("krr", "slh")


def tree_depth(d: int, branching: int) -> int:
    """L = ceil(log_b d), at least 1."""
    if int(d) != d or d < 2 or int(branching) != branching or branching < 2:
        raise ValueError(f"range tree: need d >= 2 and branching >= 2, got {d}, {branching}")
    depth, size = 0, 1
    while size < d:
        size *= branching
        depth += 1
    return depth


def tree_matrix(d: int, branching: int) -> np.ndarray:
    """The strategy matrix M: one row per node of levels 1..L, one column per value of [d]."""
    depth = tree_depth(d, branching)
    rows = []
    for lv in range(1, depth + 1):
        width = branching ** (depth - lv)
        node = np.arange(d) // width
        rows.append((np.arange(branching**lv)[:, None] == node[None, :]).astype(np.float64))
    return np.concatenate(rows)


class RangeTree(CatalogueProtocol):
    """L level messages per user (batches ``level1``..``levelL``) through per-level oracles."""

    name = "range"
    release_what = "consistent histogram of [d] (answers every range)"

    def __init__(
        self,
        d: int,
        n: int,
        eps_c: float,
        delta: float,
        branching: int = 2,
        oracle: str = "krr",
        queries: np.ndarray | None = None,
        bound: str = "theorem4",
    ) -> None:
        if oracle not in ORACLES:
            raise ValueError(f"range: oracle must be one of {ORACLES}, got {oracle!r}")
        self.d, self.n, self.eps_c, self.delta = int(d), int(n), float(eps_c), float(delta)
        self.b, self.oracle = int(branching), oracle
        self.depth = tree_depth(self.d, self.b)
        self.queries = None if queries is None else np.asarray(queries, dtype=np.int64)
        e, dl = self.eps_c / self.depth, self.delta / self.depth
        self.levels: list[Any] = []
        for lv in range(1, self.depth + 1):
            k = self.b**lv
            self.levels.append(
                HistKR(k, self.n, e, dl, bound=bound) if oracle == "krr" else SLH(k, self.n, e, dl)
            )

    def node_of(self, v: np.ndarray, lv: int) -> np.ndarray:
        """Level-lv node (1-based level) of every value."""
        return v // self.b ** (self.depth - lv)

    def batch_specs(self) -> list[BatchSpec]:
        specs = []
        for lv, o in enumerate(self.levels, start=1):
            (s,) = o.batch_specs()
            specs.append(BatchSpec(f"level{lv}", s.width, s.bound))
        return specs

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        v = check_values(records, self.d, "range.encode")
        out = {}
        for lv, o in enumerate(self.levels, start=1):
            (msgs,) = o.encode(self.node_of(v, lv).reshape(-1, 1), rng).values()
            out[f"level{lv}"] = msgs
        return out

    def level_variance(self, lv: int, m: int) -> float:
        """Variance of a level's node count at uniform data (the GLS weights)."""
        o = self.levels[lv - 1]
        k = self.b**lv
        if self.oracle == "krr":
            return float(np.mean(o.count_variance(np.full(k, m / k))))
        return float(np.mean(o.variance(np.full(k, 1.0 / k)))) * m * m

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        node_counts, variances, reports = [], [], []
        for lv, o in enumerate(self.levels, start=1):
            batch = shuffled.get(f"level{lv}")
            if batch is None:
                raise ValueError(f"range analyzer: no 'level{lv}' batch received")
            (spec,) = o.batch_specs()
            est = o.analyze({spec.name: batch})
            node_counts.append(np.asarray(est["counts"], dtype=np.float64))
            m = int(est["reports"])
            reports.append(m)
            variances.append(self.level_variance(lv, m))
        root = float(min(reports))
        leaves = tree_consistent_leaves(node_counts, variances, self.b, root=root)[: self.d]
        out: dict[str, Any] = {"leaf_counts": leaves.tolist(), "reports_per_level": reports}
        if self.queries is not None:
            out["ranges"] = self.queries.tolist()
            out["answers"] = range_answers(leaves, self.queries).tolist()
        return out

    def messages_per_user(self) -> float:
        return float(self.depth)

    def bits_per_user(self) -> float:
        return float(sum(o.bits_per_user() for o in self.levels))

    def max_messages(self) -> dict[str, int]:
        return {f"level{lv}": 1 for lv in range(1, self.depth + 1)}

    def mechanism(self) -> str:
        return f"{self.b}-ary range tree, {self.depth} levels, {self.oracle} per level"

    def guarantee(self, users: int) -> Guarantee:
        parts = [o.guarantee(users) for o in self.levels]
        eps, delta = survey.sequential((g.eps, g.delta) for g in parts)
        return Guarantee(eps, delta, f"{parts[0].bound} per level, sequential over {self.depth}")

    def privacy(self) -> dict[str, Any]:
        per_level = [self.eps_c / self.depth, self.delta / self.depth]
        own = {"levels": self.depth, "per_level": per_level, "oracle": self.oracle}
        return self.statement(own, local_epsilon=sum(o.privacy()["eps_local"] for o in self.levels))


def random_ranges(d: int, count: int, seed: int) -> np.ndarray:
    """``count`` ranges [j, j'] drawn uniformly (j <= j') from a seeded generator."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(4, 0)))
    a = rng.integers(0, d, (count, 2))
    return np.sort(a, axis=1)


__all__ = ["ORACLES", "RangeTree", "random_ranges", "tree_depth", "tree_matrix"]
