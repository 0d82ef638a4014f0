"""Honest runs with faults verify (issue 31, item 6; issue 25, H8), on real processes.

* A client party that read its own data, published its signed data report and was then killed:
  with the privacy gate refusing the run verifies as "refused, nothing published" (with the
  gate's signed reason), with ``--min-users`` the published run verifies; either way
  ``sdp verify`` names the dropout in plain words. On 27f5c45 both failed with "client-2
  published but did not close its transcript cleanly" (and a refused run never verified).
* A client whose submission reaches the shuffler after its phase deadline: the shuffler signs
  that it stopped waiting (a ``missed`` entry), the run publishes without it, and verify names
  the late party instead of failing with "message 'submit' to shuffler was never logged as
  received".
* ``--simulate-dropout 0.5`` over the trusted shuffler verifies for every protocol of
  ``sdp run`` (a few in the fast suite, all under ``slow``); ``sdp run murs`` verifies (MURS's
  own ``fakes`` is not the shuffler's statement).
* The trusted shuffler's fake count is reported as its own unverifiable claim (H8).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import ROOT, sdp

from parties.verify.run import verify_run

DATA = ROOT / "tests" / "data"
KILL_AFTER_REPORT = {"SDP_FAULT_KILL": "client-2:encode"}  # after its signed data report


@pytest.fixture(scope="module")
def survey_head(tmp_path_factory) -> Path:
    """The first 600 records of the shipped survey file (a small private file)."""
    lines = gzip.decompress((DATA / "survey.csv.gz").read_bytes()).splitlines(keepends=True)
    path = tmp_path_factory.mktemp("data") / "survey-600.csv.gz"
    path.write_bytes(gzip.compress(b"".join(lines[:601])))
    return path


def _details(report, name: str) -> str:
    return " ".join(c.detail for c in report.checks if c.name == name)


def _killed_after_report(tmp_path: Path, data: Path, shuffler: str, publish: bool):
    out = tmp_path / f"{shuffler}-{'published' if publish else 'refused'}"
    gate = ["--min-users", "300", "--max-epsilon", "10"] if publish else []
    proc = sdp(
        "run", "psrr-ss", "--shuffler", shuffler, "--data", str(data),
        "--schema", str(DATA / "survey.toml"), "--clients", "3", *gate,
        "--out", str(out), "--quiet", "--json", env=KILL_AFTER_REPORT, timeout=600,
    )  # fmt: skip
    return out, proc


def _check_killed_after_report(out: Path, proc, publish: bool) -> None:
    assert "Traceback" not in proc.stderr
    # the client read its data (no data report is published: issue 26) and died before
    # sending anything; its transcript has no close
    c2 = [json.loads(x) for x in (out / "transcripts" / "client-2.jsonl").read_text().splitlines()]
    assert not any(e["dir"] == "publish" and e["ty"] == "data-report" for e in c2)
    assert c2[-1]["dir"] == "checkpoint" and not any(e["dir"] == "close" for e in c2)
    report = verify_run(out, progress=False)
    assert report.ok, report.first_failure
    happened = _details(report, "what happened")
    assert "client-2 dropped out before sending anything" in happened, happened
    if publish:
        assert proc.returncode == 0, proc.stderr
        assert "400 of 600 users counted" in happened, happened
        assert "accounted for 300 users" in happened, happened
        assert "verification FAILED" not in proc.stderr
    else:
        assert proc.returncode != 0 and not (out / "result.json").exists()
        done = _details(report, "run completed")
        assert done.startswith("refused, nothing published") and "privacy gate" in done, done
        # nor did a mix server publish the round's record: its plaintexts are the release the
        # gate refused (spec 05 M-3; before, the combining server published it first)
        for path in (out / "transcripts").glob("*.jsonl"):
            entries = [json.loads(x) for x in path.read_text().splitlines()]
            assert not [e for e in entries if e["dir"] == "publish" and e["ty"] == "mixnet.record"]
        assert "verification FAILED" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("publish", [False, True], ids=["gate-refuses", "min-users-publishes"])
def test_client_killed_after_its_data_report_trusted(tmp_path, survey_head, publish):
    out, proc = _killed_after_report(tmp_path, survey_head, "trusted", publish)
    _check_killed_after_report(out, proc, publish)


@pytest.mark.slow
@pytest.mark.parametrize("publish", [False, True], ids=["gate-refuses", "min-users-publishes"])
@pytest.mark.parametrize("shuffler", ["mixnet", "mpc"])
def test_client_killed_after_its_data_report_crypto(tmp_path, survey_head, shuffler, publish):
    out, proc = _killed_after_report(tmp_path, survey_head, shuffler, publish)
    _check_killed_after_report(out, proc, publish)


def test_late_submission_is_left_out_and_named(tmp_path):
    """client-2 stalls past the shuffler's phase deadline before it submits (the analyzer is
    slow to start, so its own deadline is later): the shuffler signs that it stopped waiting,
    publishes without client-2, and verify names client-2 as late."""
    out = tmp_path / "late"
    proc = sdp(
        "run", "grr", "--users", "3000", "--clients", "3", "--min-users", "1500",
        "--phase-timeout", "8", "--out", str(out), "--quiet", "--json",
        env={"SDP_FAULT_DELAY": "client-2:submit:12,analyzer:deliver:6"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["dropped_clients"] == ["client-2"] and res["verified"]
    shuffler = [
        json.loads(x) for x in (out / "transcripts" / "shuffler.jsonl").read_text().splitlines()
    ]
    missed = [e for e in shuffler if e["dir"] == "missed"]
    assert [(e["peer"], e["ty"]) for e in missed] == [("client-2", "submit")]
    report = verify_run(out, progress=False)
    assert report.ok, report.first_failure
    happened = _details(report, "what happened")
    assert "client-2 was late: its 'submit'" in happened, happened
    assert "2,000 of 3,000 users counted" in happened, happened


def test_unexplained_missing_message_still_fails(trusted_grr_run, tmp_path):
    """The ``missed`` entry is what explains a lost message: a clean receiver that never
    logged a sender's message and signed no such entry still fails verification."""
    from conftest import copy_run, keys_of, resign_transcript, transcript

    out = copy_run(trusted_grr_run, tmp_path)
    entries = transcript(out, "shuffler")
    kept = [e for e in entries if not (e["dir"] == "recv" and e["ty"] == "submit")]
    for i, e in enumerate(kept):
        e["i"] = i
    resign_transcript(out, "shuffler", kept, keys_of(trusted_grr_run))
    report = verify_run(out, progress=False)
    assert not report.ok and "never logged as received" in report.first_failure


