"""End to end: ``sdp run grr`` with real party processes, then verify, costs, and tampering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import copy_run, keys_of, resign_transcript, sdp, sdp_run_to

from parties.launcher import evaluation_path
from parties.verify.run import verify_run


@pytest.fixture(scope="module")
def grr_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("grr") / "run"
    args = ("--shuffler", "trusted", "--domain", "10", "--epsilon", "1.0", "--seed", "7")
    proc = sdp_run_to(out, "grr", *args, "--users", "10000", keys=True)
    assert "verified" in proc.stdout
    return out


def test_run_writes_result_transcripts_costs(grr_run):
    result = json.loads((grr_run / "result.json").read_text())
    f = result["estimate"]["frequencies"]
    assert len(f) == 10 and abs(sum(f) - 1) < 1e-9
    assert result["verified"] is True
    ev = json.loads(evaluation_path(grr_run).read_text())["evaluation"]
    # the estimate is close to the truth (10 standard deviations of the exact variance)
    assert ev["mse"] < 10 * ev["expected_mse"]
    names = {p.stem for p in (grr_run / "transcripts").glob("*.jsonl")}
    assert names == {"analyzer", "shuffler", "client-1", "client-2"}
    assert not (grr_run / "ABORTED.json").exists()


def test_verify_command_passes(grr_run):
    proc = sdp("verify", str(grr_run), "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["ok"], report
    assert {c["name"] for c in report["checks"]} >= {
        "transcript chains and signatures",
        "cross-party consistency",
        "recompute estimate",
    }


def test_costs_json_reports_bytes_per_party_and_phase(grr_run):
    costs = json.loads(sdp("costs", str(grr_run), "--json", check=True).stdout)
    by_party = {
        p["party"]: {ph["phase"]: ph["totals"] for ph in p["phases"]} for p in costs["parties"]
    }
    # each client sends 10000/2 reports of 8 bytes plus framing
    for c in ("client-1", "client-2"):
        assert by_party[c]["submit"]["bytes_sent"] >= 5000 * 8
    assert by_party["shuffler"]["submit"]["bytes_recv"] == sum(
        by_party[c]["submit"]["bytes_sent"] for c in ("client-1", "client-2")
    )
    assert by_party["analyzer"]["deliver"]["bytes_recv"] > 10000 * 8


def test_costs_table_and_plot(grr_run, tmp_path):
    png = tmp_path / "costs.png"
    proc = sdp("costs", str(grr_run), "--by-round", "--plot", str(png), check=True)
    assert "shuffler" in proc.stdout and png.stat().st_size > 1000


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("party", ["analyzer", "shuffler", "client-1"])
@pytest.mark.parametrize("where", [0.05, 0.3, 0.5, 0.7, 0.99])
def test_flipping_any_transcript_byte_fails_and_names_entry(grr_run, tmp_path, party, where):
    run = copy_run(grr_run, tmp_path, "copy")
    path = run / "transcripts" / f"{party}.jsonl"
    raw = path.read_bytes()
    offset = int(where * (len(raw) - 2))
    if raw[offset : offset + 1] == b"\n":
        offset -= 1
    line = raw[:offset].count(b"\n")
    _flip(path, offset)
    report = verify_run(run, progress=False)
    assert not report.ok
    assert f"{party} entry" in report.first_failure
    # the failure names the flipped entry or (if only its 'hash' text changed) the next one
    named = int(report.first_failure.split(f"{party} entry ")[1].split()[0])
    assert named in (line, line + 1), report.first_failure


def test_flipping_a_public_blob_fails(grr_run, tmp_path):
    run = copy_run(grr_run, tmp_path, "copy")
    blob = next((run / "transcripts" / "analyzer.blobs").iterdir())
    _flip(blob, 10)
    report = verify_run(run, progress=False)
    assert not report.ok and "blob" in report.first_failure


def test_truncated_transcript_fails(grr_run, tmp_path):
    run = copy_run(grr_run, tmp_path, "copy")
    path = run / "transcripts" / "shuffler.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))  # drop the final signed checkpoint
    report = verify_run(run, progress=False)
    assert not report.ok and "no signed clean close" in report.first_failure
    assert "shuffler" in report.first_failure


def test_resigned_forgery_caught_by_cross_party_check(grr_run, tmp_path):
    """A party rewriting its own transcript with its own key still disagrees with its peer."""
    run = copy_run(grr_run, tmp_path, "copy")
    path = run / "transcripts" / "shuffler.jsonl"
    entries = [json.loads(x) for x in path.read_text().splitlines()]
    target = next(e for e in entries if e["dir"] == "recv" and e["ty"] == "submit")
    target["dg"] = "00" * 32
    resign_transcript(run, "shuffler", entries, keys_of(grr_run))
    report = verify_run(run, progress=False)
    assert not report.ok
    assert report.first_failure.startswith("cross-party consistency")
    assert f"shuffler entry {target['i']}" in report.first_failure


def test_changed_published_estimate_is_caught(grr_run, tmp_path):
    run = copy_run(grr_run, tmp_path, "copy")
    res = json.loads((run / "result.json").read_text())
    res["estimate"]["frequencies"][0] += 0.01
    (run / "result.json").write_text(json.dumps(res))
    report = verify_run(run, progress=False)
    assert not report.ok and "result.json" in report.first_failure
