"""Every protocol's networked run (trusted shuffler, real processes) publishes a privacy ledger
whose every release covers the reports received; with half the users' submissions dropped each
either refuses (non-zero exit, one line, nothing published) or re-accounts at the count received,
never the statement for n. Slow: about 30 runs."""

from __future__ import annotations

import json

import pytest
from conftest import sdp

PROTOCOLS = {
    "grr": [],
    "srr-ms": ["--users", "20000"],
    "arr-ss": ["--users", "20000"],
    "psrr-ss": ["--users", "20000"],
    "sue-ms": ["--users", "45222"],
    "oue-ldp": ["--users", "5000"],
    "hp-sdp": ["--users", "20000", "--domain", "64"],
    "gfim": ["--users", "5000", "--param", "ell=10"],
    "ldpminer": ["--users", "5000", "--param", "ell=10"],
    "calm-psrr-ss": ["--users", "20000"],
    "calm-srr-ms": ["--users", "20000"],
    "calm-arr-ss": ["--users", "20000"],
    "splitmix-sum": ["--users", "5000"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PROTOCOLS))
def test_networked_ledger_and_dropout(name, tmp_path):
    args = ["run", name, *PROTOCOLS[name], "--quiet", "--json", "--no-verify"]
    full = sdp(*args, "--out", str(tmp_path / "full"), timeout=900)
    assert full.returncode == 0, full.stderr
    rel = json.loads(full.stdout)["privacy"]["releases"]
    assert rel and all(r["n_received"] >= r["n_accounted"] for r in rel)
    half = sdp(*args, "--simulate-dropout", "0.5", "--out", str(tmp_path / "half"), timeout=900)
    if half.returncode != 0:  # refused: one line, nothing published
        lines = [x for x in half.stderr.splitlines() if x.startswith("sdp run:")]
        assert len(lines) == 1 and "privacy gate refused" in lines[0], half.stderr
        assert not (tmp_path / "half" / "result.json").exists()
    else:  # re-accounted at the count received, never the statement for n
        n_full = max(r["n_received"] for r in rel)
        for r in json.loads(half.stdout)["privacy"]["releases"]:
            assert r["n_received"] >= r["n_accounted"]  # covered, or re-accounted at it
            assert r["n_received"] < n_full or "noisy" in r["what"]
