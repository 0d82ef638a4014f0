"""The issue's networked runs: ``cnt_sgm`` over the mix-net, ``rsum_rm`` over the MPC shuffler and
``range`` over the mix-net complete and ``sdp verify`` passes; plus every family over the trusted
shuffler. Real processes: marked slow."""

from __future__ import annotations

import json

import pytest
from conftest import sdp

RUNS = [
    ("cnt_sgm", "mixnet", ["--users", "300"]),
    ("rsum_rm", "mpc", ["--users", "10000"]),
    ("range", "mixnet", ["--users", "2000", "--domain", "8", "--param", "bound=vr"]),
    ("hist_mm", "trusted", ["--users", "10000", "--domain", "4"]),
    ("put", "trusted", ["--users", "3000", "--domain", "8"]),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,shuffler,extra", RUNS)
def test_networked_run_verifies(tmp_path, name, shuffler, extra):
    out = tmp_path / "run"
    sdp(
        "run",
        name,
        "--shuffler",
        shuffler,
        *extra,
        "--out",
        str(out),
        "--quiet",
        check=True,
        timeout=1800,
    )
    res = json.loads((out / "result.json").read_text())
    assert res["verified"]
    report = json.loads(sdp("verify", str(out), "--json", check=True).stdout)
    assert "recompute estimate" in [c["name"] for c in report["checks"]]
