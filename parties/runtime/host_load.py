"""Samples of the host a party runs on, taken by its cost ledger (``parties/costs/load.py``
turns them into the run's load verdict): the 1-minute load average, the host's CPU busy
seconds since boot (``/proc/stat``; Linux) and the number of cores."""

from __future__ import annotations

import os
import socket
import time
from typing import Any

# /proc/stat's "cpu" line: user nice system idle iowait irq softirq steal (USER_HZ ticks)
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


def host_busy_seconds() -> float | None:
    """CPU seconds the whole host has been busy since boot (``/proc/stat``), None elsewhere."""
    try:
        with open("/proc/stat") as f:
            line = f.readline().split()
    except OSError:
        return None
    if not line or line[0] != "cpu":
        return None
    ticks = [int(x) for x in line[1:9]]
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return sum(ticks[i] for i in _BUSY_FIELDS if i < len(ticks)) / float(hz)


def load_average() -> float | None:
    """The host's 1-minute load average (None where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 3)
    except (OSError, AttributeError):
        return None


def host_sample() -> dict[str, Any]:
    """{t, load1, busy_s}: one sample of the host, at unix time ``t``."""
    busy = host_busy_seconds()
    return {
        "t": round(time.time(), 6),
        "load1": load_average(),
        "busy_s": None if busy is None else round(busy, 3),
    }


def host_identity() -> dict[str, Any]:
    """{name, cores}: which host a party ran on (parties on one host share its counters)."""
    return {"name": socket.gethostname(), "cores": os.cpu_count() or 1}
