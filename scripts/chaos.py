"""Chaos harness (docs/deploy.md, "Chaos"): runs under faults, each outcome classified from the run
directory alone.

For every shuffler (trusted, mixnet, mpc) and a one-round (grr) and a two-round (gfim) protocol,
``--runs N`` runs of ``sdp run``; in each, one random party is killed (SIGKILL or SIGTERM) or
delayed (SIGSTOP, then SIGCONT after a while: a stalled host) at a random moment after it opened
its transcript (a random phase), optionally restarted (``--restart``: ``sdp party`` again with its
directory), optionally beside ``--load K`` busy processes. Every outcome is one of

- ``published``: ``result.json`` and every check of ``sdp verify`` passes;
- ``aborted``: ``ABORTED.json``, no result, every check but "run completed" passes, and a failed
  party is named (the culprit);
- a **defect**: a hang past the run's deadline, a run that does not verify, an orphan process
  (a process of the run alive after ``sdp run`` ended), a key directory left behind, a result
  published beside an abort, or no outcome at all.

``python scripts/chaos.py --runs N [--json]`` prints the outcome table (JSON: a ``defects`` count
per cell). The machine's load changes timings, not outcomes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHUFFLERS = ("trusted", "mixnet", "mpc")
PROTOCOLS = {"one-round": "grr", "two-round": "gfim"}
ACTIONS = ("SIGKILL", "SIGTERM", "delay")
PHASE_TIMEOUT = 10.0  # the default of --phase-timeout
ORPHAN_GRACE_S = 5.0  # every party is gone within 5 s of the launcher's end
STARTUP_S = 120.0  # no party opened its transcript this long after sdp run started: a hang


_VERIFY_LOCK = threading.Lock()


def _pgrep(pattern: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", "--", pattern], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split() if int(x) != os.getpid()]


def run_processes(run: Path, tmp: Path | None = None) -> list[int]:
    """Processes of the run (a party or a launcher writing into ``run``; with ``tmp``, the
    launcher's watchdog too, which names the key directory under ``tmp``)."""
    found = _pgrep(f"--out {run}( |$)")
    return sorted(set(found + (_pgrep(f"{tmp}/sdp-keys-") if tmp is not None else [])))


def classify(run: Path, tmp: Path, trust: Path | None = None) -> tuple[str, list[str], str]:
    """(outcome, defects, culprit) of a finished run, from the run directory, the process table
    and the launcher's temporary directory alone."""
    defects = []
    end = time.monotonic() + ORPHAN_GRACE_S
    while run_processes(run, tmp) and time.monotonic() < end:
        time.sleep(0.1)
    alive = run_processes(run, tmp)
    if alive:
        defects.append(f"orphan process(es) {alive}")
    keys = sorted(tmp.glob("sdp-keys-*"))
    if keys:
        defects.append(f"key directory left: {keys[0]}")
    published = (run / "result.json").exists()
    aborted = (run / "ABORTED.json").exists()
    if published and aborted:
        defects.append("a result published beside an abort")
    if not published and not aborted:
        defects.append("no outcome (neither result.json nor ABORTED.json)")
        return "defect", defects, ""
    from parties.verify.run import verify_run

    doc = json.loads(trust.read_text()) if trust is not None and trust.exists() else None
    try:
        with _VERIFY_LOCK:  # one at a time: the verifier's registries are not thread-safe
            report = verify_run(run, progress=False, trust=doc)
    except Exception as exc:  # a verifier crash is a defect of the run's evidence  # noqa: BLE001
        defects.append(f"sdp verify crashed: {type(exc).__name__}: {exc}")
        return "defect", defects, ""
    failed = [c for c in report.checks if not c.ok]
    culprit = ""
    if published:
        if failed:
            defects.append(f"published but does not verify: {report.first_failure}")
        outcome = "published"
    else:
        other = [c for c in failed if c.name != "run completed"]
        if other:
            defects.append(f"aborted but does not verify: {other[0].name}: {other[0].detail}")
        doc = json.loads((run / "ABORTED.json").read_text())
        culprit = culprits(doc.get("failed_parties") or {}, doc.get("why", ""))
        if not culprit:
            defects.append("aborted without naming a culprit")
        outcome = "aborted"
    return ("defect" if defects else outcome), defects, culprit


def culprits(reasons: dict[str, str], why: str = "") -> str:
    """The parties an abort names, from ``ABORTED.json``'s reasons: failed parties that were
    not stopped by another's abort, the parties those aborts name, and the parties a failed
    party waited for in vain (``waiting for 'T' from P``, ``waiting for server P``)."""
    named = {m for r in reasons.values() for m in re.findall(r"run aborted by ([\w-]+)", r)}
    waited = {
        m for r in reasons.values()
        for m in re.findall(r"waiting for (?:'[^']*' from|server) ([\w-]+)", r)
    }  # fmt: skip
    roots = {n for n, r in reasons.items() if "run aborted by" not in r}
    return ", ".join(sorted(roots | named | waited)) or why


def _party_pid(run: Path, party: str) -> int | None:
    pids = _pgrep(f"parties.runtime.party --dir \\S*/{party} --out {run}( |$)")
    return pids[0] if pids else None


def _wait_open(run: Path, party: str, proc: subprocess.Popen[Any], limit: float) -> bool:
    path = run / "transcripts" / f"{party}.jsonl"
    end = time.monotonic() + limit
    while time.monotonic() < end and proc.poll() is None:
        if path.exists() and path.stat().st_size:
            return True
        time.sleep(0.05)
    return False


def misnamed(outcome: str, victim: str, culprit: str) -> str:
    """Why an abort under a fault on ``victim`` ("" if none was applied) is a defect: it does
    not name the faulted party among its culprits ("" if it does, or if nothing aborted)."""
    if outcome != "aborted" or not victim:
        return ""
    if victim in {c.strip() for c in culprit.split(",")}:
        return ""
    return f"aborted without naming {victim}, whose fault it was (named: {culprit or 'nobody'})"


def _last_start(run: Path) -> float | None:
    """When the last party of the run started (its transcript's first entry, wall seconds)."""
    starts = []
    for path in (run / "transcripts").glob("*.jsonl"):
        try:
            with open(path, "rb") as f:
                starts.append(float(json.loads(f.readline())["t"]) / 1e6)
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return max(starts) if starts else None


def _wait_deadline(
    run: Path, proc: subprocess.Popen[Any], phase_timeout: float, restarted_at: float
) -> str:
    """Wait for ``sdp run`` to end; a hang (the reason, and ``proc`` killed) if it is still
    running past every party's deadline: the run's deadline (``run_deadline_s``) from the
    last party's start (a loaded machine starts parties late; that is not a hang), plus the
    launcher's stop after a failure (``phase_timeout + 15`` s) and 30 s to tear down."""
    from parties.runtime.deadlines import RUN_DEADLINE_PHASES

    limit = RUN_DEADLINE_PHASES * phase_timeout + phase_timeout + 15.0 + 30.0
    t0 = time.time()
    while proc.poll() is None:
        time.sleep(0.5)
        start = max(_last_start(run) or t0 + STARTUP_S, restarted_at)
        if time.time() > start + limit:
            proc.kill()
            proc.wait()
            return (
                f"sdp run still running {time.time() - start:.0f} s after the last party "
                f"started (every party's deadline and the launcher's stop: {limit:.0f} s)"
            )
    return ""


def one_run(
    shuffler: str,
    protocol: str,
    rng: random.Random,
    work: Path,
    restart: bool,
    users: int,
    phase_timeout: float = PHASE_TIMEOUT,
) -> dict[str, Any]:
    """One run under one fault; its classified outcome. Runs of different ``work`` directories
    may go on at once (each has its own run directory, temporary directory and free ports)."""
    from parties.runtime.deadlines import RUN_DEADLINE_PHASES

    run, tmp = work / "run", work / "tmp"
    tmp.mkdir(parents=True)
    parties = {
        "trusted": ["analyzer", "shuffler", "client-1", "client-2"],
        "mixnet": ["analyzer", "mix-1", "mix-2", "mix-3", "client-1", "client-2"],
        "mpc": ["analyzer", "mpc-1", "mpc-2", "mpc-3", "client-1", "client-2"],
    }[shuffler]
    victim, action = rng.choice(parties), rng.choice(ACTIONS)
    at = rng.uniform(0.0, 8.0)  # seconds after the victim opened its transcript
    cmd = [sys.executable, "-m", "parties.cli", "run", protocol, "--shuffler", shuffler]
    cmd += ["--users", str(users), "--phase-timeout", str(phase_timeout)]
    cmd += ["--out", str(run), "--quiet", "--no-verify"]
    env = {**os.environ, "TMPDIR": str(tmp)}
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    limit = RUN_DEADLINE_PHASES * phase_timeout + 60.0  # the run's deadline, and start-up
    applied, restarted, restarted_at = "", False, 0.0
    if _wait_open(run, victim, proc, limit):
        time.sleep(at)
        pid = _party_pid(run, victim)
        if pid is not None and proc.poll() is None:
            keydir = next(iter(tmp.glob(f"sdp-keys-*/{victim}")), None)
            pause = rng.uniform(1.0, 2 * phase_timeout) if action == "delay" else 0.0
            hit = False  # the victim may end between the lookup and the signal: no fault then
            try:
                if action == "delay":
                    os.kill(pid, signal.SIGSTOP)
                    hit = True
                    time.sleep(pause)
                    os.kill(pid, signal.SIGCONT)
                else:
                    os.kill(pid, getattr(signal, action))
                    hit = True
            except ProcessLookupError:
                pass
            if hit and action != "delay":
                if restart and keydir is not None:
                    copy = work / "restart-dir"  # the launcher deletes its own when it ends
                    shutil.copytree(keydir, copy)
                    subprocess.Popen(
                        [sys.executable, "-m", "parties.cli", "party", "--dir", str(copy)]
                        + ["--out", str(run), "--quiet"],
                        cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, start_new_session=True,
                    )  # fmt: skip
                    restarted, restarted_at = True, time.time()
            if hit:
                applied = f"{action} {victim} at +{at:.1f} s"
    late = _wait_deadline(run, proc, phase_timeout, restarted_at)
    wall = time.monotonic() - t0
    trust = run.with_name(run.name + ".trust.json")
    outcome, defects, culprit = classify(run, tmp, trust)
    if late:
        defects.insert(0, f"hang: {late}")
        outcome = "defect"
    wrong = misnamed(outcome, victim if applied else "", culprit)
    if wrong:
        defects.append(wrong)
        outcome = "defect"
    for pid in run_processes(run, tmp):  # leave nothing for the next run (already counted)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return {
        "shuffler": shuffler,
        "protocol": protocol,
        "fault": applied or f"none ({action} {victim}: the run ended first)",
        "restarted": restarted,
        "phase_timeout": phase_timeout,
        "users": users,
        "outcome": outcome,
        "culprit": culprit,
        "defects": defects,
        "wall_s": round(wall, 1),
    }


