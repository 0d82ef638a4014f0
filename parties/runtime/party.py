"""One party process: ``sdp party --dir PARTYDIR --out RUN_DIR``.

``PARTYDIR`` is the party's own directory made by ``sdp cluster init`` (the public cluster file,
this party's private key, every party's certificate). The party copies the public files into
``RUN_DIR`` (``cluster.toml``, ``certs/``), connects to its peers over pinned mutual TLS, runs
its role of the run plan (chosen by the cluster's protocol and shuffler), then writes its
transcript, cost ledger and status. Expected faults end with one clear line on stderr and a
non-zero exit, never a traceback. SIGINT and SIGTERM abort the run: the transcript is closed as
aborted, the peers are told, nothing is published; the exit code is 130 (SIGINT) or 143.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

from mpc.pools import kill_pool_workers, stop_pools
from parties.runtime.cluster import Cluster, ClusterError, load_cluster, read_local_data
from parties.runtime.deadlines import session_ended
from parties.runtime.frames import FrameError
from parties.runtime.keys import CERTS, KeyError_
from parties.runtime.link import PeerError
from parties.runtime.memory import bound_allocator
from parties.runtime.plans import check_roles, get_plan
from parties.runtime.progress import progress_printer
from parties.runtime.transcript import SPEAK
from parties.runtime.transport import Node, log
from protocols.privacy.ledger import PrivacyRefusal

EXPECTED = (PeerError, ClusterError, KeyError_, FrameError, ValueError, OSError)
SIGNAL_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}
CLOSE_WAIT_S = 2.0  # telling the peers of an abort; the launcher kills a party 3 s after a signal


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader never sees a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_status(run_dir: Path, name: str, status: dict[str, Any]) -> None:
    write_atomic(run_dir / "status" / f"{name}.json", json.dumps(status, indent=1))


def publish_public_files(party_dir: Path, run_dir: Path) -> None:
    """Copy the cluster file and every certificate into the run directory (never the key)."""
    write_atomic(run_dir / "cluster.toml", (party_dir / "cluster.toml").read_text())
    (run_dir / CERTS).mkdir(parents=True, exist_ok=True)
    for crt in sorted((party_dir / CERTS).glob("*.crt")):
        dst = run_dir / CERTS / crt.name
        tmp = dst.with_name(f".{crt.name}.{os.getpid()}.tmp")
        shutil.copyfile(crt, tmp)
        os.replace(tmp, dst)


def _entries(raw_lines: list[bytes]) -> list[dict[str, Any]]:
    """The parseable entries of a transcript's lines (a line cut by a crash is skipped)."""
    out = []
    for raw in raw_lines:
        try:
            e = json.loads(raw)
        except ValueError:
            continue
        if isinstance(e, dict):
            out.append(e)
    return out


def restart_refusal(run_dir: Path, name: str, session: str) -> str | None:
    """Why ``name`` may not start again in this session's run directory (None: it may).

    Reads only: a party whose transcript of this session is closed has finished, and one whose
    transcript records a protocol message (or the ``speak`` entry it signs before its first)
    would randomize or deal again; neither may start, and nothing is renamed or rewritten."""
    path = run_dir / "transcripts" / f"{name}.jsonl"
    if not path.is_file():
        return None
    with open(path, "rb") as f:
        first = _entries([f.readline()])
        if not first or first[0].get("session") != session:
            return None  # another run's leftovers in this directory: overwritten, as before
        f.seek(max(0, path.stat().st_size - (64 << 10)))
        tail = _entries(f.read().splitlines())
    closed = next((e for e in reversed(tail) if e.get("dir") == "close"), None)
    if closed is not None:
        return (
            f"{name} already took part in session {session[:8]}... and closed its transcript "
            f"({closed.get('status', '?')}): a finished party cannot rejoin or run again "
            "(its transcript is kept as it is; start a new run with sdp cluster init)"
        )
    with open(path, "rb") as f:
        for e in _entries(list(f)):
            if e.get("dir") == SPEAK or (
                e.get("dir") == "send" and not str(e.get("ty", "_")).startswith("_")
            ):
                return (
                    f"{name} cannot rejoin session {session[:8]}...: its crashed incarnation "
                    f"had already sent protocol messages (transcript entry {e.get('i')}); a "
                    "party that spoke never randomizes or deals again"
                )
    return None


