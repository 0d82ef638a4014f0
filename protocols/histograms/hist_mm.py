"""Hist_MM: one-hot encoding + Balcer-Cheu's two-message randomizer on every label (ITC 2020).

A user holding x sends the label x, and for every label j in [d] independently one more message
j with probability p (the Cnt_2M randomizer applied to bit j of the one-hot vector, sent as the
label j so that labels survive the shuffle). The count of label j is c_j + Bin(n, p); the analyzer
applies Cnt_2M's truncated estimate per label: c_j-hat = (count_j - n p) if count_j > n, else 0.

Privacy: replace-one neighbours change two coordinates of the one-hot histogram, so each label's
counter runs at (eps_c/2, delta/2) and the histogram is (eps_c, delta)-DP by composition (the
survey: "Cnt_2M's randomizer at (eps_c/2, delta/2)-DP"); 1 - p from Balcer-Cheu (``paper``) or
from the exact binomial divergence (``exact``). Only the analyzer is protected: a user's own
label is always among its messages (no local guarantee). The error is independent of d but the
estimate is biased (truncation below the noise deficit, mean 50 ln(4/delta)/(eps_c/2)^2 in the
paper accounting) and each user sends 1 + d p messages on average (about d + 1).

Releases: users are certified by the most messages one user can send, ceil(rows/(d+1)), and the
noise of that many users is re-accounted exactly per label (then composed over the two labels).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee
from protocols.catalogue.inputs import check_domain_and_users, check_values, label_counts
from protocols.counting.cnt_2m import expected_mse, two_message_gamma
from protocols.distributed_noise.binomial import binomial_epsilon

BLOCK = 1 << 22  # (user, label) coin flips drawn at once


def one_hot_two_message(
    v: np.ndarray, d: int, p: float, rng: np.random.Generator, block: int = BLOCK
) -> np.ndarray:
    """All labels sent by the users holding ``v``: each own label plus label j w.p. p, every j."""
    per = max(1, block // d)
    parts = [v]
    for s in range(0, v.size, per):
        m = min(per, v.size - s)
        parts.append(np.nonzero(rng.random((m, d)) < p)[1].astype(np.int64))
    return np.concatenate(parts)


class HistMM(CatalogueProtocol):
    """Labels in batch ``labels``: 1 + Bin(d, p) messages per user."""

    name = "hist_mm"
    fixed_messages = False
    release_what = "histogram of [d]"

    def __init__(
        self, d: int, n: int, eps_c: float, delta: float, accounting: str = "paper"
    ) -> None:
        check_domain_and_users("Hist_MM", d, n)
        self.d, self.n, self.eps_c, self.delta = int(d), int(n), float(eps_c), float(delta)
        self.accounting = accounting
        self.gamma = two_message_gamma(self.eps_c / 2, self.delta / 2, self.n, accounting)
        self.p = 1.0 - self.gamma

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("labels", 1, self.d)]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        v = check_values(records, self.d, "Hist_MM.encode")
        return {"labels": one_hot_two_message(v, self.d, self.p, rng).reshape(-1, 1)}

    def estimate(self, label_counts_: np.ndarray) -> np.ndarray:
        """Truncated per-label counts from the label counts (Balcer-Cheu's analyzer)."""
        c = np.asarray(label_counts_, dtype=np.float64)
        return np.where(c > self.n, c - self.n * self.p, 0.0)

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        c, bad = label_counts(shuffled, "labels", self.d, "Hist_MM analyzer")
        est = self.estimate(c)
        return {
            "counts": est.tolist(),
            "messages": int(c.sum()),
            "truncated_labels": int((c <= self.n).sum()),
            "invalid": bad,
        }

    def count_mse(self, true_counts: np.ndarray) -> np.ndarray:
        """Exact MSE of every label's truncated estimate given the true counts."""
        return np.array([expected_mse(int(c), self.n, self.gamma) for c in true_counts])

    def messages_per_user(self) -> float:
        return 1.0 + self.d * self.p

    def bits_per_user(self) -> float:
        return self.messages_per_user() * math.ceil(math.log2(self.d))

    def max_messages(self) -> dict[str, int]:
        return {"labels": self.d + 1}

    def mechanism(self) -> str:
        return f"one-hot + two-message counters (1-p={self.gamma:.4g}) on {self.d} labels"

    def guarantee(self, users: int) -> Guarantee:
        if users >= self.n:
            bound = "balcer-cheu x2" if self.accounting == "paper" else "exact-binomial x2"
            return Guarantee(self.eps_c, self.delta, bound)
        e = binomial_epsilon(self.delta / 2, users, self.gamma)
        if e is None:
            raise ValueError(f"binomial noise of {users} users gives no finite epsilon")
        return Guarantee(2 * e, self.delta, "exact-binomial x2", note=f"re-accounted at {users}")

    def privacy(self) -> dict[str, Any]:
        halves = [self.eps_c / 2, self.delta / 2]
        own = {"per_label": halves, "one_minus_p": self.gamma, "accounting": self.accounting}
        return self.statement(own, local_epsilon=None)
