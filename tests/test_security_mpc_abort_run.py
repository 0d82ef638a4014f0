"""Issue 25 item 1, end to end: a real ``sdp run ... --shuffler mpc`` (every party its own
process, the MPyC mesh over TLS) in which ONE MPC server deviates while it reshares (it adds an
offset to a client's row, the review's attack; ``SDP_FAULT_MPC_OFFSET``, ``fault_hooks``).

The run must abort naming the failed check, exit non-zero, open and publish nothing (no
result.json, no server output share sent, no estimate), and ``sdp verify`` must report the
same abort from the signed transcripts."""

from __future__ import annotations

import json

from _mpc_helpers import SERVERS, transcript_entries
from conftest import sdp, sdp_run_to


def test_a_deviating_server_aborts_the_run_and_verify_reports_it(tmp_path):
    run = tmp_path / "run"
    fault = {"SDP_FAULT_MPC_OFFSET": "mpc-2:reports:0:1000"}
    proc = sdp_run_to(run, "grr", "--shuffler", "mpc", "--users", "300", env=fault, check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0, text
    assert "MPC abort: MAC check on batch 'reports'" in text, text
    assert "internal error" not in text and "traceback" not in text, text
    assert not (run / "result.json").exists()
    aborted = json.loads((run / "ABORTED.json").read_text())
    failed = aborted["failed_parties"]
    for s in SERVERS:  # every server, the honest ones too, names the failed check
        assert "MPC abort: MAC check on batch 'reports'" in failed.get(s, ""), failed
    for s in SERVERS:  # nothing opened: no output share left any server
        sent = [e["ty"] for e in transcript_entries(run, s) if e["dir"] == "send"]
        assert "mpc-output" not in sent, (s, sent)
    published = [e["ty"] for e in transcript_entries(run, "analyzer") if e["dir"] == "publish"]
    assert not {"shuffled", "estimate"} & set(published), published

    out = sdp("verify", str(run), "--json", timeout=300)
    assert out.returncode != 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert not report["ok"] and not checks["run completed"]["ok"]
    assert "nothing was published" in checks["run completed"]["detail"]
    assert checks["transcript chains and signatures"]["ok"]
    happened = checks["what happened"]["detail"]
    for s in SERVERS:  # from each server's signed close entry: the same failed check
        assert f"{s} stopped (closed its transcript as aborted: {s}: MPC abort: MAC check" in (
            happened
        ), happened
