"""``sdp run prhr`` and ``sdp run pucm`` with real party processes: the trusted shuffler (fast),
the mix-net and the MPC shuffler (slow); every run verifies and ``sdp verify`` recomputes the
estimate."""

from __future__ import annotations

import json

import pytest
from conftest import sdp

SMALL = {
    "prhr": ["--users", "1000", "--domain", "4", "--epsilon", "3", "--delta", "1e-4",
             "--param", "rho=exact"],
    "pucm": ["--users", "600", "--domain", "4", "--epsilon", "6", "--delta", "1e-3",
             "--param", "noise_rate=exact", "--param", "buckets=8"],
}  # fmt: skip


def _run_and_verify(tmp_path, name: str, shuffler: str, extra: list[str]) -> dict:
    out = tmp_path / "run"
    sdp("run", name, "--shuffler", shuffler, *extra, "--out", str(out), "--quiet", check=True,
        timeout=1800)  # fmt: skip
    res = json.loads((out / "result.json").read_text())
    assert res["verified"]
    report = json.loads(sdp("verify", str(out), "--json", check=True).stdout)
    assert report["ok"] and "recompute estimate" in [c["name"] for c in report["checks"]]
    return res


def test_prhr_over_the_trusted_shuffler_verifies(tmp_path):
    res = _run_and_verify(tmp_path, "prhr", "trusted", SMALL["prhr"])
    counts = res["estimate"]["counts"]
    assert len(counts) == 4 and abs(sum(counts) - 1000) < 400


@pytest.mark.slow
@pytest.mark.parametrize(
    "name,shuffler",
    [("prhr", "mixnet"), ("prhr", "mpc"), ("pucm", "trusted"), ("pucm", "mixnet"), ("pucm", "mpc")],
)
def test_networked_runs_verify(tmp_path, name, shuffler):
    res = _run_and_verify(tmp_path, name, shuffler, SMALL[name])
    assert len(res["estimate"]["counts"]) == 4
