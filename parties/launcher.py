"""``sdp run [PROTOCOL] [options] --out RUN_DIR``: every party of a run as its own local process.

Lays the run out on loopback (free ports), writes one party directory per party (public cluster
file, that party's private key only, every certificate) in a private temporary directory outside
the run directory, starts ``sdp party --dir`` for each party, renders progress, and collects
``result.json``, ``transcripts/``, ``costs.json`` into RUN_DIR. The private keys are deleted after
the run (``--keep-keys DIR`` keeps the party directories there); the run directory holds
certificates only, and ``RUN_DIR.trust.json`` beside it holds their fingerprints for
``sdp verify --trust``. If any party fails, or the launcher is interrupted (Ctrl-C, SIGINT,
SIGTERM: every party is stopped), RUN_DIR is marked aborted (``ABORTED.json``) and holds no
result.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from parties.runtime.backend import backend, default_shuffler
from parties.runtime.cleanup import (
    Stopped,
    Watchdog,
    die_with_parent,
    restore_signals,
    stop_on_signals,
)
from parties.runtime.cluster import ClusterError, dump_cluster, write_local_data
from parties.runtime.cluster_init import layout_cluster
from parties.runtime.keys import TRUST, make_party_dirs
from parties.runtime.limits import check_fanout
from parties.runtime.party import publish_public_files, write_atomic
from parties.runtime.plans import (
    backend_of,
    extra_ports,
    plan_for,
    prepare_party_dirs,
    tolerated_roles,
)
from parties.runtime.processes import Monitor, free_ports, launch
from parties.runtime.run_options import add_run_options, netem_table, protocol_help, resolve_job
from parties.summary import (
    estimate_table,
    item_ids,
    labelled_marginals,
    numeric_estimate,
    numeric_line,
    privacy_lines,
    schema_labels,
    top_k_items,
    top_k_table,
)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="sdp run", description=__doc__.splitlines()[0])
    add_run_options(ap)
    ap.add_argument("--out", help="run directory (default: runs/PROTOCOL-TIMESTAMP)")
    ap.add_argument(
        "--keep-keys",
        metavar="DIR",
        help="keep the party directories (private keys) in DIR, outside the run directory",
    )
    ap.add_argument(
        "--pool",
        metavar="SPEC",
        help="where the mix servers' CPU-bound work runs: 'local' (each its own process pool, "
        "the default) or 'dask://HOST:PORT' (a Dask scheduler; docs/scale.md)",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress display")
    ap.add_argument("--json", action="store_true", help="print result.json instead of tables")
    ap.add_argument("--no-verify", action="store_true", help="skip sdp verify after the run")
    ap.add_argument(
        "--evaluate-not-private",
        action="store_true",
        help="with --data: also compute the TRUE statistics of FILE (every true marginal, the "
        "true mean or the true item frequencies) and the estimate's error against them, and "
        f"write them to RUN_DIR{EVALUATION_SUFFIX} beside the run directory. Not differentially "
        "private: for the operator's eyes only, never publish it (runs on bundled or synthetic "
        "data always write it; result.json never holds it)",
    )
    return ap


EVALUATION_SUFFIX = ".evaluation-NOT-PRIVATE.json"
EVALUATION_WARNING = (
    "NOT PRIVATE: true statistics of the run's data, computed by the launcher after the run; "
    "for the operator's eyes only. Not part of the protocol, not covered by the privacy "
    "ledger, not in result.json: never publish this file"
)


def evaluation_path(run_dir: Path) -> Path:
    """The operator-only evaluation of a run: beside RUN_DIR (never inside what is published)."""
    return run_dir.with_name(run_dir.name + EVALUATION_SUFFIX)


def write_evaluation(run_dir: Path, evaluation: dict[str, Any]) -> Path:
    """Write the operator-only evaluation (true statistics) beside RUN_DIR, owner-readable only."""
    path = evaluation_path(run_dir)
    write_atomic(
        path,
        json.dumps(
            {"NOT_PRIVATE": EVALUATION_WARNING, "run": str(run_dir), "evaluation": evaluation},
            indent=1,
        ),
    )
    os.chmod(path, 0o600)
    return path


def _inside(path: Path, root: Path) -> bool:
    p, r = path.resolve(), root.resolve()
    return p == r or r in p.parents


def _give_clients_their_data(cluster: Any, data: Path, keys_root: Path) -> tuple[Any, list[str]]:
    """Split ``data`` among the client parties (each part in that party's private directory);
    each declares its part's data lines (its public user count). Returns the cluster and, for
    the operator only (never published), one line per client on what its schema excluded."""
    from dataclasses import replace

    from parties.runtime.own_data import PART_NAME, split_for_clients
    from protocols.datasets.schema import parse_schema

    schema = parse_schema(str(cluster.params["schema"]), "the run's schema")
    clients = [p.name for p in cluster.by_role("client")]
    dest = {c: (keys_root / c / PART_NAME).resolve() for c in clients}
    for c in clients:
        (keys_root / c).mkdir(mode=0o700, parents=True, exist_ok=True)
    kept, reports = split_for_clients(data, schema, clients, dest)
    parties = [replace(p, users=kept[p.name]) if p.name in dest else p for p in cluster.parties]
    for c in clients:  # the path stays in the client's own directory, out of the public file
        write_local_data(keys_root / c, str(dest[c]))
    return replace(cluster, parties=parties), [f"{c}: {r.summary()}" for c, r in reports.items()]


def abort_run(
    run_dir: Path,
    reasons: dict[str, str],
    wall: float,
    why: str,
    released: dict[str, Any] | None = None,
) -> None:
    """Mark RUN_DIR aborted: no result, ``ABORTED.json`` with the reasons and the ledger of
    every release that passed the gate before the abort (earlier rounds' results, which went
    out to the clients and the shuffler; an empty ledger when none did)."""
    (run_dir / "result.json").unlink(missing_ok=True)
    ledger: Any = released or {"releases": [], "total": None}
    if why != "privacy gate":  # only the analyzer's gate refusal names what it released
        ledger = (
            "not known to the launcher: a round state the analyzer broadcast before the abort "
            "is in its transcript (send entries of type 'state')"
        )
    write_atomic(
        run_dir / "ABORTED.json",
        json.dumps(
            {
                "aborted": True,
                "why": why,
                "failed_parties": reasons,
                "released_before_abort": ledger,
                "wall_s": wall,
            },
            indent=1,
        ),
    )


def gate_refusal(
    reasons: dict[str, str],
) -> tuple[str, dict[str, str], dict[str, Any] | None] | None:
    """(the stderr line, the reasons without ledgers, the ledger of what was released before
    the refusal) when a party's failure is a privacy-gate refusal; None otherwise."""
    from parties.clients.roles import released_before_refusal

    split = {n: released_before_refusal(r) for n, r in reasons.items()}
    refused = next((n for n, (r, _) in split.items() if "privacy gate refused" in r), None)
    if refused is None:
        return None
    reason, released = split[refused]
    line = reason.split("privacy gate refused to publish", 1)[-1]
    rel = (released or {}).get("releases") or []
    if rel:
        listed = "; ".join(
            f"round {r['round']}: {r['what']} (eps {r['eps']:.4g}, delta {r['delta']:.3g})"
            for r in rel
        )
        total = released["total"]  # type: ignore[index]
        text = (
            f"sdp run: the privacy gate refused{line}; ALREADY RELEASED before the refusal (to "
            f"the clients and the shuffler): {listed}; total eps {total['eps']:.4g}, delta "
            f"{total['delta']:.3g} (ABORTED.json)"
        )
    else:
        text = f"sdp run: nothing published: the privacy gate refused{line}"
    return text, {n: r for n, (r, _) in split.items()}, released


def public_noise_warning(protocol: str, params: dict[str, Any], plan: Any) -> str | None:
    """The protocol's "mostly noise" warning, built from the run's public parameters only (n,
    epsilon, the schema's domains): the same for a run on bundled data and on one's own file,
    whose records the launcher does not read for it."""
    if hasattr(plan, "validate"):  # protocol-specific plans (txpub) are not workloads
        return None
    from protocols.workloads import get_workload

    public = {k: v for k, v in params.items() if k != "data"}
    return get_workload(protocol, public).protocol.noise_warning()


def print_summary(
    result: dict[str, Any], costs: dict[str, Any], evaluation: dict[str, Any] | None = None
) -> None:
    from rich.table import Table

    from parties.runtime.ui import console

    con = console()
    ev = evaluation or {}
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
    labelled = result.get("estimate_labelled")
    if labelled and not tab:  # an own-data run: the published estimate, with its labels
        con.print(estimate_table(labelled))
    if result.get("top_k_items") is not None:  # an own-data top-k: by the file's item ids
        con.print(top_k_table(result))
    if result.get("estimate_in_units") and not tab:
        con.print(numeric_line(result["estimate_in_units"]), markup=False, highlight=False)
    for line in privacy_lines(result.get("privacy", {})):
        con.print(line, markup=False, highlight=False)
    from parties.costs import cost_table

    con.print(cost_table(costs, by_round=False))


def _memory_refusal(
    protocol: str, params: dict[str, Any], layout: dict[str, Any], n_parties: int, plan: Any,
    shuffler: str | None = None,
) -> str | None:  # fmt: skip
    """Why the run would not fit in memory (``parties.runtime.memory``), or None."""
    if hasattr(plan, "validate") or not params.get("users"):
        return None
    from parties.clients.roles import BLOCK_USERS
    from parties.runtime.memory import memory_refusal
    from protocols.workloads import get_workload

    protocol_obj = get_workload(protocol, dict(params)).protocol
    clients = int(layout.get("clients", 1))
    # the servers that keep the run's public record: the backend whose servers are "mix" roles
    servers = backend(shuffler or default_shuffler()).server_roles
    mix = int(layout.get("mix_servers") or 3) if "mix-server" in servers else 0
    return memory_refusal(
        protocol_obj, int(params["users"]), clients, n_parties, BLOCK_USERS, mix_servers=mix
    )


def main(argv: list[str]) -> int:
    """Entry of ``sdp run``."""
    if argv == ["--list"]:
        from parties.protocol_list import main as list_protocols

        return list_protocols([])
    extra = protocol_help(argv)
    if extra:
        print(build_parser().format_help() + "\n" + extra)
        return 0
    args = build_parser().parse_args(argv)
    try:
        if args.pool is not None:
            from parties.runtime.pools import check_pool_spec

            check_pool_spec(args.pool)
        protocol, shuffler, params, layout_options = resolve_job(args)
    except ArithmeticError as exc:
        print(
            f"sdp run: a parameter is outside the range the protocol's calibration can compute "
            f"with ({type(exc).__name__}: {exc}); check --epsilon, --users and --param values",
            file=sys.stderr,
        )
        return 2
    except (ClusterError, KeyError, ValueError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"sdp run: {msg}", file=sys.stderr)
        return 2
    plan = plan_for(protocol, shuffler)
    n_parties = len(plan.layout(layout_options))
    extra = extra_ports(protocol, shuffler, layout_options)
    if "clients" in layout_options and protocol != "txpub":
        users = params.get("users")
        source = args.data if getattr(args, "data", None) else "--users"
        clients = int(layout_options["clients"])
        try:
            check_fanout(
                clients, None if users is None else int(users), n_parties - clients, source
            )
        except ClusterError as exc:
            print(f"sdp run: {exc}", file=sys.stderr)
            return 2
    why = _memory_refusal(protocol, params, layout_options, n_parties, plan, shuffler)
    if why:
        print(f"sdp run: {why}", file=sys.stderr)
        return 2
    run_dir = Path(args.out or f"runs/{protocol}-{time.strftime('%Y%m%d-%H%M%S')}")
    if run_dir.exists() and any(run_dir.iterdir()):
        print(f"sdp run: {run_dir} exists and is not empty; choose another --out", file=sys.stderr)
        return 2
    if args.keep_keys and _inside(Path(args.keep_keys), run_dir):
        print("sdp run: --keep-keys must be outside the run directory", file=sys.stderr)
        return 2
    run_dir.mkdir(parents=True, exist_ok=True)
    keys_root = (
        Path(args.keep_keys) if args.keep_keys else Path(tempfile.mkdtemp(prefix="sdp-keys-"))
    )
    keys_root.mkdir(parents=True, exist_ok=True)
    os.chmod(keys_root, 0o700)
    # nothing outlives the launcher, however it ends (parties.runtime.cleanup)
    die_with_parent()
    saved = stop_on_signals()
    watchdog = Watchdog(None if args.keep_keys else keys_root)
    try:
        return _run(
            args,
            run_dir,
            keys_root,
            protocol,
            shuffler,
            params,
            layout_options,
            n_parties,
            extra,
            watchdog.watch,
        )
    except Stopped as exc:  # before the parties started: none to stop
        abort_run(run_dir, {}, 0.0, str(exc))
        print(f"sdp run: {exc} before the parties started; nothing published", file=sys.stderr)
        return 128 + int(exc.sig)
    finally:
        if not args.keep_keys:
            shutil.rmtree(keys_root, ignore_errors=True)
        watchdog.done()
        restore_signals(saved)


def _run(
    args: argparse.Namespace,
    run_dir: Path,
    keys_root: Path,
    protocol: str,
    shuffler: str,
    params: dict[str, Any],
    layout_options: dict[str, Any],
    n_parties: int,
    extra: int,
    started: Callable[[int], None] | None = None,
) -> int:
    ports = free_ports(n_parties + extra)
    cluster, plan = layout_cluster(
        protocol,
        shuffler,
        params,
        layout_options,
        {"*": "127.0.0.1"},
        ports,
        args.phase_timeout,
        extra,
    )
    cluster.netem = netem_table(args)
    if getattr(args, "data", None):
        cluster, excluded = _give_clients_their_data(cluster, Path(args.data), keys_root)
        if not args.quiet:  # the operator's terminal only: never in the run directory
            print(
                "sdp run: operator only, not published (each excluded row takes part as a "
                "dummy record):\n  " + "\n  ".join(excluded),
                file=sys.stderr,
            )
    if getattr(args, "pool", None):
        # the servers' pool (parties.runtime.pools; a server that has no pooled work, such as
        # an MPC server, ignores it); clients and the analyzer keep their local pools
        from parties.runtime.backend import all_server_roles
        from parties.runtime.pools import check_pool_spec

        spec = check_pool_spec(args.pool)
        roles = all_server_roles()
        cluster.pools = {p.name: spec for p in cluster.parties if p.role in roles}
    dirs = make_party_dirs(cluster, keys_root)
    prepare_party_dirs(cluster, dirs)
    trust = json.loads((next(iter(dirs.values())) / TRUST).read_text())
    trust_path = run_dir.with_name(run_dir.name + ".trust.json")
    write_atomic(trust_path, json.dumps(trust, indent=1))
    (run_dir / "cluster.toml").write_text(dump_cluster(cluster))
    publish_public_files(next(iter(dirs.values())), run_dir)
    workload = None
    evaluate = not getattr(args, "data", None) or args.evaluate_not_private
    if evaluate and backend_of(protocol, shuffler) is not None:
        from protocols.workloads import get_workload

        # the launcher evaluates on the whole file (never a party of the protocol)
        own = {"data": args.data} if getattr(args, "data", None) else {}
        workload = get_workload(protocol, {**params, **own})
    monitor = Monitor(args.quiet or args.json)
    t0 = time.perf_counter()
    try:
        outcome, interrupted = asyncio.run(launch(cluster, dirs, run_dir, monitor, started))
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
    if interrupted:
        abort_run(run_dir, reasons, wall, f"interrupted by {interrupted}")
        print(
            f"sdp run: interrupted by {interrupted}; every party stopped, nothing published. "
            f"{run_dir}/ABORTED.json",
            file=sys.stderr,
        )
        return {"SIGTERM": 143, "SIGHUP": 129}.get(interrupted, 130)
    # a plan may tolerate some failures (the mix-net completes without a dead mix server)
    tolerated = tolerated_roles(protocol, shuffler)
    roles = {p.name: p.role for p in cluster.parties}
    faults = {}
    if failed and (run_dir / "result.json").exists() and all(roles[n] in tolerated for n in failed):
        faults, failed = reasons, {}
        print(
            "sdp run: tolerated failure(s): " + "; ".join(f"{n}: {r}" for n, r in faults.items()),
            file=sys.stderr,
        )
    refusal = gate_refusal(reasons) if failed else None
    if refusal is not None:
        text, plain, released = refusal
        abort_run(run_dir, plain, wall, "privacy gate", released)
        print(text, file=sys.stderr)
        return 1
    if failed:
        abort_run(run_dir, reasons, wall, "party failure")
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
    # true statistics never go into result.json (docs/privacy.md): the operator's file beside it
    evaluation = None
    if workload is not None:
        evaluation = workload.report(result["estimate"])
    elif evaluate:
        evaluation = plan.evaluate(params, {**result, "_run_dir": str(run_dir)})
    if evaluation is not None:
        write_evaluation(run_dir, evaluation)
    result["wall_s"] = wall
    labels = schema_labels(params)  # public: the schema's value labels
    labelled = labelled_marginals(result.get("estimate") or {}, labels) if labels else None
    if labelled:
        result["estimate_labelled"] = labelled
    in_units = numeric_estimate(result.get("estimate") or {}, params)
    if in_units is not None:
        result["estimate_in_units"] = in_units  # the sum and mean in the file's units
    ids = item_ids(params)  # public: the schema's item ids
    top_items = top_k_items(result.get("estimate") or {}, ids) if ids else None
    if top_items is not None:
        result["top_k_items"] = top_items  # beside the estimate's 0-based top_k indices
    from mpc.ristretto import backend, backend_line

    result["group_backend"] = backend()  # parties inherit this process's environment
    if faults:
        result["faults"] = faults
    write_atomic(result_path, json.dumps(result, indent=1))
    status = 0
    if not args.no_verify:
        from parties.verify.run import verify_run

        report = verify_run(run_dir, progress=False, trust=trust)
        result["verified"] = report.ok
        write_atomic(result_path, json.dumps(result, indent=1))
        if not report.ok:
            print(f"sdp run: verification FAILED: {report.first_failure}", file=sys.stderr)
            status = 1
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print_summary(result, costs, evaluation)
        if evaluation is not None:
            print(f"operator only (NOT private, never publish): {evaluation_path(run_dir)}")
        print(
            f"run directory: {run_dir}  (wall {wall:.1f} s"
            + (", verified" if result.get("verified") else "")
            + f"); verify it later with: sdp verify {run_dir} --trust {trust_path}"
        )
        print(backend_line())
    noise = (
        workload.protocol.noise_warning()  # built from the public parameters too
        if workload is not None
        else public_noise_warning(protocol, params, plan)
    )
    if noise:  # from public parameters only (n, epsilon, schema): no look at the data
        print(f"WARNING: the estimate is mostly noise: {noise}", file=sys.stderr)
    return status
