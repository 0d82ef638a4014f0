"""Every wait ends: the deadlines of a run (docs/deploy.md, "Deadlines").

- **Per receive / per phase**: a party waits at most the cluster's ``phase_timeout`` for one
  message (``Node.recv``); a wait that gives up signs a ``missed`` entry naming the peer it
  waited for. Protocols that tolerate a slow peer wait again a bounded number of times.
- **Overall**: a party's every wait ends ``run_deadline_s(cluster)`` seconds after it started
  (``RUN_DEADLINE_PHASES`` phase timeouts, plus the rejoin window). A message still missing then
  ends the run: the waiting party signs the ``missed`` entry naming the withholding peer, aborts,
  and tells its peers, so nothing is published and the culprit is named from signed entries.
- **Session end**: once the analyzer has closed its transcript of the session (its signed
  ``close``) or the run's deadline has passed since the session's first transcript opened,
  ``sdp party`` refuses to start again for that session, before it writes anything.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

RUN_DEADLINE_PHASES = 30  # overall deadline = 30 phase timeouts (+ the rejoin window)


def run_deadline_s(cluster: Any) -> float:
    """Seconds a party of ``cluster`` may wait in total, from its start."""
    return RUN_DEADLINE_PHASES * float(cluster.phase_timeout) + float(
        getattr(cluster, "rejoin_window", 0.0) or 0.0
    )


def _first_entry(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            e = json.loads(f.readline())
    except (OSError, ValueError):
        return None
    return e if isinstance(e, dict) else None


def _last_close(path: Path) -> dict[str, Any] | None:
    """The ``close`` entry of a transcript, if it has one (read from its tail)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - (64 << 10)))
            lines = f.read().splitlines()
    except OSError:
        return None
    for raw in reversed(lines):
        try:
            e = json.loads(raw)
        except ValueError:
            continue
        if isinstance(e, dict) and e.get("dir") == "close":
            return e
    return None


def session_ended(run_dir: Path, cluster: Any, now: float | None = None) -> str | None:
    """Why the session of ``cluster`` is over in ``run_dir`` (None: it is not, as far as this
    run directory shows). Reads only."""
    tdir = Path(run_dir) / "transcripts"
    if not tdir.is_dir():
        return None
    for p in cluster.parties:
        if p.role != "analyzer":
            continue
        path = tdir / f"{p.name}.jsonl"
        first = _first_entry(path)
        if first is None or first.get("session") != cluster.session:
            continue
        close = _last_close(path)
        if close is not None:
            return (
                f"the session {cluster.session[:8]}... has ended: {p.name} closed its "
                f"transcript ({close.get('status', '?')}, entry {close.get('i')})"
            )
    opened = []
    for path in tdir.glob("*.jsonl"):
        first = _first_entry(path)
        if first is not None and first.get("session") == cluster.session and "t" in first:
            opened.append(float(first["t"]) / 1e6)
    if opened:
        limit = run_deadline_s(cluster)
        now = time.time() if now is None else now
        if now > min(opened) + limit:
            return (
                f"the session {cluster.session[:8]}... has ended: its deadline "
                f"({limit:.0f} s from its first transcript) passed "
                f"{now - min(opened) - limit:.0f} s ago"
            )
    return None
