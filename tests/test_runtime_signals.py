"""Stopping a run stops it: SIGINT/SIGTERM to ``sdp run`` or to one ``sdp party`` ends every
process of the run, each transcript closed as aborted, nothing published (real processes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, sdp

LIVENESS_S = 60  # a liveness bound for the test, not a performance target


def _alive(run: Path) -> list[int]:
    out = subprocess.run(["pgrep", "-f", f"--out {run}"], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


def _wait_for_phase(run: Path, party: str, phase: str) -> None:
    path = run / "transcripts" / f"{party}.jsonl"
    deadline = time.monotonic() + LIVENESS_S
    while time.monotonic() < deadline:
        if path.exists() and f'"ph":"{phase}"' in path.read_text():
            return
        time.sleep(0.1)
    raise AssertionError(f"{party} never reached {phase}")


def _closes(run: Path) -> dict[str, str]:
    out = {}
    for t in (run / "transcripts").glob("*.jsonl"):
        closes = [json.loads(x) for x in t.read_text().splitlines() if '"dir":"close"' in x]
        out[t.stem] = closes[-1]["status"] if closes else "none"
    return out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_sdp_run_stops_every_party(tmp_path, sig):
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "parties.cli", "run", "grr", "--shuffler", "mixnet"]
        + ["--users", "6000", "--out", str(run), "--quiet"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_phase(run, "mix-1", "mix.submit")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=LIVENESS_S)
    assert proc.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[sig]
    assert f"interrupted by {sig.name}" in err and "Traceback" not in err
    deadline = time.monotonic() + LIVENESS_S
    while _alive(run) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(run), "party processes outlived the launcher"
    assert not (run / "result.json").exists() and (run / "ABORTED.json").exists()
    assert json.loads((run / "ABORTED.json").read_text())["why"] == f"interrupted by {sig.name}"
    closes = _closes(run)
    assert set(closes.values()) <= {"aborted", "ok"} and "aborted" in closes.values(), closes
    assert closes["analyzer"] == "aborted"
    time.sleep(2)  # nothing is published later either
    assert not (run / "result.json").exists()


def test_sigterm_to_one_party_aborts_the_run(tmp_path):
    out = tmp_path / "parties"
    sdp(
        "cluster",
        "init",
        "grr",
        "--users",
        "20000",
        "--shuffler",
        "mixnet",
        "--out",
        str(out),
        "--port-base",
        str(20000 + os.getpid() % 20000),
        check=True,
    )
    run = tmp_path / "run"
    procs = {
        d.name: subprocess.Popen(
            [sys.executable, "-m", "parties.cli", "party", "--dir", str(d), "--out", str(run)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for d in sorted(out.iterdir())
        if d.is_dir()
    }
    _wait_for_phase(run, "mix-2", "mix.submit")
    procs["mix-2"].send_signal(signal.SIGTERM)
    codes = {n: p.wait(timeout=LIVENESS_S) for n, p in procs.items()}
    assert codes["mix-2"] == 143
    assert codes["analyzer"] != 0, "the run must not complete without a mixer it needed"
    for p in procs.values():
        assert "Traceback" not in p.stderr.read()
    assert _closes(run)["mix-2"] == "aborted"
    assert not (run / "result.json").exists()