# every protocol of ``sdp run`` over the trusted shuffler, half of the users' submissions lost
USERS = {"hist_kr": 20000, "hist_mm": 20000, "range": 20000, "rsum_kr": 20000, "rsum_rm": 20000}
EXTRA = {"range": ["--domain", "8"]}
FAST = ["hp-sdp", "gfim"]


def _all_protocols() -> list[str]:
    from protocols.workloads import registered

    return sorted(registered())


def _simulated_dropout(tmp_path: Path, protocol: str) -> None:
    users = USERS.get(protocol, 2000)
    out = tmp_path / protocol
    proc = sdp(
        "run", protocol, "--shuffler", "trusted", "--users", str(users),
        "--simulate-dropout", "0.5", "--max-epsilon", "100", *EXTRA.get(protocol, []), "--out", str(out), "--quiet",
    )  # fmt: skip
    assert "Traceback" not in proc.stderr and out.exists(), proc.stderr
    report = verify_run(out, progress=False)
    assert report.ok, f"{protocol}: {report.first_failure}"
    if (out / "result.json").exists():
        assert proc.returncode == 0, proc.stderr
        assert f"of {users:,} users counted" in _details(report, "what happened")
    else:  # the gate refused (a guarantee that cannot be re-accounted for fewer users)
        assert _details(report, "run completed").startswith("refused, nothing published")


@pytest.mark.parametrize("protocol", FAST)
def test_simulated_dropout_verifies(tmp_path, protocol):
    _simulated_dropout(tmp_path, protocol)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [p for p in _all_protocols() if p not in FAST])
def test_simulated_dropout_verifies_every_protocol(tmp_path, protocol):
    _simulated_dropout(tmp_path, protocol)


def test_murs_run_verifies(tmp_path):
    """MURS states its own fakes (users who send one) in its privacy statement; on 27f5c45
    every ``sdp run murs`` failed: "describes fakes the shuffler never announced"."""
    out = tmp_path / "murs"
    proc = sdp("run", "murs", "--users", "2000", "--out", str(out), "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verified"]
    assert verify_run(out, progress=False).ok


def test_trusted_shuffler_fake_count_is_its_own_claim(grr_fakes_run):
    """H8: the trusted shuffler's fake count cannot be checked; verify says so in one line."""
    proc = sdp("verify", str(grr_fakes_run), "--json")
    rep = json.loads(proc.stdout)
    assert rep["ok"], rep
    lines = [w for w in rep["warnings"] if "fake count" in w]
    assert len(lines) == 1 and "its own unverifiable claim" in lines[0], rep["warnings"]


def test_what_happened_in_words_from_signed_entries(tmp_path):
    """The plain-words summary on hand-made signed entries (no processes): a message logged
    after its receiver's ``missed`` entry names its sender as late; a dropout is described by
    the last thing its signed transcript shows."""
    from parties.verify.faults import what_happened
    from parties.verify.transcripts import Transcript

    cluster = {
        "run": {"params": {"users": 100}},
        "party": [{"name": n, "role": r} for n, r in
                  [("analyzer", "analyzer"), ("shuffler", "shuffler"), ("client-1", "client"),
                   ("client-2", "client")]],
    }  # fmt: skip
    shuffler = Transcript("shuffler", [
        {"i": 1, "dir": "missed", "peer": "client-1", "ty": "submit", "ph": "submit", "rd": 0},
        {"i": 2, "dir": "recv", "peer": "client-1", "ty": "submit", "ph": "submit", "rd": 0},
    ], status="ok")  # fmt: skip
    client2 = Transcript("client-2", [
        {"i": 1, "dir": "send", "peer": "shuffler", "ty": "submit", "ph": "submit", "rd": 0},
    ])  # fmt: skip
    said = what_happened(
        tmp_path, cluster, {"shuffler": shuffler, "client-2": client2},
        frozenset({"analyzer", "shuffler", "client-1"}), [], None,
    )  # fmt: skip
    assert said == [
        "client-2 dropped out after sending 1 message(s) (last: 'submit' to shuffler, phase "
        "submit round 0)",
        "client-1 was late: its 'submit' reached shuffler (entry 2) only after shuffler had "
        "signed that a wait for it ran out (entry 1)",
    ]
