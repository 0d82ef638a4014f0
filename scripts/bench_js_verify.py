"""CPU of the two verifiers on one run directory, one after the other; prints JSON.

    python scripts/bench_js_verify.py RUN_DIR --trust TRUST.json [--out docs/benchmarks/js_verify.json]

* ``sdp verify`` (Python) runs in this process: CPU = ``resource.getrusage(RUSAGE_SELF)`` user +
  sys plus its process-pool workers (``mpc.pools.WorkerCpu``, read from /proc: forkserver
  children are not this process's children).
* ``node verifier/verify.mjs`` runs as a child: CPU = ``RUSAGE_CHILDREN`` user + sys (all its
  threads, worker threads included), its peak memory from ``ru_maxrss``; its per-check CPU from
  its ``--json`` report.

The 1-minute load average is recorded before and after each: on a shared machine CPU times are
the comparison, wall times are not.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def bench_python(run: Path, trust: dict) -> dict:
    """``sdp verify``'s checks in this process, CPU including its pool workers."""
    from mpc.pools import WorkerCpu
    from parties.verify.run import verify_run

    workers = WorkerCpu()
    workers.delta()
    load0, r0, t0 = _load(), resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    report = verify_run(run, progress=False, trust=trust)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    main = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    pool = workers.delta()
    return {
        "command": "verify_run(RUN_DIR, trust=TRUST) (what sdp verify runs), in-process",
        "verified": report.ok,
        "cpu_s": round(main + pool, 2),
        "cpu_s_main_process": round(main, 2),
        "cpu_s_pool_workers": round(pool, 2),
        "wall_s": round(wall, 2),
        "load_average_1min": {"start": load0, "end": _load()},
    }


def bench_js(run: Path, trust_file: Path) -> dict:
    """``node verifier/verify.mjs RUN_DIR --trust TRUST --json`` as a child process."""
    cmd = [
        "node",
        str(ROOT / "verifier" / "verify.mjs"),
        str(run),
        "--trust",
        str(trust_file),
        "--json",
    ]
    load0, r0, t0 = _load(), resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"the JavaScript verifier failed: {proc.stderr[-2000:]}")
    report = json.loads(proc.stdout)
    per: dict[str, float] = {}
    for c in report["checks"]:
        per[c["id"]] = round(per.get(c["id"], 0.0) + float(c.get("cpu_s", 0.0)), 2)
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "command": "node verifier/verify.mjs RUN_DIR --trust TRUST --json",
        "node": node,
        "verified": bool(report["ok"]) and proc.returncode == 0,
        "cpu_s": round((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), 2),
        "user_s": round(r1.ru_utime - r0.ru_utime, 2),
        "sys_s": round(r1.ru_stime - r0.ru_stime, 2),
        "wall_s": round(wall, 2),
        "max_rss_mb": round(r1.ru_maxrss / 1024),
        "cpu_s_per_check": {k: v for k, v in per.items() if v >= 0.05},
        "not_checked": report.get("not_checked", []),
        "load_average_1min": {"start": load0, "end": _load()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--trust", type=Path, required=True)
    ap.add_argument("--out", type=Path, help="also write the JSON here")
    ap.add_argument("--note", default="", help="free text kept in the output (machine, load)")
    a = ap.parse_args()
    trust = json.loads(a.trust.read_text())
    git = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    )
    js = bench_js(a.run, a.trust)
    py = bench_python(a.run, trust)
    out = {
        "what": "one run directory verified by node verifier/verify.mjs (JavaScript: @noble/curves "
        "for single operations, lib/ristretto.wasm for bulk decoding and multi-scalar "
        "multiplication) and by sdp verify (Python: libsodium + native MSM, process pool), "
        "one after the other",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": git.stdout.strip()[:100],
        "run": str(a.run),
        "cpus": os.cpu_count(),
        "note": a.note,
        "javascript": js,
        "python": py,
        "ratio_cpu_js_over_python": round(js["cpu_s"] / py["cpu_s"], 2) if py["cpu_s"] else None,
    }
    from parties.runtime.cost_ledger import bench_peak_rss

    out["peak_rss_per_party"] = bench_peak_rss("python verifier (this process)")
    text = json.dumps(out, indent=1)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")
    sys.exit(0 if js["verified"] and py["verified"] else 1)


if __name__ == "__main__":
    main()
