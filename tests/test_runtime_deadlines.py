"""Every wait ends (issue 43 items 3 and 4): a party that withholds a message makes the run abort
within the phase timeout with the culprit named in the signed transcripts, and once a session
has ended (the analyzer's signed close, or the run's deadline) ``sdp party`` refuses to start
again for it at once, writing nothing (real processes; short deadlines set by --phase-timeout)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, keys_of, sdp, sdp_run_to

from parties.runtime.cluster import load_cluster
from parties.runtime.deadlines import run_deadline_s, session_ended

SHORT = ["--phase-timeout", "3"]


def _snapshot(run: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in run.rglob("*")}


def _withholding_run(
    tmp_path: Path, withhold: str, *args: str, kill: str = "", keys: bool = False
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``sdp run ARGS`` into ``tmp_path/run`` in which ``withhold`` (``PARTY:TYPE``, the
    ``SDP_FAULT_WITHHOLD`` fault) never sends its messages of that type and ``kill``
    (``SDP_FAULT_KILL``) crashes a party; the run's exit status is the caller's to check."""
    run = tmp_path / "run"
    env = {"SDP_FAULT_WITHHOLD": withhold, "SDP_FAULT_KILL": kill}
    return run, sdp_run_to(run, *args, keys=keys, env=env, check=False)


def _withheld_run(
    tmp_path: Path, protocol: str, withhold: str, kill: str = "", *extra: str
) -> tuple[Path, dict]:
    run, res = _withholding_run(
        tmp_path, withhold, protocol, "--shuffler", "trusted", "--users", "2000", *SHORT, *extra,
        kill=kill, keys=True,
    )  # fmt: skip
    assert res.returncode == 1, res.stderr
    assert not (run / "result.json").exists()
    return run, json.loads((run / "ABORTED.json").read_text())


