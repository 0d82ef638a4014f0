"""The issue's networked runs: ``cnt_sgm`` over the mix-net, ``rsum_rm`` over the MPC shuffler and
``range`` over the mix-net complete and ``sdp verify`` passes; plus every family over the trusted
shuffler. Real processes: marked slow."""

from __future__ import annotations

import pytest
from conftest import check_names, result_of, sdp_run_to, verify_json

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
    sdp_run_to(out, name, "--shuffler", shuffler, *extra, timeout=1800)
    assert result_of(out)["verified"]
    assert "recompute estimate" in check_names(verify_json(out))