def incarnation_of(run_dir: Path, name: str, session: str) -> int:
    """This start's incarnation: 0 for a first start; after a crash in this session (the
    party's transcript is there, unclosed, and records no protocol message), the crashed
    transcript is kept as ``NAME.crashed-K.jsonl`` and the party rejoins as incarnation K + 1.
    A party that may not start again (``restart_refusal``): ClusterError, nothing touched."""
    why = restart_refusal(run_dir, name, session)
    if why:
        raise ClusterError(why)
    tdir = run_dir / "transcripts"
    path = tdir / f"{name}.jsonl"
    if not path.exists():
        return 0
    with open(path, "rb") as f:
        first = _entries([f.readline()])
    if not first or first[0].get("session") != session:
        return 0
    k = len(list(tdir.glob(f"{name}.crashed-*.jsonl")))
    os.replace(path, tdir / f"{name}.crashed-{k}.jsonl")
    return k + 1


class Interrupted(BaseException):
    """SIGINT or SIGTERM: raised wherever the party is (CPU-bound work included), once."""

    def __init__(self, sig: signal.Signals) -> None:
        super().__init__(f"interrupted by {sig.name}")
        self.sig = sig


_STATE: dict[str, Any] = {
    "closing": False,
    "node": None,
    "signal": None,
    "task": None,
    "peer_abort": None,  # the reason a peer gave when it aborted the run
}


def _quiet_interrupt(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A signal's ``Interrupted`` raised inside a transport callback is caught and logged by
    asyncio as a fatal error with a traceback; the signal's other path (cancelling the party's
    task) stops the party, so it needs no report."""
    if isinstance(context.get("exception"), Interrupted):
        return
    loop.default_exception_handler(context)


def _on_peer_abort(reason: str) -> None:
    """A peer aborted the run: stop now (the party's task is cancelled wherever it awaits,
    CPU-bound pool work included), with the peer's abort as the reason."""
    if _STATE["closing"] or _STATE["signal"] is not None or _STATE["peer_abort"] is not None:
        return
    _STATE["peer_abort"] = reason
    task = _STATE["task"]
    if task is not None:  # after the task has taken what arrived before the abort
        task.get_loop().call_soon(_cancel_unless_closing)


def _on_signal(signum: int, frame: Any) -> None:
    """Two paths, so that neither can be lost: raise where the party is (CPU-bound work
    included; an exception raised inside a finalizer or weakref callback is swallowed by
    Python), and cancel the party's task from the event loop as soon as it runs again."""
    if _STATE["closing"] or _STATE["signal"] is not None:
        return  # once the party is closing, or already interrupted, a signal changes nothing
    sig = signal.Signals(signum)
    _STATE["signal"] = sig
    kill_pool_workers()  # else the pool's shutdown would wait for the work in flight
    task = _STATE["task"]
    if task is not None:
        try:
            task.get_loop().call_soon_threadsafe(_cancel_unless_closing)
        except RuntimeError:  # the loop is closed
            pass
    raise Interrupted(sig)


def _quiet_unraisable(unraisable: Any) -> None:
    """An ``Interrupted`` raised inside a finalizer is swallowed by Python (the event-loop
    path then stops the party): no traceback on screen for it."""
    if isinstance(unraisable.exc_value, Interrupted):
        return
    sys.__unraisablehook__(unraisable)


def _cancel_unless_closing() -> None:
    task = _STATE["task"]
    if not _STATE["closing"] and task is not None and not task.done():
        task.cancel()


def node_deadline(node: Node | None) -> str | None:
    """The reason the run's deadline gave, if it passed while this party waited."""
    return None if node is None else node.deadline_passed


def _say(name: str, text: str) -> None:
    print(f"[{name}] {text}", flush=True)


