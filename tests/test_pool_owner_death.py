"""A SIGKILLed party leaves no worker behind (issue 30 item 10): its pool workers, the
forkserver that started them and multiprocessing's resource tracker all exit by themselves.
On 27f5c45 all three were still running minutes later."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

OWNER = textwrap.dedent(
    """
    import multiprocessing.forkserver as fs
    import multiprocessing.resource_tracker as rt
    import os, sys, time
    from mpc.pools import process_pool

    def work(_):
        time.sleep(0.2)
        return os.getpid()

    if __name__ == "__main__":
        pool = process_pool(2)
        pids = set(pool.map(work, range(8)))
        print(*sorted(pids), fs._forkserver._forkserver_pid, rt._resource_tracker._pid, flush=True)
        time.sleep(300)
    """
)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


def test_workers_forkserver_and_tracker_exit_when_the_party_is_killed(tmp_path):
    script = tmp_path / "owner.py"
    script.write_text(OWNER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        pids = [int(x) for x in proc.stdout.readline().split()]
        assert len(pids) >= 3 and all(_alive(p) for p in pids)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 60  # a liveness bound, not a timing claim
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in pids if _alive(p)]
    for p in left:  # do not leak them into the rest of the suite
        os.kill(p, signal.SIGKILL)
    assert not left, f"still running after the party was killed: {left}"
