"""Privacy audits (the project's auditor) of the remaining local randomizers whose local epsilon
the catalogue claims: MURS's reports, RSum_RR's unary bits, the range tree's level reports, and
the LDP k-RR baseline. Each passes at its claimed epsilon and comes reasonably close to it."""

from __future__ import annotations

import numpy as np

from protocols.histograms.murs import SurveyMURS
from protocols.oracles.grr import grr_perturb
from protocols.oracles.privacy_audit import audit_randomizer
from protocols.ranges.tree import RangeTree
from protocols.rng import experiment_rng
from protocols.sums.rsum_rr import RSumRR

SAMPLES = 1_000_000


def test_murs_report_randomizer():
    p = SurveyMURS(8, 20_000, 0.9, 1e-6)
    fam = p.family

    def sample(v, m, rng):
        rec = np.stack([np.full(m, v), np.zeros(m, dtype=np.int64)], axis=1)
        msg = p.encode(rec, rng)["reports"]
        a, b = np.divmod(msg[:, 0], fam.P)
        y = msg[:, 1]
        return 2 * (fam.hash(a + 1, b, 0) == y).astype(np.int64) + (fam.hash(a + 1, b, 1) == y)

    r = audit_randomizer(
        sample, 0, 1, 4, p.eps_l, n_samples=SAMPLES, rng=experiment_rng(17, "murs")
    )
    assert r.passed and r.eps_lower > 0.6 * p.eps_l


def test_rsum_rr_unary_randomizer():
    p = RSumRR(3000, 0.9, 1e-6, precision=2)  # two bits per user, eps_l per bit ~ 2
    claimed = p.privacy()["eps_local"]

    def sample(v, m, rng):
        return p.encode(np.full(m, float(v)), rng)["bits"].reshape(m, 2).sum(axis=1)

    r = audit_randomizer(sample, 0, 1, 3, claimed, n_samples=SAMPLES, rng=experiment_rng(17, "rr"))
    assert r.passed and r.eps_lower > 0.85 * claimed


def test_range_tree_level_reports():
    p = RangeTree(4, 5000, 0.9, 1e-6, branching=2)
    claimed = p.privacy()["eps_local"]

    def sample(v, m, rng):
        b = p.encode(np.full(m, v), rng)
        return b["level1"][:, 0] * 4 + b["level2"][:, 0]

    r = audit_randomizer(
        sample, 0, 3, 8, claimed, n_samples=SAMPLES, rng=experiment_rng(17, "tree")
    )
    assert r.passed and r.eps_lower > 0.85 * claimed


def test_ldp_krr_baseline():
    def sample(v, m, rng):
        return grr_perturb(np.full(m, v), 8, 1.5, rng)

    r = audit_randomizer(sample, 0, 1, 8, 1.5, n_samples=SAMPLES, rng=experiment_rng(17, "krr"))
    assert r.passed and r.eps_lower > 0.9 * 1.5