async def run_party(
    cluster: Cluster,
    name: str,
    keydir: Path,
    run_dir: Path,
    progress: bool = False,
    quiet: bool = True,
) -> int:
    """Run one party to completion; returns the process exit code. Unless ``quiet`` (or
    ``progress``: the launcher renders the events), one line per phase and a final line."""
    plan = get_plan(cluster)
    node: Node | None = None
    _STATE["task"] = asyncio.current_task()
    asyncio.get_running_loop().set_exception_handler(_quiet_interrupt)
    try:
        inc = incarnation_of(run_dir, name, cluster.session)
        if inc:
            log(name, f"restarted after a crash: rejoining as incarnation {inc}")
        # a signal while the transcript opens is handled once the node is known (so that the
        # transcript it opened is closed as aborted)
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, set(SIGNAL_EXIT))
        try:
            node = Node(
                cluster, name, keydir, run_dir, progress_printer() if progress else None, inc
            )
            _STATE["node"] = node
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        node.on_peer_abort = _on_peer_abort
        if not quiet and not progress:
            role = cluster.party(name).role
            _say(name, f"{role} of a {cluster.protocol} run over the {cluster.shuffler} shuffler")
            node.on_phase = lambda ph, rd: _say(name, f"phase {ph}" + (f" {rd}" if rd else ""))
        try:
            await node.start(plan.peers(cluster, name))
        except PeerError as exc:
            if not inc:
                raise
            # a restarted party that may not rejoin is no longer part of the run: it leaves
            # without telling its peers to abort (they go on without it, as a dropout)
            _STATE["closing"] = True
            log(name, f"error: {exc}")
            write_status(run_dir, name, {"status": "failed", "error": str(exc)})
            node.leave(str(exc))
            return 1
        await plan.run(node, cluster)
    except (Interrupted, asyncio.CancelledError) as exc:
        sig = _STATE["signal"]
        if sig is None and _STATE["peer_abort"] is not None:  # a peer aborted the run
            _STATE["closing"] = True
            reason = _STATE["peer_abort"]
            stop_pools()  # work in flight is of no use any more: do not wait for it
            log(name, reason)
            write_status(run_dir, name, {"status": "failed", "error": reason})
            if node is not None:
                await _close_quietly(node, f"{name}: {reason}")
            return 1
        if sig is None:  # a cancellation that is not ours
            raise
        _STATE["closing"] = True
        reason = f"interrupted by {sig.name}"
        log(name, reason)
        write_status(run_dir, name, {"status": "failed", "error": reason})
        if node is not None:
            await _close_quietly(node, f"{name}: {reason}")
        del exc
        return SIGNAL_EXIT[sig]
    except EXPECTED as exc:
        _STATE["closing"] = True
        # a failure that follows a peer's abort is that abort (not, say, "too few servers left")
        # a failure that follows a peer's abort is that abort, unless it is this party's own
        # privacy refusal of what the peer sent before aborting (its ledger matters)
        own = isinstance(exc, PrivacyRefusal)
        reason = str(exc) if own else (_STATE["peer_abort"] or node_deadline(node) or str(exc))
        log(name, f"error: {reason}")
        write_status(run_dir, name, {"status": "failed", "error": reason})
        if node is not None:
            await _close_quietly(node, f"{name}: {reason}")
        return 1
    except Exception as exc:  # a bug: keep the traceback in the log, one line on screen
        _STATE["closing"] = True
        reason = f"internal error {type(exc).__name__}: {exc}"
        (run_dir / "logs").mkdir(parents=True, exist_ok=True)
        (run_dir / "logs" / f"{name}.traceback").write_text(traceback.format_exc())
        log(name, f"{reason} (traceback in logs/{name}.traceback)")
        write_status(run_dir, name, {"status": "failed", "error": reason})
        if node is not None:
            await _close_quietly(node, f"{name}: {reason}")
        return 1
    _STATE["closing"] = True
    await node.close("ok")
    write_status(run_dir, name, {"status": "ok"})
    if not quiet and not progress:
        done = "finished"
        if (run_dir / "result.json").exists() and cluster.party(name).role == "analyzer":
            done += f"; result published in {run_dir / 'result.json'}"
        _say(name, f"{done}; transcript {run_dir / 'transcripts' / (name + '.jsonl')} closed")
    return 0


