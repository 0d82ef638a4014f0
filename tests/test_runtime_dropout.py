"""Dropout with honest accounting (real processes): a client party that dies mid-submission does
not stop the run while at least ``min_users`` users arrived; the published ledger is for the
survivors and verifies; below ``min_users`` nothing is published (one line, non-zero exit)."""

from __future__ import annotations

import json

import pytest
from conftest import sdp, sdp_run_to

from parties.verify.run import verify_run


def _run(tmp_path, min_users: int, name: str):
    out = tmp_path / name
    proc = sdp(
        "run",
        "grr",
        "--users",
        "8000",
        "--clients",
        "4",
        "--min-users",
        str(min_users),
        "--out",
        str(out),
        "--quiet",
        "--json",
        env={"SDP_FAULT_KILL": "client-2:submit"},
    )
    return out, proc


def test_one_of_four_client_parties_dies_and_the_run_completes(tmp_path):
    out, proc = _run(tmp_path, 5000, "ok")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["dropped_clients"] == ["client-2"]
    (rel,) = res["privacy"]["releases"]
    assert rel["n_received"] == 6000 and rel["n_accounted"] == 5000  # calibrated at min_users
    assert res["privacy"]["total"]["eps"] <= 1.0  # the target holds for >= min_users users
    assert sum(c["users"] for c in res["clients"]["round 0"].values()) == 6000
    assert "client-2" in res["faults"]
    report = verify_run(out, progress=False)
    assert report.ok, report.first_failure
    assert any("client-2" in c.detail for c in report.checks if c.name == "party status (signed)")


def test_below_min_users_nothing_is_published(tmp_path):
    out, proc = _run(tmp_path, 7000, "refused")
    assert proc.returncode != 0
    lines = [x for x in proc.stderr.splitlines() if x.startswith("sdp run:")]
    assert len(lines) == 1 and "privacy gate refused" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (out / "result.json").exists() and (out / "ABORTED.json").exists()
    aborted = json.loads((out / "ABORTED.json").read_text())
    assert "client-2" in aborted["failed_parties"] and aborted["why"] == "privacy gate"


def test_simulated_dropout_is_re_accounted_or_refused(tmp_path):
    out = tmp_path / "half"
    half = ("--users", "8000", "--simulate-dropout", "0.5")
    proc = sdp_run_to(out, "grr", *half, "--max-epsilon", "5", "--json", check=False)
    assert proc.returncode == 0, proc.stderr
    (rel,) = json.loads(proc.stdout)["privacy"]["releases"]
    assert rel["reaccounted"] and rel["n_received"] == 4000 and rel["eps"] > 1.0
    refused = sdp_run_to(tmp_path / "no", "grr", *half, check=False)
    assert refused.returncode != 0 and not (tmp_path / "no" / "result.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "shuffler, phase", [("mixnet", "mix.submit"), ("mpc", "mpc-submit")], ids=["mixnet", "mpc"]
)
def test_dropout_over_the_cryptographic_shufflers(tmp_path, shuffler, phase):
    """One of four client parties killed mid-submission: the servers leave it out (all of them),
    the run completes above min_users with the ledger for the survivors, and verifies."""
    out = tmp_path / shuffler
    proc = sdp(
        "run", "grr", "--shuffler", shuffler, "--users", "4000", "--clients", "4",
        "--min-users", "2500", "--out", str(out), "--quiet", "--json",
        env={"SDP_FAULT_KILL": f"client-2:{phase}"}, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    (rel,) = res["privacy"]["releases"]
    assert rel["n_received"] == 3000 and rel["n_accounted"] == 2500
    assert "client-2" in res["faults"]
    assert verify_run(out, progress=False).ok
