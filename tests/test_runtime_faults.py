"""Faults: killed parties, malformed/oversized/wrongly signed frames, wrong keys, bad names,
port conflicts, unreachable peers. Each is rejected with one clear message and no hang."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
from pathlib import Path

import pytest
from _helpers import data_header, local_cluster, started_pair
from conftest import sdp, sdp_run_to

from parties.runtime.cluster import Cluster
from parties.runtime.frames import PREFIX, VERSION, frame_parts
from parties.runtime.keys import make_party_key
from parties.runtime.link import PeerError
from parties.runtime.transport import Node


def make_cluster(
    tmp: Path, names: list[str], timeout: float = 10.0
) -> tuple[Cluster, dict[str, Path]]:
    return local_cluster(tmp, names, tmp / "cluster.toml", "client", phase_timeout=timeout)


async def connected_pair(tmp: Path, timeout: float = 10.0) -> tuple[Node, Node]:
    return await started_pair(*make_cluster(tmp, ["a", "b"], timeout), tmp / "run")


def transcript_entries(tmp: Path, party: str) -> list[dict]:
    path = tmp / "run" / "transcripts" / f"{party}.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()]


async def test_messages_flow_and_large_payload_is_chunked(tmp_path):
    a, b = await connected_pair(tmp_path)
    big = bytes(range(256)) * (40_000)  # 10 MB -> 3 chunks of 4 MiB
    await a.send("b", "small", b"hello")
    await a.send("b", "big", big, public=False)
    assert await b.recv("a", "small") == b"hello"
    assert await b.recv("a", "big") == big
    await a.close()
    await b.close()
    recv = [e for e in transcript_entries(tmp_path, "b") if e["dir"] == "recv"]
    assert [e["ty"] for e in recv[:2]] == ["small", "big"]


def _raw(a: Node) -> asyncio.Transport:
    return a.channels["b"].transport


@pytest.mark.parametrize(
    "inject,reason",
    [
        (lambda a: PREFIX.pack(5, 3) + b"\xff\xff\xff", "malformed frame header"),
        (lambda a: PREFIX.pack(50 << 20, 10), "oversized frame"),
        (
            lambda a: frame_parts(data_header(sid=b"x" * 16, ln=0, dg=bytes(32)))[0],
            "another session",
        ),
        (
            lambda a: frame_parts(data_header(sid=a.session, sq=5, ln=0, dg=bytes(32)))[0],
            "sequence 5",
        ),
        (
            lambda a: frame_parts(
                {
                    "v": VERSION,
                    "k": "s",
                    "sid": a.session,
                    "fr": "a",
                    "to": "b",
                    "sq": 0,
                    "h": a.channels["b"].send_chain,
                    "sg": bytes(64),
                }
            )[0],
            "wrongly signed seal",
        ),
    ],
    ids=["malformed", "oversized", "wrong-session", "sequence-gap", "bad-signature"],
)
async def test_bad_frames_rejected_logged_and_closed(tmp_path, inject, reason):
    a, b = await connected_pair(tmp_path)
    _raw(a).write(inject(a))
    t0 = time.monotonic()
    with pytest.raises(PeerError, match=reason):
        await b.recv("a", "anything")
    assert time.monotonic() - t0 < 5
    rejects = [e for e in transcript_entries(tmp_path, "b") if e["dir"] == "reject"]
    assert rejects and reason.split()[0] in rejects[0]["reason"]
    assert b.channels["a"].closed
    await a.close()
    await b.close()


async def test_truncated_frame_at_close_is_rejected(tmp_path):
    a, b = await connected_pair(tmp_path)
    prefix, _ = frame_parts({"v": VERSION, "k": "h", "sid": a.session, "fr": "a", "to": "b"})
    _raw(a).write(prefix[:-3])
    await asyncio.sleep(0.1)
    _raw(a).close()
    with pytest.raises(PeerError, match="truncated frame"):
        await b.recv("a", "anything")
    await b.close()


async def test_unsealed_frames_are_not_delivered(tmp_path):
    """Data frames without a valid seal never reach the application."""
    a, b = await connected_pair(tmp_path)
    ch = a.channels["b"]
    ch.seal = lambda: None  # a sender that never signs
    await a.send("b", "t", b"payload")
    with pytest.raises(PeerError, match="timed out"):
        await b.recv("a", "t", timeout=0.5)
    await b.close()


async def test_peer_with_foreign_certificate_is_refused(tmp_path):
    cluster, dirs = make_cluster(tmp_path, ["a", "b"], timeout=3)
    other = tmp_path / "otherkeys"
    (other / "certs").mkdir(parents=True)
    for f in (dirs["b"] / "certs").iterdir():
        (other / "certs" / f.name).write_bytes(f.read_bytes())
    # b's key replaced: a does not know it
    (other / "certs" / "b.crt").write_bytes(make_party_key("b", "127.0.0.1", other))
    a = Node(cluster, "a", dirs["a"], tmp_path / "run")
    b = Node(cluster, "b", other, tmp_path / "run2")
    res = await asyncio.gather(a.start({"b"}), b.start({"a"}), return_exceptions=True)
    assert isinstance(res[0], PeerError)
    assert "certificate" in str(res[0]) and "party b" in str(res[0])
    await a.close()
    await b.close()


def test_wrong_private_key_one_clear_line(tmp_path):
    cluster, dirs = make_cluster(tmp_path, ["a", "b"])
    other = tmp_path / "k2"
    make_party_key("a", "127.0.0.1", other)
    (dirs["a"] / "a.key").write_bytes((other / "a.key").read_bytes())
    proc = sdp(
        "party",
        "--dir",
        str(dirs["a"]),
        "--out",
        str(tmp_path / "run"),
        timeout=60,
    )
    assert proc.returncode != 0
    assert "does not match certificate" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_key_and_unknown_name(tmp_path):
    cluster, dirs = make_cluster(tmp_path, ["a", "b"])
    (dirs["b"] / "b.key").unlink()
    proc = sdp("party", "--dir", str(dirs["b"]), "--name", "b", "--out", str(tmp_path / "run"))
    assert proc.returncode != 0 and "private key of party 'b' missing" in proc.stderr
    proc = sdp("party", "--dir", str(dirs["b"]), "--out", str(tmp_path / "run"))
    assert proc.returncode == 2 and "holds 0 private keys" in proc.stderr
    proc = sdp(
        "party",
        "--dir",
        str(dirs["a"]),
        "--name",
        "nobody",
        "--out",
        str(tmp_path / "run"),
        timeout=60,
    )
    assert proc.returncode == 2
    assert "unknown party 'nobody'" in proc.stderr and "Traceback" not in proc.stderr


async def test_port_conflict_is_one_clear_error(tmp_path):
    cluster, dirs = make_cluster(tmp_path, ["a", "b"], timeout=2)
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", cluster.party("b").port))
    blocker.listen()
    try:
        b = Node(cluster, "b", dirs["b"], tmp_path / "run")
        with pytest.raises(PeerError, match="cannot listen on 127.0.0.1"):
            await b.start({"a"})
        await b.close()
    finally:
        blocker.close()


async def test_unreachable_peer_gives_up_with_message(tmp_path):
    cluster, dirs = make_cluster(tmp_path, ["a", "b"], timeout=1.5)
    a = Node(cluster, "a", dirs["a"], tmp_path / "run")
    with pytest.raises(PeerError, match=r"cannot reach party b at 127\.0\.0\.1:\d+"):
        await a.start({"b"})
    await a.close()


def _run_killing(out: Path, kill: str) -> subprocess.CompletedProcess[str]:
    """``sdp run grr`` (2,000 users, phase timeout 20 s) with ``SDP_FAULT_KILL=kill``."""
    args = ("--users", "2000", "--phase-timeout", "20")
    return sdp_run_to(out, "grr", *args, env={"SDP_FAULT_KILL": kill}, timeout=120, check=False)


def test_killed_shuffler_aborts_run_without_result(tmp_path):
    out = tmp_path / "run"
    t0 = time.monotonic()
    proc = _run_killing(out, "shuffler:shuffle")
    elapsed = time.monotonic() - t0
    assert proc.returncode != 0
    assert elapsed < 20 + 30
    assert not (out / "result.json").exists()
    aborted = json.loads((out / "ABORTED.json").read_text())
    assert "shuffler" in aborted["failed_parties"]
    # the survivor names the missing party
    assert "shuffler" in aborted["failed_parties"]["analyzer"]
    assert "shuffler" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow  # fast: test_runtime_dropout::test_below_min_users_nothing_is_published
# (client-2 killed at submit, the gate refuses, ABORTED.json names it and the gate)
def test_killed_client_party_is_a_dropout_the_privacy_gate_refuses(tmp_path):
    """A client party is a data owner that may drop out; by default the protocol is calibrated
    for all users (min_users = n), so the gate refuses what arrived: nothing published."""
    out = tmp_path / "run"
    proc = _run_killing(out, "client-2:submit")
    assert proc.returncode != 0 and not (out / "result.json").exists()
    aborted = json.loads((out / "ABORTED.json").read_text())
    assert "client-2" in aborted["failed_parties"] and aborted["why"] == "privacy gate"
    assert "privacy gate refused" in proc.stderr and "Traceback" not in proc.stderr
