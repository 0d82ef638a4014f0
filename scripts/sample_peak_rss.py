"""Peak resident memory per party of a run, sampled from ``/proc`` (Linux), Dask workers included.

    python scripts/sample_peak_rss.py OUT.json PID [PID ...] [--period 2]

Every ``--period`` seconds, reads ``VmHWM`` (the peak resident bytes over the process's life)
and ``VmRSS`` of every process descended from the given PIDs, until the first PID exits (the
run: ``sdp run`` or ``/usr/bin/time sdp run``; the others are e.g. a Dask scheduler and its
workers). Writes OUT.json every 30 s and at the end: per process its peak and command line, per
*party* (a ``parties.runtime.party --dir .../NAME`` process with its process-pool workers, the
``sdp run`` launcher with its verifier, each Dask worker) its own peak and its workers' summed
peaks, and the largest total resident memory of the tree seen at one sample. The ledgers'
``memory`` (``docs/costs.md``) has the party's own figures; this adds what a ledger cannot see
(Dask's workers, the launcher) and works while a run is still going.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from typing import Any

PARTY_RE = re.compile(r"parties\.runtime\.party --dir \S*/([A-Za-z0-9_.-]+)")


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat", "rb") as fh:
                s = fh.read()
            ppid = int(s[s.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(p))
    return kids


def _status(pid: int) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                k, _, v = line.partition(":")
                if k in ("VmHWM", "VmRSS"):
                    out[k] = int(v.split()[0]) * 1024
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            out["cmd"] = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()[:400]
    except OSError:
        return None
    return out if "VmHWM" in out else None


def party_of(cmd: str) -> str | None:
    """The party a command line starts, or None for a helper (a pool worker, a forkserver)."""
    m = PARTY_RE.search(cmd)
    if m:
        return m[1]
    if "sdp run" in cmd or "parties.cli run" in cmd:
        return "sdp run (launcher and verifier)"
    if "dask_worker" in cmd or "dask worker" in cmd:
        name = re.search(r"--name (\S+)", cmd)
        return f"dask worker {name[1] if name else ''}".strip()
    if "dask_scheduler" in cmd or "dask scheduler" in cmd:
        return "dask scheduler"
    return None


def per_party(procs: dict[int, dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Each process's peak to the nearest ancestor (or itself) that is a party."""
    out: dict[str, dict[str, int]] = {}
    for pid, rec in procs.items():
        p, own = pid, True
        while p in procs and party_of(procs[p]["cmd"]) is None:
            p, own = procs[p]["ppid"], False
        if p not in procs:
            continue
        row = out.setdefault(party_of(procs[p]["cmd"]) or "?", {"peak_rss_bytes": 0,
                                                                "workers_peak_rss_sum_bytes": 0})  # fmt: skip
        key = "peak_rss_bytes" if own else "workers_peak_rss_sum_bytes"
        row[key] = row[key] + rec["hwm"] if not own else max(row[key], rec["hwm"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("pids", type=int, nargs="+")
    ap.add_argument("--period", type=float, default=2.0)
    a = ap.parse_args()
    procs: dict[int, dict[str, Any]] = {}
    peak_total, t0, last = 0, time.time(), 0.0
    while True:
        alive = os.path.exists(f"/proc/{a.pids[0]}")
        kids, seen, todo, total = _children(), set(), list(a.pids), 0
        parent = {c: p for p, cs in kids.items() for c in cs}
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            todo += kids.get(pid, [])
            st = _status(pid)
            if st is None:
                continue
            rec = procs.setdefault(pid, {"cmd": st["cmd"], "hwm": 0, "ppid": parent.get(pid, 0)})
            rec["hwm"] = max(rec["hwm"], st["VmHWM"])
            rec["cmd"] = st["cmd"] or rec["cmd"]
            total += st.get("VmRSS", 0)
        peak_total = max(peak_total, total)
        if time.time() - last > 30 or not alive:
            report = {
                "what": "VmHWM per process from /proc, sampled every "
                f"{a.period:g} s (scripts/sample_peak_rss.py)",
                "elapsed_s": round(time.time() - t0, 1),
                "peak_total_rss_bytes": peak_total,
                "parties": per_party(procs),
                "processes": {str(k): v for k, v in procs.items()},
            }
            with open(a.out + ".tmp", "w") as fh:
                json.dump(report, fh, indent=1)
            os.replace(a.out + ".tmp", a.out)
            last = time.time()
        if not alive:
            return
        time.sleep(a.period)


if __name__ == "__main__":
    main()
