"""Process pools for CPU-bound party work.

Workers come from a *forkserver*: they do not inherit the party's sockets, pipes or TLS state.
A forked worker would keep a killed party's connections open (its peers would then wait for a
timeout instead of seeing the disconnect) and hold the launcher's log pipes.

Every worker watches the process that made its pool and exits within about a second of that
process's death (``SIGKILL`` included, which runs no clean-up): without it, idle workers of a
killed party block on their task queue forever and keep the forkserver and multiprocessing's
resource tracker alive with them.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import weakref
from concurrent.futures import ProcessPoolExecutor

_POOLS: weakref.WeakSet[ProcessPoolExecutor] = weakref.WeakSet()
_FINAL: dict[int, float] = {}  # CPU of workers read just before their pool shut down
_PEAK_RSS: dict[int, int] = {}  # workers' peak resident bytes (VmHWM), last read
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class _Pool(ProcessPoolExecutor):
    """A process pool whose workers' CPU is read once more just before shutdown."""

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        for pid in list(getattr(self, "_processes", None) or {}):
            cpu = _process_cpu(pid)
            if cpu is not None:
                _FINAL[pid] = cpu
            _note_peak_rss(pid)
        super().shutdown(wait, cancel_futures=cancel_futures)


def process_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes started by a clean forkserver; each exits when the process
    that made the pool dies."""
    owner = os.getpid()
    pool = _Pool(
        max_workers=workers,
        mp_context=multiprocessing.get_context("forkserver"),
        initializer=_watch_owner,
        initargs=(owner, _start_time(owner)),
    )
    _POOLS.add(pool)
    return pool


def kill_pool_workers() -> None:
    """Kill the workers of every pool of this process (safe in a signal handler: no lock is
    taken); a pool whose workers are gone is broken, so its shutdown no longer waits."""
    for pool in list(_POOLS):
        for pid in list(getattr(pool, "_processes", None) or {}):
            try:
                os.kill(pid, 9)
            except OSError:
                pass


def stop_pools() -> None:
    """Stop every pool of this process now: its workers are killed and pending work is
    dropped (a party that aborts does not wait for computations whose result nobody needs)."""
    kill_pool_workers()
    for pool in list(_POOLS):
        try:
            pool.shutdown(wait=False, cancel_futures=True)
        except Exception:  # a pool already broken by the kill  # noqa: BLE001
            pass


def _stat(pid: int) -> list[bytes] | None:
    """Fields 3.. of ``/proc/PID/stat`` (proc(5)), None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data[data.rindex(b")") + 2 :].split()


def _start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks (``/proc``), None when it is gone or a zombie."""
    fields = _stat(pid)
    if fields is None or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


def _watch_owner(owner: int, started: int | None, period: float = 0.5) -> None:
    """Pool initializer: a daemon thread ends this worker once ``owner`` is gone (or a zombie,
    or its pid was reused by another process)."""
    if started is None:  # no /proc: nothing to watch with
        return

    def watch() -> None:
        while _start_time(owner) == started:
            time.sleep(period)
        os._exit(1)

    threading.Thread(target=watch, name="pool-owner-watch", daemon=True).start()


def _process_cpu(pid: int) -> float | None:
    """User + system CPU seconds of a live process (Linux ``/proc``), else ``None``."""
    fields = _stat(pid)
    return None if fields is None else (int(fields[11]) + int(fields[12])) / _TICKS


class WorkerCpu:
    """CPU seconds used by this process's pool workers (``process_pool``) between readings.

    Reads ``/proc`` (Linux; elsewhere always 0); a pool's workers are read once more when it
    shuts down, so their last work is counted at the next reading.
    """

    def __init__(self) -> None:
        self._last: dict[int, float] = {}

    def delta(self) -> float:
        """Worker CPU seconds since the previous call."""
        total, seen = 0.0, dict(_FINAL)
        for pid, cpu in _FINAL.items():
            total += max(cpu - self._last.get(pid, 0.0), 0.0)
        for pool in list(_POOLS):
            for pid in list(getattr(pool, "_processes", None) or {}):
                cpu = None if pid in _FINAL else _process_cpu(pid)
                if cpu is not None:
                    seen[pid] = cpu
                    total += cpu - self._last.get(pid, 0.0)
                _note_peak_rss(pid)
        self._last.update(seen)
        return max(total, 0.0)


def peak_rss(pid: int | str = "self") -> int | None:
    """Peak resident bytes of a live process (``VmHWM`` in ``/proc/PID/status``; unlike
    ``ru_maxrss`` not inherited over exec), None where unreadable."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _note_peak_rss(pid: int) -> None:
    rss = peak_rss(pid)
    if rss is not None:
        _PEAK_RSS[pid] = max(rss, _PEAK_RSS.get(pid, 0))


def workers_peak_rss() -> dict[int, int]:
    """Peak resident bytes of every process-pool worker this process has had, as last read
    (each CPU reading and each pool shutdown reads them): per worker pid."""
    for pool in list(_POOLS):
        for pid in list(getattr(pool, "_processes", None) or {}):
            _note_peak_rss(pid)
    return dict(_PEAK_RSS)
