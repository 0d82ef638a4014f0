"""``sdp run [PROTOCOL] [options] --out RUN_DIR``: every party of a run as its own local process.

Makes a cluster on loopback (free ports), keys and certificates, starts ``sdp party`` for each
party, renders progress, and collects ``result.json``, ``transcripts/``, ``costs.json`` into
RUN_DIR. If any party fails, RUN_DIR is marked aborted (``ABORTED.json``) and holds no result.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from parties.runtime.cluster import Cluster, ClusterError, PartySpec, dump_cluster, new_session_id
from parties.runtime.keys import make_cluster_keys
from parties.runtime.plans import plan_for

# The main job (plain ``sdp run``): PSRR-SS on the bundled Adult data through the verifiable
# mix-net with 3 servers (threshold 2), then the full verification.
MAIN_JOB = {
    "protocol": "psrr-ss",
    "shuffler": "mixnet",
    "params": {"dataset": "adult", "epsilon": 1.0},
}
DEFAULT_SHUFFLER = "trusted"


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """n distinct currently free TCP ports (bound then released)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def _kill_group(pid: int) -> None:
    """SIGKILL a party's whole process group (it was started as a session leader)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="sdp run", description=__doc__.splitlines()[0])
    ap.add_argument(
        "protocol",
        nargs="?",
        default=None,
        help="protocol (default: the main job, PSRR-SS on the bundled Adult data "
        "through a 3-server mix-net, verified)",
    )
    ap.add_argument("--shuffler", choices=["trusted", "mixnet", "mpc"], default=None)
    ap.add_argument("--users", type=int, help="number of simulated users")
    ap.add_argument("--domain", type=int, help="domain size (single-attribute protocols)")
    ap.add_argument("--epsilon", type=float, help="central privacy target eps_c")
    ap.add_argument("--local-epsilon", type=float, help="override the local epsilon")
    ap.add_argument("--delta", type=float)
    ap.add_argument(
        "--bound",
        choices=["balle", "fmt21", "vr", "paper", "tight"],
        help="amplification bound used to calibrate the local epsilon",
    )
    ap.add_argument("--dataset", help="dataset name (protocol specific)")
    ap.add_argument("--k", type=int, help="top-k size (gfim, ldpminer)")
    ap.add_argument("--transactions", type=int, help="txpub: transactions drawn")
    ap.add_argument("--items", type=int, help="txpub: items (split evenly between the sites)")
    ap.add_argument("--solver", choices=["gs", "ls"], help="txpub: global (secure LM) or local")
    ap.add_argument("--seed", type=int, help="seed for reproducible client randomness")
    ap.add_argument(
        "--clients", type=int, default=2, help="client-population processes (the mix-net uses one)"
    )
    ap.add_argument("--mix-servers", type=int, default=3, help="mix servers (mixnet)")
    ap.add_argument("--threshold", type=int, default=2, help="decryption threshold (mixnet)")
    ap.add_argument("--servers", type=int, default=3, help="MPC shuffler servers (mpc)")
    ap.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra protocol parameter (repeatable)",
    )
    ap.add_argument("--phase-timeout", type=float, default=120.0, help="seconds per phase")
    ap.add_argument("--out", help="run directory (default: runs/PROTOCOL-TIMESTAMP)")
    ap.add_argument("--quiet", action="store_true", help="no progress display")
    ap.add_argument("--json", action="store_true", help="print result.json instead of tables")
    ap.add_argument("--no-verify", action="store_true", help="skip sdp verify after the run")
    return ap


def _parse_value(v: str) -> Any:
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(v.lower(), v)


def collect_params(args: argparse.Namespace) -> dict[str, Any]:
    """Protocol parameters from the options (unset options are left to the workload)."""
    params: dict[str, Any] = {}
    for key in (
        "users",
        "domain",
        "epsilon",
        "local_epsilon",
        "delta",
        "bound",
        "dataset",
        "seed",
        "transactions",
        "items",
        "solver",
        "k",
    ):
        v = getattr(args, key)
        if v is not None:
            params[key] = v
    for item in args.param:
        if "=" not in item:
            raise ClusterError(f"--param expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        params[k.strip()] = _parse_value(v.strip())
    return params


class Monitor:
    """Progress display of the parties' ``@@progress`` events (rich), or nothing if quiet."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet or not sys.stderr.isatty()
        self._tasks: dict[str, Any] = {}
        self._progress = None
        if not self.quiet:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                TimeElapsedColumn(),
                transient=True,
            )
            self._progress.start()

    def event(self, ev: dict[str, Any]) -> None:
        if self._progress is None:
            return
        key = f"{ev['party']}: {ev['label']}"
        if key not in self._tasks:
            self._tasks[key] = self._progress.add_task(key, total=ev["total"])
        self._progress.update(self._tasks[key], completed=ev["done"], total=ev["total"])

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()


