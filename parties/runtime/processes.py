"""Local party processes for ``sdp run``: start each party, watch it, stop all of them.

Each party is started as its own session (process group), like a host: when a party ends,
whatever it left behind (pool workers) goes with it. SIGINT or SIGTERM to the launcher is
forwarded as SIGTERM to every party's group (each closes its transcript as aborted and exits);
a party still alive a few seconds later is killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from parties.runtime.cleanup import die_with_parent
from parties.runtime.cluster import Cluster
from parties.runtime.deadlines import run_deadline_s
from parties.runtime.plans import tolerated_roles

# SIGTERM to a party, then SIGKILL to its group: every party is gone within 5 s of a signal
STOP_GRACE_S = 4.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """n distinct currently free TCP ports (bound then released)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def signal_group(pid: int, sig: int) -> None:
    """Send ``sig`` to a party's whole process group (it was started as a session leader)."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Monitor:
    """Progress display of the parties' ``@@progress`` events (rich), or nothing if quiet."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet or not sys.stderr.isatty()
        self._tasks: dict[str, Any] = {}
        self._progress = None
        if not self.quiet:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                TimeElapsedColumn(),
                transient=True,
            )
            self._progress.start()

    def event(self, ev: dict[str, Any]) -> None:
        if self._progress is None:
            return
        key = f"{ev['party']}: {ev['label']}"
        if key not in self._tasks:
            self._tasks[key] = self._progress.add_task(key, total=ev["total"])
        self._progress.update(self._tasks[key], completed=ev["done"], total=ev["total"])

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()


async def _pump(
    stream: asyncio.StreamReader,
    name: str,
    log_file: Any,
    monitor: Monitor,
    errors: dict[str, list[str]],
    is_stderr: bool,
) -> None:
    while True:
        line = await stream.readline()
        if not line:
            return
        text = line.decode("utf-8", "replace").rstrip("\n")
        if text.startswith("@@progress "):
            try:
                monitor.event(json.loads(text[11:]))
            except (ValueError, KeyError):
                pass
            continue
        log_file.write(text + "\n")
        log_file.flush()
        if is_stderr:
            errors.setdefault(name, []).append(text)


async def launch(
    cluster: Cluster,
    party_dirs: dict[str, Path],
    run_dir: Path,
    monitor: Monitor,
    started: Callable[[int], None] | None = None,
) -> tuple[dict[str, Any], str | None]:
    """Start every party; wait. Returns ({name: {exit, errors}}, the signal that stopped the run
    (``"SIGINT"``/``"SIGTERM"``/``"SIGHUP"``) or None). ``started(pgid)`` is called for each
    party's process group (the watchdog, ``parties.runtime.cleanup``); each party gets SIGTERM
    from the kernel if the launcher dies."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    logs = run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    procs: dict[str, asyncio.subprocess.Process] = {}
    errors: dict[str, list[str]] = {}
    pumps = []
    files = []
    loop = asyncio.get_running_loop()
    caught: list[str] = []
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, lambda s=sig: caught.append(s.name))
    try:
        for p in cluster.parties:
            cmd = [
                sys.executable,
                "-m",
                "parties.runtime.party",
                "--dir",
                str(party_dirs[p.name]),
                "--out",
                str(run_dir),
                "--progress",
            ]
            proc = await asyncio.create_subprocess_exec(
                *cmd,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
            procs[p.name] = proc
            if started is not None:
                started(proc.pid)
            f = open(logs / f"{p.name}.log", "w")  # noqa: SIM115
            files.append(f)
            assert proc.stdout is not None and proc.stderr is not None
            pumps.append(asyncio.create_task(_pump(proc.stdout, p.name, f, monitor, errors, False)))
            pumps.append(asyncio.create_task(_pump(proc.stderr, p.name, f, monitor, errors, True)))
            if caught:
                break
        tolerated = tolerated_roles(cluster.protocol, cluster.shuffler)
        outcome = await _watch(
            procs,
            errors,
            cluster.phase_timeout + 15.0,
            caught,
            {p.name for p in cluster.parties if p.role in tolerated},
            run_deadline_s(cluster) + cluster.phase_timeout + 15.0,
        )
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
    try:
        await asyncio.wait_for(asyncio.gather(*pumps), 5.0)
    except asyncio.TimeoutError:
        for task in pumps:
            task.cancel()
    for f in files:
        f.close()
    for name in outcome:
        outcome[name]["errors"] = errors.get(name, [])[-5:]
    return outcome, (caught[0] if caught else None)


async def _watch(
    procs: dict[str, asyncio.subprocess.Process],
    errors: dict[str, list[str]],
    grace: float,
    caught: list[str],
    may_fail: set[str] | frozenset[str] = frozenset(),
    backstop: float = float("inf"),
) -> dict[str, Any]:
    """Poll exit codes (asyncio's wait() would also wait for the log pipes, which a stray
    process could hold open); stop everyone after a signal, ``grace`` s after a failure, or
    ``backstop`` s after the start (the run's deadline and the stop: every party should have
    ended by its own deadline before).

    The failure of a party in ``may_fail`` (a role the backend tolerates: a client party, a mix
    server under the dead-server policy) does not start the grace: the others complete
    without it (or it is restarted and rejoins), under their own deadlines. Before, the
    launcher killed every party 25 s after a client party's crash, however long the honest
    remainder of the run took on a loaded machine."""
    outcome: dict[str, Any] = {}
    first_failure: float | None = None
    stopping: float | None = None
    begun = time.monotonic()
    while len(outcome) < len(procs):
        await asyncio.sleep(0.05)
        for name, proc in procs.items():
            if name in outcome or proc.returncode is None:
                continue
            outcome[name] = {"exit": proc.returncode}
            signal_group(proc.pid, signal.SIGKILL)
            if proc.returncode != 0 and first_failure is None and name not in may_fail:
                first_failure = time.monotonic()
        if caught and stopping is None:
            stopping = time.monotonic()
            for name, proc in procs.items():
                if name not in outcome and proc.returncode is None:
                    # the party itself (not its pool workers): it aborts and stops its pool
                    try:
                        os.kill(proc.pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
        now = time.monotonic()
        overdue = now - begun > backstop
        late = (
            (stopping is not None and now - stopping > STOP_GRACE_S)
            or (first_failure is not None and now - first_failure > grace)
            or overdue
        )
        if late:
            for name, proc in procs.items():
                if name not in outcome and proc.returncode is None:
                    signal_group(proc.pid, signal.SIGKILL)
                    if stopping:
                        why = "did not stop after the interrupt"
                    elif first_failure is not None and now - first_failure > grace:
                        why = f"still running {grace:.0f} s after the first failure"
                    else:
                        why = f"still running {backstop:.0f} s after the start (the run's deadline)"
                    errors.setdefault(name, []).append(f"killed by the launcher: {why}")
    return outcome
