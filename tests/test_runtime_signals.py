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

LIVENESS_S = 300  # a liveness bound for a loaded machine, not a performance target
PARTIES = ("analyzer", "client-1", "client-2", "mix-1", "mix-2", "mix-3")


def _alive(run: Path) -> list[int]:
    out = subprocess.run(["pgrep", "-f", "--", f"--out {run}"], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


def _wait_for_phase(run: Path, party: str, phase: str, key: str = "ph") -> None:
    path = run / "transcripts" / f"{party}.jsonl"
    deadline = time.monotonic() + LIVENESS_S
    while time.monotonic() < deadline:
        if path.exists() and f'"{key}":"{phase}"' in path.read_text():
            return
        time.sleep(0.1)
    raise AssertionError(f"{party} never reached {phase}")


def wait_until_running(run: Path, parties: tuple[str, ...], party: str, phase: str) -> None:
    """The readiness the signal tests wait on: every party has opened its transcript (its
    signal handlers are installed; a signal now is the run's, not the start-up's) and
    ``party`` has entered ``phase`` (the run is under way)."""
    for p in parties:
        _wait_for_phase(run, p, "open", key="dir")
    _wait_for_phase(run, party, phase)


def _closes(run: Path) -> dict[str, str]:
    out = {}
    for t in (run / "transcripts").glob("*.jsonl"):
        closes = [json.loads(x) for x in t.read_text().splitlines() if '"dir":"close"' in x]
        out[t.stem] = closes[-1]["status"] if closes else "none"
    return out


def start_run(tmp_path: Path, args: list[str]) -> tuple[subprocess.Popen[str], Path, Path]:
    """``sdp run ARGS`` with its temporary key directory under ``tmp_path/tmp``."""
    run, tmp = tmp_path / "run", tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "parties.cli", "run", *args, "--out", str(run), "--quiet"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    return proc, run, tmp


def assert_nothing_left(run: Path, tmp: Path) -> None:
    """No party process of ``run`` and no key directory outlive the stop (liveness bound)."""
    deadline = time.monotonic() + LIVENESS_S
    while (_alive(run) or list(tmp.glob("sdp-keys-*"))) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(run), "party processes outlived the launcher"
    assert not list(tmp.glob("sdp-keys-*")), "the private key directory was left behind"
    print(f"nothing left {LIVENESS_S - (deadline - time.monotonic()):.1f} s after the stop")


@pytest.mark.parametrize(
    "sig",
    # one handler for both (parties/runtime/cleanup.py); a party's SIGINT is
    # test_peer_abort_stops_peers'
    [pytest.param(signal.SIGINT, marks=pytest.mark.slow), signal.SIGTERM],
    ids=["SIGINT", "SIGTERM"],
)
def test_signal_to_sdp_run_stops_every_party(tmp_path, sig):
    proc, run, tmp = start_run(tmp_path, ["grr", "--shuffler", "mixnet", "--users", "6000"])
    try:
        wait_until_running(run, PARTIES, "mix-1", "mix.submit")
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=LIVENESS_S)
    finally:
        proc.kill()
    assert proc.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[sig], err
    assert f"interrupted by {sig.name}" in err and "Traceback" not in err
    assert_nothing_left(run, tmp)
    assert not (run / "result.json").exists() and (run / "ABORTED.json").exists()
    aborted = json.loads((run / "ABORTED.json").read_text())
    assert aborted["why"] == f"interrupted by {sig.name}"
    closes = _closes(run)
    assert set(closes) == set(PARTIES), closes
    # a party closes its transcript as aborted, or (a host too loaded to close within the
    # launcher's grace) is killed, and ABORTED.json says so: nothing is left unaccounted for
    for name, status in closes.items():
        if status == "none":
            assert "killed by the launcher" in aborted["failed_parties"].get(name, ""), (
                name,
                aborted,
            )
        else:
            assert status in {"aborted", "ok"}, closes
    assert "aborted" in closes.values(), closes
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
    for name, p in procs.items():
        err = p.stderr.read()
        assert "Traceback" not in err, f"{name}'s stderr:\n{err}"  # whole, not truncated
    assert _closes(run)["mix-2"] == "aborted"
    assert not (run / "result.json").exists()


def test_an_interrupt_inside_a_transport_write_prints_no_traceback(caplog, tmp_path):
    """The signal handler raises ``Interrupted`` wherever the party is; inside asyncio's
    socket write it reaches asyncio's fatal-error path, which logs a traceback unless the
    party's loop handler (``_quiet_interrupt``, installed by ``run_party``) drops it. A party's
    ``Node`` installs its own handler after that one, for refused TLS connections; it used to
    *replace* ``_quiet_interrupt`` (so the loaded fast suite saw "Fatal write error on socket
    transport ... by SIGTERM" in a party's stderr, failing the SIGTERM test above). It now
    chains to it. The loop is set up as ``run_party`` sets it up, a real ``Node`` included."""
    import asyncio
    import logging
    import socket

    from _helpers import local_cluster

    from parties.runtime.party import Interrupted, _quiet_interrupt
    from parties.runtime.transport import Node

    cluster, dirs = local_cluster(tmp_path, ["a", "b"], tmp_path / "cluster.toml", "client")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_quiet_interrupt)  # as run_party does, before its Node
        node = Node(cluster, "a", dirs["a"], tmp_path / "run")
        a, b = socket.socketpair()
        transport, _ = await loop.create_connection(asyncio.Protocol, sock=a)

        def send(data: bytes) -> int:
            raise Interrupted(signal.SIGTERM)

        real = transport._sock
        transport._sock = type("S", (), {"send": staticmethod(send), "fileno": a.fileno})()
        transport.write(b"x")  # the write path asyncio takes first: sock.send at once
        transport._sock = real  # closed with the transport by asyncio's fatal-error path
        await asyncio.sleep(0.05)
        loop.call_exception_handler({"message": "other", "exception": ValueError("other")})
        b.close()
        a.close()
        await node.close("aborted", "test over")

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(main())
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "Fatal write error" in m], messages
    assert any("other" in m for m in messages), messages  # anything else is still reported


def test_the_mpyc_loop_handler_hands_a_signal_interrupt_to_the_party(caplog):
    """The MPC shuffler's servers run MPyC, whose runtime installs its own loop exception
    handler over the party's ``_quiet_interrupt`` (as ``Node`` did, test above). A signal's
    ``Interrupted`` that asyncio reports from inside a socket write must reach the party's
    handler, which drops it, and not MPyC's, which prints asyncio's traceback; any other error
    is still reported."""
    import asyncio
    import logging
    import types

    from parties.mpc_shuffle.mpyc_runtime import _hook_connection_loss
    from parties.runtime.party import Interrupted, _quiet_interrupt

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_quiet_interrupt)  # as run_party does, before MPyC starts
        _hook_connection_loss(types.SimpleNamespace(_loop=loop, parties=(), pid=0))
        fatal = "Fatal write error on socket transport"
        loop.call_exception_handler({"message": fatal, "exception": Interrupted(signal.SIGTERM)})
        loop.call_exception_handler({"message": "other", "exception": ValueError("other")})

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(main())
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "Fatal write error" in m], messages
    assert any("other" in m for m in messages), messages
