"""The MPC shuffler through the launcher: every party its own process, MPyC mesh with TLS."""

from __future__ import annotations

import json

import pytest
from conftest import result_of, sdp_run_to

from parties.launcher import evaluation_path


def test_grr_over_mpc_shuffler_verifies(mpc_grr_run):
    out = mpc_grr_run  # 600 users, 3 servers (the session's shared run)
    res = result_of(out)
    assert res["verified"] and res["messages"]["reports"] == 600
    ev = json.loads(evaluation_path(out).read_text())["evaluation"]
    assert ev["mse"] < 10 * ev["expected_mse"]
    costs = json.loads((out / "costs.json").read_text())
    shuffle = [
        ph["totals"]["bytes_sent"]
        for p in costs["parties"]
        for ph in p["phases"]
        if ph["phase"] == "mpc-shuffle"
    ]
    assert len(shuffle) == 3 and all(b > 600 * 4 for b in shuffle)  # MPyC mesh traffic counted


def test_killed_mpc_server_aborts_and_names_it(tmp_path):
    out = tmp_path / "run"
    args = ("--shuffler", "mpc", "--users", "5000", "--phase-timeout", "30")
    proc = sdp_run_to(out, "grr", *args, env={"SDP_FAULT_KILL": "mpc-2:mpc-shuffle"}, check=False)
    assert proc.returncode != 0
    assert not (out / "result.json").exists()
    aborted = json.loads((out / "ABORTED.json").read_text())
    assert "mpc-2" in aborted["failed_parties"]
    others = [v for k, v in aborted["failed_parties"].items() if k != "mpc-2"]
    assert others and all("mpc-2" in v or "server2" in v for v in others), aborted


@pytest.mark.slow  # fast: test_security_mpc_malicious's splitmix-sum over MPC (malicious
# mode, its share count checked too) and test_semi_honest_is_an_explicit_option
def test_splitmix_sum_over_the_mpc_shuffler(tmp_path):
    out = tmp_path / "run"
    # shares mod q > 64: no affordable domain check on shares (issue 25)
    args = ("--shuffler", "mpc", "--users", "500", "--param", "security=semi-honest")
    sdp_run_to(out, "splitmix-sum", *args)
    res = result_of(out)
    assert res["verified"] and res["messages"]["shares"] == 500 * res["privacy"]["shares"]
