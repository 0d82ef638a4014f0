"""One party process: ``sdp party --cluster C --keys K --name N --out RUN_DIR``.

Loads the cluster, connects to its peers over pinned mutual TLS, runs its role of the run plan
(chosen by the cluster's protocol and shuffler), then writes its transcript, cost ledger and
status. Expected faults end with one clear line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from parties.runtime.cluster import Cluster, ClusterError, load_cluster
from parties.runtime.frames import FrameError
from parties.runtime.keys import KeyError_
from parties.runtime.link import PeerError
from parties.runtime.plans import get_plan
from parties.runtime.transport import Node, log, progress_printer

EXPECTED = (PeerError, ClusterError, KeyError_, FrameError, ValueError, OSError)


def write_status(run_dir: Path, name: str, status: dict[str, Any]) -> None:
    d = run_dir / "status"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.json").write_text(json.dumps(status, indent=1))


async def run_party(
    cluster: Cluster, name: str, keydir: Path, run_dir: Path, progress: bool = False
) -> int:
    """Run one party to completion; returns the process exit code."""
    plan = get_plan(cluster)
    node: Node | None = None
    try:
        node = Node(cluster, name, keydir, run_dir, progress_printer() if progress else None)
        await node.start(plan.peers(cluster, name))
        await plan.run(node, cluster)
    except EXPECTED as exc:
        reason = str(exc)
        log(name, f"error: {reason}")
        write_status(run_dir, name, {"status": "failed", "error": reason})
        if node is not None:
            await node.close("aborted", f"{name}: {reason}")
        return 1
    except Exception as exc:  # a bug: keep the traceback in the log, one line on screen
        reason = f"internal error {type(exc).__name__}: {exc}"
        (run_dir / "logs").mkdir(parents=True, exist_ok=True)
        (run_dir / "logs" / f"{name}.traceback").write_text(traceback.format_exc())
        log(name, f"{reason} (traceback in logs/{name}.traceback)")
        write_status(run_dir, name, {"status": "failed", "error": reason})
        if node is not None:
            await node.close("aborted", f"{name}: {reason}")
        return 1
    await node.close("ok")
    write_status(run_dir, name, {"status": "ok"})
    return 0


def main(argv: list[str]) -> int:
    """Entry of ``sdp party``."""
    ap = argparse.ArgumentParser(prog="sdp party", description=__doc__.splitlines()[0])
    ap.add_argument("--cluster", required=True, help="cluster TOML file")
    ap.add_argument("--keys", required=True, help="key directory (sdp keys)")
    ap.add_argument("--name", required=True, help="this party's name in the cluster file")
    ap.add_argument("--out", required=True, help="run directory for transcript, costs, status")
    ap.add_argument("--progress", action="store_true", help="print @@progress events on stdout")
    args = ap.parse_args(argv)
    run_dir = Path(args.out)
    try:
        cluster = load_cluster(args.cluster)
        cluster.party(args.name)
        run_dir.mkdir(parents=True, exist_ok=True)
    except (ClusterError, OSError) as exc:
        print(f"sdp party: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(run_party(cluster, args.name, Path(args.keys), run_dir, args.progress))
    except KeyboardInterrupt:
        log(args.name, "interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
