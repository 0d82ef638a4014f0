"""FT: k-way marginals from Fourier (Hadamard) coefficients under LDP (Cormode, Kulkarni,
Srivastava, SIGMOD 2018), the second k-marginal baseline of seed 000 (spec Sec. 8.1).

Choices (from Cormode et al.; the seed gives none):

* Attributes are binary-encoded: attribute a with k_a values uses b_a = ceil(log2 k_a) bits
  (value v -> the bits of v). A record is then a bit vector x, and every k-way marginal is
  determined by the Fourier coefficients theta_alpha = E[(-1)^{<alpha, x>}] over the bit masks
  alpha whose support touches at most k attributes ("all coefficients of weight <= k" in the
  paper's binary setting; the same set attribute-wise for non-binary data).
* Each user samples ONE coefficient alpha uniformly from the T non-trivial ones, computes its
  sign (-1)^{<alpha, x>} and reports it with binary randomized response at eps (kept with
  probability e^eps/(e^eps+1)); the report (alpha, bit) is eps-LDP (alpha is data-independent).
* The aggregator debiases every coefficient, theta~ = c * mean of the reported signs for that
  coefficient, c = (e^eps+1)/(e^eps-1) (0 when nobody reported it), and answers a query set Q
  with L bits by the inverse transform P(y) = 2^-L sum_{alpha subset Q} theta_alpha (-1)^{<alpha,y>}
  (one fast Walsh-Hadamard transform), restricted to the valid codes v_a < k_a. No
  post-processing (Cormode et al. publish the unbiased marginals); ``nonnegative=True`` applies
  Norm-Sub as an option.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from protocols.oracles.hadamard_response import fwht, hr_constant
from protocols.oracles.postprocess import project_simplex

AttrSet = tuple[int, ...]


class FourierMarginals:
    """FT collection (one randomized coefficient sign per user) and k-way marginal answers."""

    name = "ft"

    def __init__(self, domain_sizes: Sequence[int], eps: float, k: int = 3) -> None:
        """Coefficients of every attribute subset of size 1..k (module docstring)."""
        self.domain_sizes = tuple(int(x) for x in domain_sizes)
        d = len(self.domain_sizes)
        if d < 1 or min(self.domain_sizes) < 2:
            raise ValueError(f"ft: every domain size must be >= 2, got {self.domain_sizes}")
        if not (eps > 0 and math.isfinite(eps)):
            raise ValueError(f"ft: eps must be a positive finite number, got {eps}")
        if not 1 <= k <= d:
            raise ValueError(f"ft: k must lie in [1, {d}], got {k}")
        self.eps, self.k = float(eps), int(k)
        self.bits = np.array([max(1, (x - 1).bit_length()) for x in self.domain_sizes])
        self.subsets: list[AttrSet] = [
            s for r in range(1, self.k + 1) for s in itertools.combinations(range(d), r)
        ]
        self.index = {s: i for i, s in enumerate(self.subsets)}
        counts = [math.prod((1 << int(self.bits[a])) - 1 for a in s) for s in self.subsets]
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.T = int(self.offsets[-1])
        # padded (subset, position) tables of attributes and mask radices (padding: radix 1)
        self._attrs = np.full((len(self.subsets), self.k), -1, dtype=np.int64)
        self._radix = np.ones((len(self.subsets), self.k), dtype=np.int64)
        for i, s in enumerate(self.subsets):
            self._attrs[i, : len(s)] = s
            self._radix[i, : len(s)] = [(1 << int(self.bits[a])) - 1 for a in s]

    def _masks(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(attributes, masks) of coefficients u: (len(u), k) arrays, -1 / 0 as padding."""
        si = np.searchsorted(self.offsets, u, side="right") - 1
        local = u - self.offsets[si]
        radix = self._radix[si]
        masks = np.zeros_like(radix)
        for j in range(self.k - 1, -1, -1):  # last attribute varies fastest
            masks[:, j] = local % radix[:, j] + 1
            local //= radix[:, j]
        attrs = self._attrs[si]
        masks[attrs < 0] = 0
        return attrs, masks

    def signs(self, records: np.ndarray, u: np.ndarray) -> np.ndarray:
        """(-1)^{<alpha_u, x>} for every user's record and coefficient index."""
        x = np.asarray(records, dtype=np.int64)
        attrs, masks = self._masks(u)
        vals = np.take_along_axis(x, np.maximum(attrs, 0), axis=1)
        parity = np.bitwise_count(vals & masks).sum(axis=1) & 1
        return 1 - 2 * parity.astype(np.int64)

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(n, 2) reports (coefficient index, bit): the sign kept w.p. e^eps/(e^eps+1)."""
        x = np.asarray(records)
        if x.ndim != 2 or x.shape[1] != len(self.domain_sizes):
            raise ValueError(f"ft.encode: records must have shape (n, {len(self.domain_sizes)})")
        if x.size and ((x < 0) | (x >= np.asarray(self.domain_sizes))).any():
            raise ValueError("ft.encode: a record value lies outside its attribute's domain")
        u = rng.integers(0, self.T, size=x.shape[0])
        s = self.signs(x, u)
        keep = rng.random(u.size) < math.exp(self.eps) / (math.exp(self.eps) + 1)
        return np.stack([u, (np.where(keep, s, -s) > 0).astype(np.int64)], axis=1)

    def estimate_coefficients(self, reports: np.ndarray) -> np.ndarray:
        """Unbiased coefficient estimates theta~ (length T) from (index, bit) reports."""
        r = np.asarray(reports, dtype=np.int64)
        if (
            r.ndim != 2
            or r.shape[1] != 2
            or (r.size and (r[:, 0].min() < 0 or r[:, 0].max() >= self.T))
        ):
            raise ValueError(f"ft: reports must be (n, 2) with indices in [0, {self.T})")
        n_u = np.bincount(r[:, 0], minlength=self.T)
        s_u = np.bincount(r[:, 0], weights=2.0 * r[:, 1] - 1.0, minlength=self.T)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n_u > 0, hr_constant(self.eps) * s_u / np.maximum(n_u, 1), 0.0)

    def answer(self, theta: np.ndarray, query: AttrSet, nonnegative: bool = False) -> np.ndarray:
        """The marginal on ``query`` (sorted attribute indices) from coefficient estimates."""
        q = tuple(sorted(query))
        if not 1 <= len(q) <= self.k:
            raise ValueError(f"ft.answer: query {query} must have 1..{self.k} attributes")
        b = [int(self.bits[a]) for a in q]
        L = sum(b)
        full = np.zeros(1 << L)
        full[0] = 1.0
        grids = np.meshgrid(*[np.arange(1 << x) for x in b], indexing="ij")
        masks = np.stack([g.ravel() for g in grids], axis=1)  # (2^L, |q|)
        shifts = np.concatenate([np.cumsum(b[::-1])[::-1][1:], [0]])
        idx = (masks << shifts).sum(axis=1)
        nz = masks > 0
        for pattern in itertools.product((False, True), repeat=len(q)):
            if not any(pattern):
                continue
            rows = np.all(nz == np.array(pattern), axis=1)
            sub = tuple(a for a, p in zip(q, pattern, strict=True) if p)
            radices = [(1 << int(self.bits[a])) - 1 for a in sub]
            loc = np.zeros(int(rows.sum()), dtype=np.int64)
            for j, p in enumerate(pattern):
                if p:
                    pos = sum(pattern[:j])
                    loc = loc * radices[pos] + masks[rows, j] - 1
            full[idx[rows]] = theta[self.offsets[self.index[sub]] + loc]
        p_bits = fwht(full) / (1 << L)
        cells = np.meshgrid(*[np.arange(self.domain_sizes[a]) for a in q], indexing="ij")
        code = sum(c.astype(np.int64) << int(s) for c, s in zip(cells, shifts, strict=True))
        table = p_bits[code]
        if nonnegative:
            table = project_simplex(table.ravel()).reshape(table.shape)
        return table

    def publish(
        self,
        records: np.ndarray,
        rng: np.random.Generator,
        queries: Sequence[AttrSet],
        nonnegative: bool = False,
    ) -> dict[AttrSet, np.ndarray]:
        """One LDP collection, then every query marginal."""
        theta = self.estimate_coefficients(self.encode(records, rng))
        return {tuple(q): self.answer(theta, q, nonnegative) for q in queries}


def ft_coefficient_variance(eps: float, n: int, T: int) -> float:
    """Approximate variance of one coefficient: c^2 T / n (about n/T reports each)."""
    return hr_constant(eps) ** 2 * T / n
