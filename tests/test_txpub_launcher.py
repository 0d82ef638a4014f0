"""The two-site publisher through the launcher: A and B as separate processes, Paillier."""

from __future__ import annotations

import json

import pytest
from conftest import sdp

from parties.launcher import evaluation_path


def _run(tmp_path, *extra, timeout=900):
    out = tmp_path / "run"
    sdp(
        "run",
        "txpub",
        "--dataset",
        "t10i4d100k",
        "--epsilon",
        "0.336",
        "--delta",
        "0.5",
        "--solver",
        "gs",
        "--out",
        str(out),
        "--quiet",
        *extra,
        check=True,
        timeout=timeout,
    )
    return out, json.loads((out / "result.json").read_text())


def test_small_secure_gs_matches_reference(tmp_path, datasets_dir):
    out, res = _run(tmp_path, "--transactions", "400", "--items", "8", "--param", "key_bits=512")
    ev = json.loads(evaluation_path(out).read_text())["evaluation"]
    assert res["verified"] and ev["feasible"]["ok"]
    assert ev["max_relative_difference_to_reference"] < 1e-6
    costs = json.loads(sdp("costs", str(out), "--json", check=True).stdout)
    lm = [
        ph
        for p in costs["parties"]
        if p["party"] == "A"
        for ph in p["phases"]
        if ph["phase"] == "lm"
    ][0]
    assert lm["n_rounds"] >= res["lm"]["iterations"] and lm["totals"]["bytes_sent"] > 0


@pytest.mark.slow
def test_issue_command_2000x20_2048_bit(tmp_path, datasets_dir):
    out, res = _run(tmp_path, "--transactions", "2000", "--items", "20")
    assert res["verified"]
    ev = json.loads(evaluation_path(out).read_text())["evaluation"]
    assert ev["max_relative_difference_to_reference"] < 1e-6


def test_unknown_txpub_parameter_is_one_clear_error(tmp_path):
    proc = sdp("run", "txpub", "--param", "nonsense=1", "--out", str(tmp_path / "r"), "--quiet")
    assert proc.returncode == 2 and "unknown parameters ['nonsense']" in proc.stderr