def _load(k: int) -> list[subprocess.Popen[bytes]]:
    busy = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", busy]) for _ in range(k)]


def _new_cell(shuffler: str, protocol: str) -> dict[str, Any]:
    return {"shuffler": shuffler, "protocol": protocol, "runs": 0, "published": 0,
            "aborted": 0, "defects": 0, "defect_runs": []}  # fmt: skip


def _count(cell: dict[str, Any], rec: dict[str, Any]) -> None:
    cell["runs"] += 1
    if rec["outcome"] == "defect":
        cell["defects"] += 1
        cell["defect_runs"].append(rec)
    else:
        cell[rec["outcome"]] += 1


def _table_from_logs(paths: list[str], as_json: bool, note: str = "") -> int:
    """The outcome table of every run recorded in ``paths`` (``--log`` files); with ``--json``
    every run's record too."""
    kinds = {v: k for k, v in PROTOCOLS.items()}
    cells: dict[str, dict[str, Any]] = {}
    runs = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            rec = json.loads(line)
            key = f"{rec['shuffler']}/{kinds[rec['protocol']]}"
            _count(cells.setdefault(key, _new_cell(rec["shuffler"], rec["protocol"])), rec)
            runs.append(rec)
    cells = dict(sorted(cells.items()))
    _print(cells, as_json, {"logs": paths, **({"note": note} if note else {})}, runs)
    return 1 if any(c["defects"] for c in cells.values()) else 0