def _missed(run: Path, party: str) -> list[dict]:
    lines = (run / "transcripts" / f"{party}.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["dir"] == "missed"]


def test_a_withholding_analyzer_aborts_the_run_and_a_restart_after_it_is_refused(tmp_path):
    # gfim has two rounds: the analyzer withholds round 1's state from client-1; client-2
    # crashes before it sent anything (a party that may rejoin while the session lasts)
    # (the gate lets the round with client-2 missing through: round 1 is reached)
    run, aborted = _withheld_run(
        tmp_path, "gfim", "analyzer:state:client-1", "client-2:encode",
        "--min-users", "500", "--max-epsilon", "20",
    )  # fmt: skip
    reason = aborted["failed_parties"]["client-1"]
    assert "waiting for 'state' from analyzer" in reason, aborted
    # the culprit, from client-1's signed entries: its wait for the analyzer's state gave up
    missed = _missed(run, "client-1")
    assert [(m["peer"], m["ty"]) for m in missed] == [("analyzer", "state")], missed
    # the session ended (the analyzer closed its transcript): the crashed client's restart is
    # refused at once, before anything is written (no "rejoining as incarnation 1", no wait)
    before = _snapshot(run)
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "parties.cli", "party", "--dir", str(keys_of(run) / "client-2")]
        + ["--out", str(run)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    print(f"restart refused after {time.monotonic() - t0:.1f} s")
    assert out.returncode == 2, out.stderr
    assert "has ended: analyzer closed its transcript" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert _snapshot(run) == before


def test_a_withholding_shuffler_aborts_the_run_naming_it(tmp_path):
    run, aborted = _withheld_run(tmp_path, "grr", "shuffler:shuffled")
    assert "waiting for 'shuffled' from shuffler" in aborted["failed_parties"]["analyzer"]
    assert [(m["peer"], m["ty"]) for m in _missed(run, "analyzer")] == [("shuffler", "shuffled")]


def _came(run: Path, party: str, missed: dict) -> bool:
    """Whether the message ``missed`` gave up on reached ``party`` after all (it was late)."""
    lines = (run / "transcripts" / f"{party}.jsonl").read_text().splitlines()
    return any(
        e["dir"] == "recv" and e["peer"] == missed["peer"] and e["ty"] == missed["ty"]
        and e["i"] > missed["i"]
        for e in map(json.loads, lines)
    )  # fmt: skip


def _transcript(run: Path, party: str, session: str, t_us: int, close: bool) -> None:
    lines = [{"dir": "open", "session": session, "i": 0, "t": t_us}]
    if close:
        lines.append({"dir": "close", "status": "ok", "i": 1, "t": t_us})
    (run / "transcripts").mkdir(parents=True, exist_ok=True)
    (run / "transcripts" / f"{party}.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in lines)
    )


def test_session_end_from_the_analyzer_close_or_the_deadline(tmp_path):
    parties = tmp_path / "parties"
    sdp("cluster", "init", "grr", "--shuffler", "trusted", "--users", "100", "--out", str(parties),
        "--port-base", "30500", *SHORT, check=True)  # fmt: skip
    cluster = load_cluster(parties / "analyzer" / "cluster.toml")
    run = tmp_path / "run"
    now = time.time()
    assert session_ended(run, cluster, now) is None  # nothing there yet
    _transcript(run, "client-1", cluster.session, int(now * 1e6), close=False)
    assert session_ended(run, cluster, now) is None
    # the run's deadline passed since the session's first transcript opened
    late = now + run_deadline_s(cluster) + 1
    assert "its deadline" in (session_ended(run, cluster, late) or "")
    # another session's analyzer transcript does not end this one
    _transcript(run, "analyzer", "0" * 32, int(now * 1e6), close=True)
    assert session_ended(run, cluster, now) is None
    _transcript(run, "analyzer", cluster.session, int(now * 1e6), close=True)
    assert "analyzer closed its transcript" in (session_ended(run, cluster, now) or "")


@pytest.mark.slow
def test_a_withholding_mix_server_is_left_out_and_named_by_the_honest_servers(tmp_path):
    # mix-2 works (its _busy beats keep the others waiting), then withholds its mix step: the
    # honest servers give up on it after hop_patience (2) silent phase timeouts, not at the
    # run's deadline (30 phase timeouts), each signing missed entries that name mix-2 alone;
    # mixes 1 and 3 are enough (the dead-server policy), so the run publishes and verifies
    run, res = _withholding_run(
        tmp_path, "mix-2:mix.output",
        "grr", "--shuffler", "mixnet", "--users", "100", "--phase-timeout", "5", "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    result = json.loads((run / "result.json").read_text())
    assert result["verified"] is True
    assert set(result.get("faults", {})) <= {"mix-2"}  # only the withholder may have failed
    for honest in ("mix-1", "mix-3"):
        hops = [(m["peer"], m["ty"]) for m in _missed(run, honest) if m["ty"] == "mix.output"]
        assert hops == [("mix-2", "mix.output")] * 2, hops
    for honest in ("mix-1", "mix-3", "analyzer", "client-1", "client-2"):
        # any other wait an honest party gave up on (a loaded machine) got its message later:
        # it names a late party, never a withholding one
        withheld = [(m["peer"], m["ty"]) for m in _missed(run, honest) if not _came(run, honest, m)]
        assert set(withheld) <= {("mix-2", "mix.output")}, (honest, withheld)
    beats = [
        e for e in map(json.loads, (run / "transcripts" / "mix-2.jsonl").read_text().splitlines())
        if e["dir"] == "send" and e["ty"] == "_busy"
    ]  # fmt: skip
    assert beats, "mix-2 said it was at work before it withheld its step"


def _close_reason(run: Path, party: str) -> str:
    lines = (run / "transcripts" / f"{party}.jsonl").read_text().splitlines()
    closes = [e for e in map(json.loads, lines) if e["dir"] == "close"]
    return str(closes[-1].get("reason", "")) if closes else ""


@pytest.mark.slow
def test_a_withholding_mpc_server_aborts_the_run_naming_it(tmp_path):
    # mpc-2 stays connected but sends none of its MPyC messages: the first MPC step times out
    # (one phase timeout) at the honest servers, and the first to give up names mpc-2 in its
    # signed close; the servers beat to the analyzer, which therefore does not blame an honest
    # server for its missing output. No reason anywhere says an honest server withheld.
    run, res = _withholding_run(
        tmp_path, "mpc-2:mpyc",
        "grr", "--shuffler", "mpc", "--users", "100", "--phase-timeout", "10", "--no-verify",
    )  # fmt: skip
    assert res.returncode == 1, res.stderr
    assert not (run / "result.json").exists()
    reasons = {p: _close_reason(run, p) for p in ("mpc-1", "mpc-3", "analyzer")}
    named = [r for r in reasons.values() if "waiting for server mpc-2" in r]
    assert named and all("(withheld its messages)" in r for r in named), reasons
    for r in reasons.values():
        assert (
            "mpc-1 (MPyC party 0) (withheld" not in r and "mpc-3 (MPyC party 2) (withheld" not in r
        )
    assert _missed(run, "analyzer") == [], "the analyzer blamed a server that was at work"
