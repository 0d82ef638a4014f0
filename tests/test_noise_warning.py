"""Results too noisy to use come with one plain-words warning (issue 30 item 3), computed from
public parameters only (n, epsilon, domain sizes): on 27f5c45 psrr-ss on 200 rows (expected SSE
about 6) and GFIM on a large item universe (precision near 0) printed their estimates without a
word."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import sdp

from protocols.base import simulate
from protocols.workloads import get_workload


@pytest.mark.parametrize("name", ["psrr-ss", "srr-ms", "arr-ss"])
def test_multidim_warns_on_200_rows_not_on_adult(name):
    small = get_workload(name, {"users": 200}).protocol.noise_warning()
    assert small and "too few users" in small and "more users" in small
    assert get_workload(name, {"users": 45222}).protocol.noise_warning() is None


def test_grr_warns_only_when_a_frequency_is_below_its_noise():
    assert get_workload("grr", {"users": 300, "domain": 100}).protocol.noise_warning()
    assert get_workload("grr", {"users": 100000, "domain": 10}).protocol.noise_warning() is None


def _abs_errors(w) -> float:
    """Mean |estimated - true| frequency of the reported top items (same encoder/analyzer)."""
    est = simulate(w.protocol, w.records, np.random.default_rng(0))
    rows = w.report(est)["table"]["rows"]
    return float(np.mean([abs(float(r[2]) - float(r[3])) for r in rows]))


def test_gfim_warning_matches_useless_estimates():
    """The warning fires where the reported frequencies are mostly noise, and not where they
    are accurate (the same data and users, a padding length that keeps the noise low)."""
    bad = get_workload("gfim", {"users": 50000, "dataset": "normal-50k", "ell": 50, "k": 5})
    assert bad.protocol.noise_warning() and _abs_errors(bad) > 0.3
    good = get_workload(
        "gfim", {"users": 50000, "dataset": "normal-50k", "ell": 5, "k": 5, "epsilon": 4}
    )
    assert good.protocol.noise_warning() is None and _abs_errors(good) < 0.1


def test_sdp_run_prints_the_warning_in_one_line(tmp_path):
    proc = sdp("run", "psrr-ss", "--users", "200", "--out", str(tmp_path / "r"), "--quiet",
               "--no-verify", check=True)  # fmt: skip
    lines = [x for x in proc.stderr.splitlines() if x.startswith("WARNING")]
    assert len(lines) == 1 and "too few users" in lines[0]