def _print(
    cells: dict[str, dict[str, Any]],
    as_json: bool,
    meta: dict[str, Any],
    runs: list[dict[str, Any]] | None = None,
) -> None:
    if as_json:
        print(json.dumps({**meta, "cells": cells, **({"runs": runs} if runs else {})}, indent=1))
        return
    print(f"{'cell':22} {'runs':>5} {'published':>10} {'aborted':>8} {'defects':>8}")
    for name, c in cells.items():
        print(f"{name:22} {c['runs']:>5} {c['published']:>10} {c['aborted']:>8} {c['defects']:>8}")


def _tasks(shufflers: list[str], kinds: list[str], runs: int) -> list[tuple[str, str, int]]:
    """(shuffler, kind, index) of every run, run 0 of every cell first: a batch cut short still
    covers every cell evenly."""
    return [(s, k, i) for i in range(runs) for s in shufflers for k in kinds]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="runs per (shuffler, protocol) cell")
    ap.add_argument("--shufflers", default=",".join(SHUFFLERS))
    ap.add_argument("--kinds", default=",".join(PROTOCOLS), help="one-round,two-round")
    ap.add_argument("--restart", action="store_true", help="restart each killed party")
    ap.add_argument("--load", type=int, default=0, help="busy processes beside the runs")
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument(
        "--phase-timeout",
        type=float,
        default=PHASE_TIMEOUT,
        help="the runs' --phase-timeout (every stall must end within its deadline)",
    )
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (own ports and dirs)")
    ap.add_argument("--seed", type=int, default=43)
    ap.add_argument("--keep", help="copy the run directory of every defect run under this one")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    ap.add_argument("--log", help="append every run's record to this JSON-lines file")
    ap.add_argument(
        "--from-log", nargs="+", metavar="FILE", help="only build the table from --log files"
    )  # fmt: skip
    ap.add_argument("--note", default="", help="with --from-log: a note kept in the JSON")
    args = ap.parse_args(argv)
    if args.from_log:
        return _table_from_logs(args.from_log, args.json, args.note)
    if args.jobs < 1 or args.runs < 0 or args.phase_timeout <= 0:
        ap.error("--jobs must be >= 1, --runs >= 0 and --phase-timeout > 0")
    shufflers, kinds = args.shufflers.split(","), args.kinds.split(",")
    unknown = [s for s in shufflers if s not in SHUFFLERS] + [
        k for k in kinds if k not in PROTOCOLS
    ]
    if unknown:
        ap.error(f"unknown shuffler or kind: {', '.join(unknown)}")
    cells = {
        f"{s}/{k}": _new_cell(s, PROTOCOLS[k]) for s in shufflers for k in kinds
    }  # fmt: skip
    lock = threading.Lock()

    def task(t: tuple[str, str, int]) -> None:
        shuffler, kind, i = t
        # each run's own generator: the faults do not depend on which run finished first
        rng = random.Random(f"{args.seed}/{shuffler}/{kind}/{i}")
        work = Path(tempfile.mkdtemp(prefix="sdp-chaos-"))
        try:
            rec = one_run(
                shuffler, PROTOCOLS[kind], rng, work, args.restart, args.users,
                args.phase_timeout,
            )  # fmt: skip
            if args.keep and rec["outcome"] == "defect":  # the evidence, for whoever debugs it
                kept = Path(args.keep) / f"{args.seed}-{shuffler}-{kind}-{i}"
                shutil.copytree(work, kept, symlinks=True, dirs_exist_ok=True)
                rec["kept"] = str(kept)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        rec["load"] = args.load
        with lock:
            _count(cells[f"{shuffler}/{kind}"], rec)
            if args.log:
                with open(args.log, "a") as f:
                    f.write(json.dumps(rec) + "\n")
            if not args.json:
                print(json.dumps(rec), file=sys.stderr, flush=True)

    from parties.verify.run import verify_run  # noqa: F401  (imported once, before the threads)

    load = _load(args.load)
    try:
        with ThreadPoolExecutor(args.jobs) as ex:
            list(ex.map(task, _tasks(shufflers, kinds, args.runs)))
    finally:
        for p in load:
            p.kill()
    meta = {
        "runs_per_cell": args.runs, "load": args.load, "restart": args.restart,
        "phase_timeout": args.phase_timeout, "users": args.users, "jobs": args.jobs,
    }  # fmt: skip
    _print(cells, args.json, meta)
    return 1 if any(c["defects"] for c in cells.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
