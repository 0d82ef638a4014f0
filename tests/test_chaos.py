"""The chaos harness (scripts/chaos.py, issue 43 item 1) detects what it is there to detect: an
orphan process, a key directory left behind, a run that does not verify (planted defects), and
a small-N chaos run has no defect (slow)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time

import pytest
from conftest import ROOT, sdp

_spec = importlib.util.spec_from_file_location("chaos", ROOT / "scripts" / "chaos.py")
chaos = importlib.util.module_from_spec(_spec)
sys.modules["chaos"] = chaos
_spec.loader.exec_module(chaos)


def _aborted_run(tmp_path):
    run, tmp = tmp_path / "run", tmp_path / "tmp"
    run.mkdir()
    tmp.mkdir()
    (run / "ABORTED.json").write_text(json.dumps({"why": "x", "failed_parties": {"a": "b"}}))
    return run, tmp


def test_a_planted_orphan_process_is_a_defect(tmp_path):
    run, tmp = _aborted_run(tmp_path)
    orphan = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "--out", str(run)]
    )
    try:
        time.sleep(0.5)
        outcome, defects, _ = chaos.classify(run, tmp)
    finally:
        orphan.kill()
    assert outcome == "defect"
    assert any(f"orphan process(es) [{orphan.pid}]" in d for d in defects), defects


def test_a_planted_key_directory_is_a_defect(tmp_path):
    run, tmp = _aborted_run(tmp_path)
    (tmp / "sdp-keys-planted" / "client-1").mkdir(parents=True)
    outcome, defects, _ = chaos.classify(run, tmp)
    assert outcome == "defect"
    assert any("key directory left" in d for d in defects), defects


def test_no_outcome_and_an_outcome_beside_an_abort_are_defects(tmp_path):
    run, tmp = tmp_path / "run", tmp_path / "tmp"
    run.mkdir()
    tmp.mkdir()
    assert chaos.classify(run, tmp)[1] == ["no outcome (neither result.json nor ABORTED.json)"]


def test_an_abort_that_does_not_name_the_faulted_party_is_a_defect():
    assert chaos.misnamed("aborted", "mix-2", "analyzer, mix-2") == ""
    assert chaos.misnamed("aborted", "", "analyzer") == ""  # no fault was applied
    assert chaos.misnamed("published", "mix-2", "") == ""
    assert "without naming mix-2" in chaos.misnamed("aborted", "mix-2", "mix-1, mix-3")
    assert "without naming mix-2" in chaos.misnamed("aborted", "mix-2", "mix-20")


def test_the_culprits_of_an_abort_include_whom_the_failed_parties_waited_for():
    reasons = {
        "client-1": "[client-1] error: timed out after 10 s waiting for 'state' from shuffler",
        "analyzer": "[analyzer] run aborted by client-1: ...",
        "mpc-1": "MPC step 'agree': timed out after 10 s waiting for server mpc-2 (MPyC party 1)",
    }
    assert chaos.culprits(reasons) == "client-1, mpc-1, mpc-2, shuffler"
    assert chaos.culprits({}, "interrupted by SIGTERM") == "interrupted by SIGTERM"


def test_the_table_is_built_from_run_logs_with_every_run(tmp_path, capsys):
    log = tmp_path / "runs.jsonl"
    recs = [
        {"shuffler": "mpc", "protocol": "gfim", "outcome": "aborted", "defects": []},
        {"shuffler": "mpc", "protocol": "gfim", "outcome": "defect", "defects": ["hang: x"]},
        {"shuffler": "trusted", "protocol": "grr", "outcome": "published", "defects": []},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert chaos.main(["--from-log", str(log), "--json", "--note", "n"]) == 1
    table = json.loads(capsys.readouterr().out)
    assert table["note"] == "n" and table["runs"] == recs
    assert table["cells"]["mpc/two-round"] == {
        "shuffler": "mpc", "protocol": "gfim", "runs": 2, "published": 0, "aborted": 1,
        "defects": 1, "defect_runs": [recs[1]],
    }  # fmt: skip
    assert table["cells"]["trusted/one-round"]["published"] == 1


@pytest.mark.slow
def test_a_run_that_does_not_verify_is_a_defect_and_an_honest_one_is_not(tmp_path):
    run, tmp = tmp_path / "run", tmp_path / "tmp"
    tmp.mkdir()
    sdp("run", "grr", "--shuffler", "trusted", "--users", "300", "--out", str(run), "--quiet",
        "--no-verify", check=True)  # fmt: skip
    trust = run.with_name("run.trust.json")
    assert chaos.classify(run, tmp, trust) == ("published", [], "")
    result = json.loads((run / "result.json").read_text())
    key = next(iter(result["estimate"]))
    result["estimate"][key] = "forged"
    (run / "result.json").write_text(json.dumps(result))
    outcome, defects, _ = chaos.classify(run, tmp, trust)
    assert outcome == "defect"
    assert any("published but does not verify" in d for d in defects), defects


@pytest.mark.slow
def test_a_small_chaos_run_has_no_defect(tmp_path, capsys):
    code = chaos.main(["--runs", "2", "--shufflers", "trusted", "--json", "--seed", "7"])
    table = json.loads(capsys.readouterr().out)
    print(json.dumps(table, indent=1))
    assert {c["runs"] for c in table["cells"].values()} == {2}
    assert code == 0 and all(c["defects"] == 0 for c in table["cells"].values())
