"""Shutdown that leaves nothing (issue 43 item 4): SIGKILL of ``sdp run`` (no clean-up of its
own runs) or of the process that started it stops every party and deletes the private key
directory (the parties' parent-death signal and the launcher's watchdog,
``parties.runtime.cleanup``); real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from test_runtime_signals import ROOT, assert_nothing_left, start_run, wait_until_running

TRUSTED = ("analyzer", "shuffler", "client-1", "client-2")
# the analyzer stalls on entering its first phase: the run is reliably under way when killed
STALL = {"SDP_FAULT_DELAY": "analyzer:deliver:60"}


def test_sigkill_of_sdp_run_leaves_no_party_and_no_key(tmp_path):
    os.environ.update(STALL)
    try:
        proc, run, tmp = start_run(tmp_path, ["grr", "--shuffler", "trusted", "--users", "500"])
    finally:
        for k in STALL:
            del os.environ[k]
    try:
        wait_until_running(run, TRUSTED, "client-1", "submit")
        assert list(tmp.glob("sdp-keys-*")), "the run's key directory is where the test looks"
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
    finally:
        proc.kill()
    assert_nothing_left(run, tmp)
    assert not (run / "result.json").exists()


def test_sigkill_of_the_launchers_parent_stops_the_run(tmp_path):
    """The launcher's parent (a terminal, a supervisor) dies: the launcher gets SIGTERM from
    the kernel and stops every party, as on Ctrl-C."""
    run, tmp = tmp_path / "run", tmp_path / "tmp"
    tmp.mkdir()
    wrapper = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-m', 'parties.cli', 'run', 'grr', '--shuffler', "
        f"'trusted', '--users', '500', '--out', {str(run)!r}, '--quiet'])\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", wrapper],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp), **STALL},
    )
    try:
        wait_until_running(run, TRUSTED, "client-1", "submit")
        parent.send_signal(signal.SIGKILL)
        parent.wait(60)
    finally:
        parent.kill()
    assert_nothing_left(run, tmp)
    deadline = time.monotonic() + 60
    while not (run / "ABORTED.json").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "interrupted by SIGTERM" in (run / "ABORTED.json").read_text()
    assert not (run / "result.json").exists()
