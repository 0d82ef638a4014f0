"""Shutdown that leaves nothing behind: the parties of ``sdp run`` and its private key directory
outlive neither the launcher nor the launcher's parent, however they end (SIGKILL included).

Three mechanisms, each covering what the one before cannot:

- ``die_with_parent``: ``prctl(PR_SET_PDEATHSIG)`` (Linux): the kernel sends the process a
  signal when its parent dies. ``sdp run`` asks for SIGTERM when its own parent dies (a
  terminal closed, a supervisor killed); each party asks for SIGTERM when ``sdp run`` dies.
- A **watchdog** (``start_watchdog``): a small process in its own session, holding the read end
  of a pipe whose write end only the launcher holds. The launcher writes each party's process
  group to it as it starts them. When the pipe reads end-of-file without a ``done`` line (the
  launcher died: no ``finally`` ran), the watchdog sends SIGTERM to every party group, SIGKILL
  to what is left ``KILL_AFTER_S`` later, and deletes the key directory. SIGKILL of the
  launcher thus leaves no process and no key within 5 s.
- ``atexit`` and the launcher's own ``finally``: the ordinary path deletes the key directory.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
KILL_AFTER_S = 2.5  # SIGTERM -> SIGKILL, so that everything is gone within 5 s


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel for ``sig`` when this process's parent dies (Linux; False elsewhere or
    if the parent is already gone). Safe in a ``preexec_fn``."""
    if not sys.platform.startswith("linux"):
        return False
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), sig)
    return True


class Stopped(BaseException):
    """A stop signal to the launcher before its parties started (``stop_on_signals``)."""

    def __init__(self, sig: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(sig).name}")
        self.sig = signal.Signals(sig)


def _raise_stopped(signum: int, frame: object) -> None:
    raise Stopped(signum)


def stop_on_signals() -> dict[int, object]:
    """SIGINT, SIGTERM and SIGHUP raise ``Stopped`` (so the launcher's clean-up runs); returns
    the handlers they replaced (for ``restore_signals``)."""
    return {
        sig: signal.signal(sig, _raise_stopped)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }


def restore_signals(saved: dict[int, object]) -> None:
    """Put back the handlers ``stop_on_signals`` replaced."""
    for sig, handler in saved.items():
        signal.signal(sig, handler)  # type: ignore[arg-type]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def stop_groups(pgids: list[int], kill_after: float = KILL_AFTER_S) -> None:
    """SIGTERM to every process group, SIGKILL to those still alive ``kill_after`` s later."""
    for g in pgids:
        try:
            os.killpg(g, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    end = time.monotonic() + kill_after
    while time.monotonic() < end and any(_group_alive(g) for g in pgids):
        time.sleep(0.05)
    for g in pgids:
        try:
            os.killpg(g, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def watchdog_main(fd: int, keys: str) -> int:
    """The watchdog's loop (``python -m parties.runtime.cleanup FD KEYDIR``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the launcher, not us
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    groups: list[int] = []
    done = False
    buf = b""
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while True:
            chunk = pipe.read(4096)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line == b"done":
                    done = True
                elif line.isdigit():
                    groups.append(int(line))
    if not done:  # the launcher died without its clean-up
        stop_groups(groups)
    if keys:
        shutil.rmtree(keys, ignore_errors=True)
    return 0


class Watchdog:
    """The launcher's side: start it, tell it each party's group, say ``done`` at the end."""

    def __init__(self, keys: Path | None) -> None:
        r, w = os.pipe()
        self._w = w
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "parties.runtime.cleanup", str(r), str(keys or "")],
            pass_fds=(r,),
            start_new_session=True,  # a signal to the launcher's group does not reach it
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            close_fds=True,
        )
        os.close(r)
        os.set_inheritable(w, False)

    def watch(self, pgid: int) -> None:
        """The launcher started a party as process group ``pgid``."""
        try:
            os.write(self._w, f"{pgid}\n".encode())
        except OSError:
            pass

    def done(self, wait: float = 5.0) -> None:
        """The launcher cleaned up after itself: the watchdog deletes the key directory (if
        still there) and exits without stopping anything."""
        try:
            os.write(self._w, b"done\n")
            os.close(self._w)
        except OSError:
            pass
        try:
            self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            self.proc.kill()


if __name__ == "__main__":
    sys.exit(watchdog_main(int(sys.argv[1]), sys.argv[2]))
