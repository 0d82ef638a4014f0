"""A peer's abort stops every other party at once, with that abort as its reason (issue 30 item
10). On 27f5c45, after SIGINT to the analyzer of a cluster, the mix servers went on computing
their proofs and chain checks and recorded another failure ("only 1 servers left to decrypt")
as their reason: the analyzer's ``_abort`` waited until their CPU-bound work was done."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from conftest import sdp, start_parties

LIVENESS_S = 120  # a liveness bound for the test, not a performance target


def test_sigint_to_the_analyzer_stops_busy_mix_servers_with_its_reason(tmp_path):
    out = tmp_path / "parties"
    sdp(
        "cluster", "init", "grr", "--users", "30000", "--shuffler", "mixnet",
        "--out", str(out), "--port-base", str(21000 + os.getpid() % 20000),
        check=True,
    )  # fmt: skip
    run = tmp_path / "run"
    procs = start_parties(out, run, stdout=subprocess.DEVNULL)
    path = run / "transcripts" / "mix-1.jsonl"
    deadline = time.monotonic() + LIVENESS_S
    while time.monotonic() < deadline:  # both clients have submitted and left: the mix
        if path.exists() and path.read_text().count('"ty":"_bye"') >= 2:  # servers are busy
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the clients never finished submitting")
    time.sleep(1.0)
    procs["analyzer"].send_signal(signal.SIGINT)
    signalled = time.monotonic()
    codes = {n: p.wait(timeout=LIVENESS_S) for n, p in procs.items()}
    took = time.monotonic() - signalled
    print(f"every party stopped {took:.1f} s after SIGINT to the analyzer")
    assert codes["analyzer"] == 130
    for name, p in procs.items():
        assert "Traceback" not in p.stderr.read(), name
    for name in procs:
        if name == "analyzer":
            continue
        status = json.loads((run / "status" / f"{name}.json").read_text())
        print(name, status)
        if name.startswith("client"):
            continue  # a client party that had already submitted and left may have closed ok
        assert status["status"] == "failed"
        assert status["error"].startswith("run aborted by "), (name, status)
        assert "interrupted by SIGINT" in status["error"], (name, status)
        assert codes[name] != 0
    assert not (run / "result.json").exists()