async def _close_quietly(node: Node, reason: str) -> None:
    """Close the transcript as aborted and tell the peers, within a few seconds at most."""
    try:
        await asyncio.wait_for(node.close("aborted", reason), CLOSE_WAIT_S)
    except (asyncio.TimeoutError, asyncio.CancelledError, OSError, PeerError):
        node.transcript.close("aborted", reason)


def party_name(party_dir: Path, name: str | None) -> str:
    """The party a party directory belongs to: ``--name`` or the one ``*.key`` in it."""
    keys = sorted(p.stem for p in party_dir.glob("*.key"))
    if name is not None:
        return name
    if len(keys) != 1:
        raise ClusterError(
            f"{party_dir} holds {len(keys)} private keys ({', '.join(keys) or 'none'}); "
            "a party directory holds exactly its own (or pass --name)"
        )
    return keys[0]


def main(argv: list[str]) -> int:
    """Entry of ``sdp party``."""
    bound_allocator()  # before any thread or pool worker starts (parties.runtime.memory)
    ap = argparse.ArgumentParser(prog="sdp party", description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="this party's directory (sdp cluster init)")
    ap.add_argument("--name", help="this party's name (default: the one key in --dir)")
    ap.add_argument("--out", required=True, help="run directory for transcript, costs, status")
    ap.add_argument("--progress", action="store_true", help="print @@progress events on stdout")
    ap.add_argument(
        "--quiet",
        action="store_true",
        help="print nothing but errors (default: one line per phase)",
    )
    ap.add_argument(
        "--pool",
        metavar="SPEC",
        help="where this party's CPU-bound work runs: 'local' (process pool) or "
        "'dask://HOST:PORT' (a Dask scheduler; overrides the cluster file's [pool] entry)",
    )
    args = ap.parse_args(argv)
    run_dir = Path(args.out)
    party_dir = Path(args.dir)
    try:
        if not party_dir.is_dir():
            raise ClusterError(f"party directory {party_dir} not found")
        cluster = load_cluster(party_dir / "cluster.toml")
        check_roles(cluster)  # a typo in a role is refused here, in one line
        name = party_name(party_dir, args.name)
        cluster.party(name)
        cluster.local_data = read_local_data(party_dir, name)  # this host's own file, if any
        if args.pool is not None:
            from parties.runtime.pools import PoolSpecError, check_pool_spec

            try:
                cluster.pools[name] = check_pool_spec(args.pool)
            except PoolSpecError as exc:
                raise ClusterError(str(exc)) from None
        why = restart_refusal(run_dir, name, cluster.session) or session_ended(run_dir, cluster)
        if why:  # before anything is written
            print(f"sdp party: error: {why}", file=sys.stderr)
            return 2
        run_dir.mkdir(parents=True, exist_ok=True)
        rd, pd = run_dir.resolve(), party_dir.resolve()
        if rd == pd or rd in pd.parents:
            raise ClusterError(
                f"the party directory {party_dir} (it holds the private key) must not be inside "
                f"the run directory {run_dir}, which is published"
            )
        publish_public_files(party_dir, run_dir)
    except (ClusterError, OSError) as exc:
        print(f"sdp party: {exc}", file=sys.stderr)
        return 2
    sys.unraisablehook = _quiet_unraisable
    for sig in SIGNAL_EXIT:
        signal.signal(sig, _on_signal)
    try:
        return asyncio.run(
            run_party(cluster, name, party_dir, run_dir, args.progress, quiet=args.quiet)
        )
    except Interrupted as exc:  # raised in the event loop itself (it was idle)
        log(name, str(exc))
        write_status(run_dir, name, {"status": "failed", "error": str(exc)})
        node = _STATE["node"]
        if node is not None:
            node.transcript.close("aborted", f"{name}: {exc}")  # synchronous: no network
        return SIGNAL_EXIT[exc.sig]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
