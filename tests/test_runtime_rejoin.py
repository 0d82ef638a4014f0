"""A party restarted after a crash rejoins the run if it had not yet sent anything (issue 17,
section 4): its peers keep waiting for it during the cluster's ``rejoin_window``, send it again
everything they had sent it, and the verifier matches each incarnation's messages on their
own. A party that had already sent protocol messages is refused (one line) and the run goes on
without it. Real TLS connections on loopback (Node level) and real processes (``sdp party``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _helpers import local_cluster, started_pair
from conftest import ROOT, sdp

from parties.runtime.cluster import (
    Cluster,
    ClusterError,
)
from parties.runtime.keys import cert_path
from parties.runtime.link import PeerError
from parties.runtime.party import incarnation_of
from parties.runtime.transport import Node
from parties.verify.incarnations import check_incarnations
from parties.verify.transcripts import Report, check_consistency, check_transcript, public_key


def _cluster(tmp: Path, names: list[str], window: float) -> tuple[Cluster, dict[str, Path]]:
    toml = tmp / "run" / "cluster.toml"
    return local_cluster(tmp, names, toml, phase_timeout=20.0, rejoin_window=window)


def _crash(node: Node) -> None:
    """What the peers see of a killed process: every connection drops, no goodbye."""
    node._closing = True
    for ch in node.channels.values():
        if ch.transport is not None:
            ch.transport.abort()
    if node._server is not None:
        node._server.close()


def _consistency(run: Path, cluster: Cluster, dirs: dict[str, Path], names: list[str]) -> Report:
    report = Report()
    ts = {}
    for n in names:
        key = public_key(cert_path(dirs[n], n), n)
        t, err = check_transcript(run, n, cluster.session_bytes, key)
        assert err is None, err
        err = check_incarnations(run, t, cluster.session_bytes, key, t.cluster)
        assert err is None, err
        ts[n] = t
    clean = frozenset(n for n, t in ts.items() if t.closed_cleanly)
    report.add(check_consistency(ts, report, clean))
    return report


@pytest.mark.parametrize("names", [["a", "b"], ["b", "a"]], ids=["peer-redials", "restart-dials"])
async def test_a_party_restarted_before_it_sent_anything_rejoins(tmp_path, names):
    """``stay`` sent the crashed party messages before and during its absence: the restarted
    incarnation receives all of them, in order, then the run goes on; the transcripts verify."""
    stay_name, crash_name = names
    cluster, dirs = _cluster(tmp_path, ["a", "b"], window=20.0)
    run = tmp_path / "run"
    stay = Node(cluster, stay_name, dirs[stay_name], run)
    gone = Node(cluster, crash_name, dirs[crash_name], run)
    await asyncio.gather(stay.start({crash_name}), gone.start({stay_name}))
    await stay.send(crash_name, "state", b"round 0 state", public=True)
    assert await gone.recv(stay_name, "state") == b"round 0 state"
    _crash(gone)
    await asyncio.sleep(0.3)
    await stay.send(crash_name, "more", b"sent while it was away")
    waiting = asyncio.ensure_future(stay.recv(crash_name, "submit"))
    await asyncio.sleep(0.3)
    assert not waiting.done(), "a receive from a party that may rejoin keeps waiting"

    inc = incarnation_of(run, crash_name, cluster.session)
    assert inc == 1 and (run / "transcripts" / f"{crash_name}.crashed-0.jsonl").exists()
    back = Node(cluster, crash_name, dirs[crash_name], run, incarnation=inc)
    await back.start({stay_name})
    assert await back.recv(stay_name, "state") == b"round 0 state"
    assert await back.recv(stay_name, "more") == b"sent while it was away"
    await back.send(stay_name, "submit", b"reports")
    assert await asyncio.wait_for(waiting, 10) == b"reports"
    await back.close()
    await stay.close()

    entries = [json.loads(x) for x in (run / "transcripts" / f"{stay_name}.jsonl").open()]
    assert [e["dir"] for e in entries if e["dir"] in ("away", "rejoin")] == ["away", "rejoin"]
    report = _consistency(run, cluster, dirs, ["a", "b"])
    assert report.ok, report.first_failure
    # the crashed incarnation's signed receipt of "state" is matched too: nothing unconfirmed
    assert not report.unconfirmed and not any("which crashed" in w for w in report.warnings)


async def test_a_party_that_had_sent_a_message_cannot_rejoin(tmp_path):
    """Its restarted self would randomize its users again: refused with one line, and the
    peer's receive fails at once (it is a dropout, as without the window). The restarted
    party is the dialer here, so it learns of the refusal at once."""
    cluster, dirs = _cluster(tmp_path, ["a", "b"], window=20.0)
    run = tmp_path / "run"
    a, b = await started_pair(cluster, dirs, run)
    await a.send("b", "submit", b"first half")
    assert await b.recv("a", "submit") == b"first half"
    _crash(a)
    with pytest.raises(PeerError, match="a disconnected"):
        await asyncio.wait_for(b.recv("a", "submit"), 5)
    with pytest.raises(ClusterError, match="a cannot rejoin session .* already sent protocol"):
        incarnation_of(run, "a", cluster.session)  # its own transcript says it spoke
    # a party that ignores its own transcript is refused by the peer that heard it
    os.replace(run / "transcripts" / "a.jsonl", run / "transcripts" / "a.crashed-0.jsonl")
    back = Node(cluster, "a", dirs["a"], run, incarnation=1)
    t0 = time.monotonic()
    with pytest.raises(PeerError):
        await back.start({"b"})
    assert time.monotonic() - t0 < 10
    back.leave("refused")
    await b.close()
    entries = [json.loads(x) for x in (run / "transcripts" / "b.jsonl").open()]
    reasons = [e.get("reason", "") for e in entries if e["dir"] == "reject"]
    assert any("a cannot rejoin the run: it had already sent protocol" in r for r in reasons)


async def test_a_party_killed_between_send_and_seal_cannot_rejoin(tmp_path, monkeypatch):
    """Issue 31, item 4: the frames of a's submission reached b, but a died before their seal
    (so b never delivered it). It spoke all the same: its restart refuses to start, and a
    restarted self that ignored that is refused by b."""
    from parties.runtime.channel import Channel

    cluster, dirs = _cluster(tmp_path, ["a", "b"], window=20.0)
    run = tmp_path / "run"
    a, b = await started_pair(cluster, dirs, run)
    monkeypatch.setattr(Channel, "seal", lambda self: None)  # a dies before sealing
    await a.send("b", "submit", b"my users' reports")
    for _ in range(100):
        if b.channels["a"]._unsealed:
            break
        await asyncio.sleep(0.02)
    assert b.channels["a"]._unsealed, "the frames arrived, unsealed"
    _crash(a)
    monkeypatch.undo()
    with pytest.raises(PeerError, match="a disconnected|unsealed"):
        await asyncio.wait_for(b.recv("a", "submit"), 5)
    with pytest.raises(ClusterError, match="already sent protocol messages"):
        incarnation_of(run, "a", cluster.session)  # its signed "speak" entry
    os.replace(run / "transcripts" / "a.jsonl", run / "transcripts" / "a.crashed-0.jsonl")
    back = Node(cluster, "a", dirs["a"], run, incarnation=1)
    with pytest.raises(PeerError):
        await back.start({"b"})
    back.leave("refused")
    await b.close()
    entries = [json.loads(x) for x in (run / "transcripts" / "b.jsonl").open()]
    assert "rejoin" not in [e["dir"] for e in entries]
    reasons = [e.get("reason", "") for e in entries if e["dir"] == "reject"]
    assert any("a cannot rejoin the run: it had already sent protocol" in r for r in reasons)


async def test_a_peer_sent_more_than_the_replay_buffer_cannot_rejoin(tmp_path, monkeypatch):
    """Nothing is held twice in memory beyond REJOIN_BUFFER: past it, the silent peer's
    disconnect is final (as without a window)."""
    import parties.runtime.transport as T

    monkeypatch.setattr(T, "REJOIN_BUFFER", 1000)
    cluster, dirs = _cluster(tmp_path, ["a", "b"], window=20.0)
    run = tmp_path / "run"
    a, b = await started_pair(cluster, dirs, run)
    await a.send("b", "list", bytes(600))
    assert a._outbox["b"]
    await a.send("b", "list", bytes(600))
    assert "b" not in a._outbox
    _crash(b)
    with pytest.raises(PeerError, match="b disconnected"):
        await asyncio.wait_for(a.recv("b", "submit"), 5)
    await a.close()


async def test_a_party_that_does_not_come_back_is_gone_after_the_window(tmp_path):
    cluster, dirs = _cluster(tmp_path, ["a", "b"], window=1.0)
    run = tmp_path / "run"
    a, b = await started_pair(cluster, dirs, run)
    _crash(b)
    t0 = time.monotonic()
    with pytest.raises(PeerError, match="did not rejoin within 1 s"):
        await asyncio.wait_for(a.recv("b", "submit"), 10)
    assert 0.5 < time.monotonic() - t0 < 8
    await a.close()


async def test_without_a_window_a_disconnect_is_final(tmp_path):
    cluster, dirs = _cluster(tmp_path, ["a", "b"], window=0.0)
    run = tmp_path / "run"
    a, b = await started_pair(cluster, dirs, run)
    _crash(b)
    with pytest.raises(PeerError, match="b disconnected"):
        await asyncio.wait_for(a.recv("b", "submit"), 5)
    await a.close()


def test_a_finished_party_cannot_restart_into_the_same_run(tmp_path):
    run = tmp_path / "run"
    (run / "transcripts").mkdir(parents=True)
    session = "ab" * 16
    lines = [{"dir": "open", "session": session}, {"dir": "close", "status": "ok"}]
    (run / "transcripts" / "c.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with pytest.raises(Exception, match="cannot rejoin"):
        incarnation_of(run, "c", session)
    assert incarnation_of(run, "c", "cd" * 16) == 0  # another run's leftovers: a fresh start


def _party(d: Path, run: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "parties.cli", "party", "--dir", str(d), "--out", str(run)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    "kill_at, rejoins",
    [
        ("encode", True),
        # slow: the refusals in process are test_a_party_that_had_sent_a_message_cannot_rejoin
        # and test_a_party_killed_between_send_and_seal_cannot_rejoin
        pytest.param("close", False, marks=pytest.mark.slow),
        pytest.param("sent:submit", False, marks=pytest.mark.slow),
    ],
)
def test_restarting_a_crashed_client_party(tmp_path, kill_at, rejoins):
    """``sdp party`` processes from ``sdp cluster init``: client-2 is killed before it sent
    anything (it rejoins: every user is counted) or after its submission, sealed or not (it
    may not take part again: one line, non-zero exit; the run completes, verified, with its
    submission if it was sealed, and as a dropout otherwise)."""
    out, run = tmp_path / "parties", tmp_path / "run"
    sdp(
        "cluster", "init", "grr", "--users", "3000", "--clients", "3", "--out", str(out),
        "--port-base", str(21000 + os.getpid() % 20000), "--rejoin-window", "60", "--phase-timeout", "30",
        *(["--min-users", "1500"] if kill_at.startswith("sent:") else []), check=True,
    )  # fmt: skip
    dirs = {d.name: d for d in sorted(out.iterdir()) if d.is_dir()}
    procs = {
        n: _party(d, run, {"SDP_FAULT_KILL": f"client-2:{kill_at}"} if n == "client-2" else None)
        for n, d in dirs.items()
    }
    assert procs["client-2"].wait(timeout=120) != 0  # killed
    time.sleep(1.0)
    again = _party(dirs["client-2"], run)
    code = again.wait(timeout=180)
    err = again.stderr.read()
    assert "Traceback" not in err
    codes = {n: p.wait(timeout=180) for n, p in procs.items() if n != "client-2"}
    assert all(c == 0 for c in codes.values()), codes
    if rejoins:
        assert code == 0, err
    else:
        # refused by a peer still running, or every peer it needs has already finished
        assert code != 0 and ("cannot rejoin" in err or "cannot reach" in err), err
        assert len([x for x in err.splitlines() if "error" in x]) == 1, err
    res = json.loads((run / "result.json").read_text())
    users = sum(r["n_received"] for r in res["privacy"]["releases"][:1])
    assert users == (2000 if kill_at.startswith("sent:") else 3000)
    v = sdp("verify", str(run), "--trust", str(out / "trust.json"), "--json")
    report = json.loads(v.stdout)
    assert v.returncode == 0 and report["ok"], v.stdout[-2000:]
    if rejoins:  # the crashed incarnation was verified, and the report says what it holds
        said = [w for w in report["warnings"] if "rejoined as incarnation 1" in w]
        assert said and "crashed incarnations verified: client-2.crashed-0.jsonl" in said[0]
        assert "sent no protocol message" in said[0], said