async def _pump(
    stream: asyncio.StreamReader,
    name: str,
    log_file: Any,
    monitor: Monitor,
    errors: dict[str, list[str]],
    is_stderr: bool,
) -> None:
    while True:
        line = await stream.readline()
        if not line:
            return
        text = line.decode("utf-8", "replace").rstrip("\n")
        if text.startswith("@@progress "):
            try:
                monitor.event(json.loads(text[11:]))
            except (ValueError, KeyError):
                pass
            continue
        log_file.write(text + "\n")
        log_file.flush()
        if is_stderr:
            errors.setdefault(name, []).append(text)


async def launch(cluster: Cluster, run_dir: Path, monitor: Monitor) -> dict[str, Any]:
    """Start every party; wait; return {name: {exit, errors}}."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    logs = run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    procs: dict[str, asyncio.subprocess.Process] = {}
    errors: dict[str, list[str]] = {}
    pumps = []
    files = []
    for p in cluster.parties:
        cmd = [
            sys.executable,
            "-m",
            "parties.runtime.party",
            "--cluster",
            str(run_dir / "cluster.toml"),
            "--keys",
            str(run_dir / "keys"),
            "--name",
            p.name,
            "--out",
            str(run_dir),
            "--progress",
        ]
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        procs[p.name] = proc
        f = open(logs / f"{p.name}.log", "w")  # noqa: SIM115
        files.append(f)
        assert proc.stdout is not None and proc.stderr is not None
        pumps.append(asyncio.create_task(_pump(proc.stdout, p.name, f, monitor, errors, False)))
        pumps.append(asyncio.create_task(_pump(proc.stderr, p.name, f, monitor, errors, True)))
    # Each party is its own process group (like a host): when a party ends, whatever it left
    # behind (pool workers) goes with it. Exit codes are polled: asyncio's wait() would also
    # wait for the log pipes, which a stray process could hold open.
    outcome: dict[str, Any] = {}
    first_failure: float | None = None
    grace = cluster.phase_timeout + 15.0
    while len(outcome) < len(procs):
        await asyncio.sleep(0.1)
        for name, proc in procs.items():
            if name in outcome or proc.returncode is None:
                continue
            outcome[name] = {"exit": proc.returncode}
            _kill_group(proc.pid)
            if proc.returncode != 0 and first_failure is None:
                first_failure = time.monotonic()
        if first_failure is not None and time.monotonic() - first_failure > grace:
            for name, proc in procs.items():
                if name not in outcome and proc.returncode is None:
                    _kill_group(proc.pid)
                    errors.setdefault(name, []).append(
                        f"killed by the launcher {grace:.0f} s after the first failure"
                    )
    try:
        await asyncio.wait_for(asyncio.gather(*pumps), 5.0)
    except asyncio.TimeoutError:
        for task in pumps:
            task.cancel()
    for f in files:
        f.close()
    for name in outcome:
        outcome[name]["errors"] = errors.get(name, [])[-5:]
    return outcome


def print_summary(result: dict[str, Any], costs: dict[str, Any]) -> None:
    from rich.table import Table

    from parties.runtime.ui import console

    con = console()
    ev = result.get("evaluation", {})
    tab = ev.get("table")
    if tab:
        t = Table(title=tab.get("title", "estimate vs truth"))
        for c in tab["columns"]:
            t.add_column(str(c), justify="right")
        for row in tab["rows"]:
            t.add_row(*[f"{x:.4f}" if isinstance(x, float) else str(x) for x in row])
        con.print(t)
    scalars = {k: v for k, v in ev.items() if isinstance(v, (int, float, str)) and k != "table"}
    if scalars:
        con.print(
            "  ".join(
                f"{k} = {v:.6g}" if isinstance(v, float) else f"{k} = {v}"
                for k, v in scalars.items()
            )
        )
    priv = result.get("privacy", {})
    if priv:
        con.print(
            "privacy: "
            + ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in priv.items()
                if v not in (None, "")
            )
        )
    from parties.costs import cost_table

    con.print(cost_table(costs, by_round=False))


def main(argv: list[str]) -> int:
    """Entry of ``sdp run``."""
    args = build_parser().parse_args(argv)
    main_job = args.protocol is None
    protocol = args.protocol or MAIN_JOB["protocol"]
    shuffler = args.shuffler or (MAIN_JOB["shuffler"] if main_job else DEFAULT_SHUFFLER)
    try:
        params = collect_params(args)
        if main_job:
            params = {**MAIN_JOB["params"], **params}
        plan = plan_for(protocol, shuffler)
        if hasattr(plan, "validate"):  # protocol-specific plans (txpub) are not workloads
            plan.validate(params)
            workload = None
        else:
            from protocols.workloads import get_workload

            workload = get_workload(protocol, dict(params))
        layout = plan.layout(
            {
                "clients": args.clients,
                "mix_servers": args.mix_servers,
                "threshold": args.threshold,
                "servers": args.servers,
            }
        )
    except (ClusterError, KeyError, ValueError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"sdp run: {msg}", file=sys.stderr)
        return 2
    if shuffler == "mixnet":
        params.setdefault("threshold", args.threshold)
    mpc_tls_dir: Path | None = None
    run_dir = Path(args.out or f"runs/{protocol}-{time.strftime('%Y%m%d-%H%M%S')}")
    if run_dir.exists() and any(run_dir.iterdir()):
        print(f"sdp run: {run_dir} exists and is not empty; choose another --out", file=sys.stderr)
        return 2
    run_dir.mkdir(parents=True, exist_ok=True)
    ports = free_ports(len(layout) + (args.servers if shuffler == "mpc" else 0))
    if shuffler == "mpc":
        # MPyC's own mesh among the servers: one port each, TLS with its own CA (MPyC's layout)
        from parties.mpc_shuffle.mpyc_runtime import write_mpyc_tls_files

        params["mpc_ports"] = ports[len(layout) :]
        mpc_tls_dir = (run_dir / "keys" / "mpyc").resolve()
        write_mpyc_tls_files(str(mpc_tls_dir), args.servers)
        params["mpc_tls_dir"] = str(mpc_tls_dir)
        ports = ports[: len(layout)]
    cluster = Cluster(
        session=new_session_id(),
        protocol=protocol,
        shuffler=shuffler,
        parties=[PartySpec(n, r, "127.0.0.1", port) for (n, r), port in zip(layout, ports)],
        params=params,
        phase_timeout=args.phase_timeout,
    )
    (run_dir / "cluster.toml").write_text(dump_cluster(cluster))
    make_cluster_keys(cluster, run_dir / "keys")
    monitor = Monitor(args.quiet or args.json)
    t0 = time.perf_counter()
    try:
        outcome = asyncio.run(launch(cluster, run_dir, monitor))
    finally:
        monitor.stop()
    wall = time.perf_counter() - t0
    from parties.costs import merge_costs

    costs = merge_costs(run_dir)
    failed = {n: o for n, o in outcome.items() if o["exit"] != 0}
    reasons = {
        n: (
            o["errors"][-1]
            if o["errors"]
            else f"killed by signal {-o['exit']}"
            if o["exit"] < 0
            else f"exit code {o['exit']}"
        )
        for n, o in failed.items()
    }
    # a plan may tolerate some failures (the mix-net completes without a dead mix server)
    tolerated = getattr(plan, "tolerated_roles", set())
    roles = {p.name: p.role for p in cluster.parties}
    faults = {}
    if failed and (run_dir / "result.json").exists() and all(roles[n] in tolerated for n in failed):
        faults, failed = reasons, {}
        print(
            "sdp run: tolerated failure(s): " + "; ".join(f"{n}: {r}" for n, r in faults.items()),
            file=sys.stderr,
        )
    if failed:
        (run_dir / "result.json").unlink(missing_ok=True)
        (run_dir / "ABORTED.json").write_text(
            json.dumps({"aborted": True, "failed_parties": reasons, "wall_s": wall}, indent=1)
        )
        print(
            f"sdp run: run aborted ({len(failed)} of {len(outcome)} parties failed); "
            f"nothing published. {run_dir}/ABORTED.json",
            file=sys.stderr,
        )
        for n, r in reasons.items():
            print(f"  {n}: {r}", file=sys.stderr)
        return 1
    result_path = run_dir / "result.json"
    if not result_path.exists():
        print(f"sdp run: every party exited cleanly but {result_path} is missing", file=sys.stderr)
        return 1
    result = json.loads(result_path.read_text())
    if workload is not None:
        result["evaluation"] = workload.report(result["estimate"])
    else:
        result["evaluation"] = plan.evaluate(params, {**result, "_run_dir": str(run_dir)})
    result["evaluation_note"] = (
        "computed by the launcher from the true data after the run; not part of the protocol"
    )
    result["wall_s"] = wall
    if faults:
        result["faults"] = faults
    result_path.write_text(json.dumps(result, indent=1))
    status = 0
    if not args.no_verify:
        from parties.verify.run import verify_run

        report = verify_run(run_dir, progress=False)
        result["verified"] = report.ok
        result_path.write_text(json.dumps(result, indent=1))
        if not report.ok:
            print(f"sdp run: verification FAILED: {report.first_failure}", file=sys.stderr)
            status = 1
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print_summary(result, costs)
        print(
            f"run directory: {run_dir}  (wall {wall:.1f} s"
            + (", verified" if result.get("verified") else "")
            + ")"
        )
    return status
