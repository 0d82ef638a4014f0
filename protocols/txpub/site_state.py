"""One site's private columns and the local parts of every quantity the GS step needs (spec 001).

``SiteState`` holds a site's 0/1 columns D_s and support counts C_s and, at the public iterate
(X_s, W), computes what that site contributes on its own: per-transaction sums s^s, the per-item
aggregates, its local Gram blocks G_s^T diag(c) G_s, and the products G_s^T V, G_s M and
(G_s o G_s) v. The cross-site blocks come from the secure products, which the two-site oracle
(``parties.txpub.secure_oracle``) injects into the solver.
"""

from __future__ import annotations

import numpy as np

from protocols.txpub import lm


class SiteState:
    """One site's private columns and the local parts of every oracle quantity."""

    def __init__(self, D: np.ndarray, form: str) -> None:
        self.D = np.asarray(D, dtype=bool)
        self.Df = self.D.astype(float)
        self.C = self.D.sum(axis=0).astype(float)
        if (self.C <= 0).any():
            raise ValueError("SiteState: every item needs a positive support count")
        if form not in lm.FORMS:
            raise ValueError(f"SiteState: unknown form {form!r}")
        self.form = form

    def set_point(self, X: np.ndarray, W: np.ndarray) -> bool:
        if len(X) != self.D.shape[1] or len(W) != self.D.shape[0]:
            raise ValueError("SiteState.set_point: iterate has the wrong shape")
        if self.form == "x" and (X >= self.C).any():
            return False
        self.X, self.W = X, W
        self.beta = 1.0 / (X - self.C) if self.form == "x" else -1.0 / self.C
        return True

    def sums(self) -> np.ndarray:
        return self.Df @ lm.log_terms(self.X, self.C, self.form)

    def item_stats(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return lm.item_terms(self.Df.T @ self.W, self.X, self.C, self.form)

    def gram(self, weights: np.ndarray) -> np.ndarray:
        out = np.stack([(self.Df * w[:, None]).T @ self.Df for w in weights])
        return out * np.outer(self.beta, self.beta)[None]

    def gt(self, V: np.ndarray) -> np.ndarray:
        return self.beta[:, None] * (self.Df.T @ V)

    def gapply(self, M: np.ndarray) -> np.ndarray:
        return self.Df @ (self.beta[:, None] * M)

    def gsq(self, v: np.ndarray) -> np.ndarray:
        return self.Df @ (self.beta**2 * v)

    def counts(self, X: np.ndarray) -> np.ndarray:
        return X if self.form == "x" else self.C * -np.expm1(-X / self.C)
