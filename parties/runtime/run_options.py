"""The options that describe a run (``sdp run`` and ``sdp cluster init`` share them).

:func:`add_run_options` adds them to a parser, :func:`resolve_job` turns parsed options into
(protocol, shuffler, protocol parameters, layout options), checking that the protocol and its
parameters make a workload (or a protocol-specific plan) before anything is written.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from parties.runtime.backend import backends, default_shuffler, shuffler_names
from parties.runtime.cluster import ClusterError
from parties.runtime.plans import backend_of, plan_for
from protocols.params import EPSILON_DEFAULT, Param, ParamError
from protocols.workloads import check_params, pinned_defaults

# The main job (plain ``sdp run``): PSRR-SS on the bundled Adult data through the verifiable
# mix-net with 3 servers (threshold 2), then the full verification.
MAIN_JOB: dict[str, Any] = {
    "protocol": "psrr-ss",
    "shuffler": "mixnet",
    "params": {"dataset": "adult", "epsilon": EPSILON_DEFAULT},
}
PARAM_OPTIONS = (
    "min_users",
    "max_epsilon",
    "simulate_dropout",
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
)

# Parameters the parties and the launcher read themselves (run options here, each shuffler's in
# its backend's ``params``): any protocol accepts them; each protocol's own are declared in
# protocols/params.py.
RUNTIME_PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param(
            "seed", "int", "client seed: a SIMULATION without privacy (the seed is public)", low=0
        ),
        Param(
            "simulate_dropout",
            "float",
            "fraction of submissions that never leave their "
            "client parties (demonstration of the privacy gate)",
            low=0,
            high=0.999999,
        ),
    )
} | {p.name: p for b in backends().values() for p in b.params}


def add_run_options(ap: argparse.ArgumentParser, for_init: bool = False) -> None:
    """The options of a run (protocol parameters, shuffler and its layout)."""
    if not for_init:
        ap.add_argument(
            "protocol",
            nargs="?",
            default=None,
            help="protocol (default: the main job, PSRR-SS on the bundled Adult data "
            "through a 3-server mix-net, verified)",
        )
    ap.add_argument("--shuffler", choices=shuffler_names(), default=None)
    ap.add_argument("--users", type=int, help="number of simulated users")
    ap.add_argument("--domain", type=int, help="domain size (single-attribute protocols)")
    ap.add_argument("--epsilon", type=float, help="central privacy target eps_c")
    ap.add_argument("--local-epsilon", type=float, help="override the local epsilon")
    ap.add_argument("--delta", type=float)
    ap.add_argument(
        "--bound",
        choices=["balle", "fmt21", "vr", "paper", "tight", "exact"],
        help="amplification bound used to calibrate the local epsilon",
    )
    ap.add_argument("--dataset", help="dataset name (protocol specific)")
    ap.add_argument("--k", type=int, help="top-k size (gfim, ldpminer)")
    ap.add_argument("--transactions", type=int, help="txpub: transactions drawn")
    ap.add_argument("--items", type=int, help="txpub: items (split evenly between the sites)")
    ap.add_argument("--solver", choices=["gs", "ls"], help="txpub: global (secure LM) or local")
    ap.add_argument(
        "--seed",
        type=int,
        help="seed for reproducible client randomness: a SIMULATION without privacy (the seed "
        "is public, so every user's local noise can be recomputed)",
    )
    ap.add_argument("--clients", type=int, default=2, help="client parties")
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
    ap.add_argument(
        "--netem",
        metavar="SETTINGS",
        help='WAN emulation on every link, e.g. "rtt=50ms,rate=100mbit" (sender-side delay and '
        "token bucket in the transport and MPyC's mesh; docs/costs.md)",
    )
    ap.add_argument(
        "--schema",
        help="public schema (TOML, docs/data.md) of the data: every protocol parameter comes "
        "from it, never from the records",
    )
    if for_init:
        ap.add_argument(
            "--rejoin-window",
            type=float,
            default=120.0,
            help="seconds the others wait for a crashed party that had sent nothing yet to be "
            "restarted with its directory and rejoin (0: it drops out at once; default 120)",
        )
    if not for_init:
        ap.add_argument(
            "--data",
            help="your own records file (CSV/TSV/transactions, optionally gzip), split among "
            "the client parties, each of which reads only its part",
        )
    ap.add_argument(
        "--min-users",
        type=int,
        help="fewest users the release may have (the "
        "count the protocol is calibrated at; default: all of them)",
    )
    ap.add_argument(
        "--max-epsilon",
        type=float,
        help="refuse to publish above this central "
        "epsilon when fewer users arrive (default: the target)",
    )
    ap.add_argument(
        "--simulate-dropout",
        type=float,
        help="demonstration: this fraction of the users' submissions never leave their client "
        "parties, to watch the privacy gate re-account or refuse",
    )


def check_cluster_params(cluster: Any) -> None:
    """A hand-written cluster file's protocol and ``[run.params]``, checked as ``sdp run``'s
    options are (unknown protocol or key with "did you mean", bad values with their range)."""
    from parties.runtime.cluster import did_you_mean
    from parties.runtime.plans import PROTOCOL_PLANS
    from protocols.workloads import WORKLOADS, get_workload

    try:
        get_workload("?", {})  # imports every registering module
    except KeyError:
        pass
    known = sorted({*WORKLOADS, *PROTOCOL_PLANS})
    if cluster.protocol not in known:
        raise ClusterError(
            f"[run] protocol {cluster.protocol!r} is unknown{did_you_mean(cluster.protocol, known)}"
        )
    try:
        check_params(cluster.protocol, cluster.params, RUNTIME_PARAMS)
    except ParamError as exc:
        raise ClusterError(f"[run.params] {exc}") from None


def protocol_help(argv: list[str]) -> str | None:
    """``sdp run NAME --help``: the parameters NAME takes (None without --help or a protocol)."""
    if not any(a in ("-h", "--help") for a in argv):
        return None
    from protocols.workloads import WORKLOADS, get_workload, help_table

    try:
        get_workload("?", {})  # imports every registering module
    except KeyError:
        pass
    names = [a for a in argv if not a.startswith("-") and a in WORKLOADS]
    return help_table(names[0], RUNTIME_PARAMS) if names else None


def parse_value(v: str) -> Any:
    """A ``--param`` value: int, float, bool or string."""
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(v.lower(), v)


def collect_params(args: argparse.Namespace) -> dict[str, Any]:
    """Protocol parameters from the options (unset options are left to the workload)."""
    params: dict[str, Any] = {}
    for key in PARAM_OPTIONS:
        v = getattr(args, key, None)
        if v is not None:
            params[key] = v
    from_param: set[str] = set()
    for item in args.param:
        if "=" not in item:
            raise ClusterError(f"--param expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        k = k.strip()
        if k in ("schema", "data"):
            raise ClusterError(f"--param {k}=...: give the file with --{k} FILE")
        if k in from_param:
            raise ClusterError(f"--param {k} is given twice; give it once")
        if k in params:
            raise ClusterError(
                f"{k} is given both as --{k.replace('_', '-')} {params[k]} and as --param "
                f"{k}={v.strip()}; give it once"
            )
        from_param.add(k)
        params[k] = parse_value(v.strip())
    for k, v in params.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise ClusterError(f"parameter {k} must be finite, got {v}")
    return params


def netem_table(args: argparse.Namespace) -> dict[str, Any]:
    """The cluster file's ``[netem]`` table for ``--netem`` ({} without it; ClusterError if
    malformed)."""
    text = getattr(args, "netem", None)
    if not text:
        return {}
    from parties.runtime.netem import NetemError, parse_conditions

    try:
        parse_conditions(text, "--netem")
    except NetemError as exc:
        raise ClusterError(str(exc)) from None
    return {"default": text}


def resolve_job(
    args: argparse.Namespace, protocol: str | None = None
) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """(protocol, shuffler, params, layout options) of the run the options describe.

    Builds the workload once (or validates a protocol-specific plan's parameters) so that a bad
    parameter is one clear error before anything is written.
    """
    netem_table(args)  # a malformed --netem is one line before anything is written
    protocol = protocol or getattr(args, "protocol", None) or getattr(args, "source", None)
    main_job = protocol is None
    protocol = protocol or MAIN_JOB["protocol"]
    shuffler = args.shuffler or (MAIN_JOB["shuffler"] if main_job else default_shuffler())
    params = collect_params(args)
    if main_job:
        params = {**MAIN_JOB["params"], **params}
    if getattr(args, "schema", None):
        params.update(own_data_params(args, params))
    elif getattr(args, "data", None):
        raise ClusterError("--data needs --schema: the public schema of the file (sdp data schema)")
    b = backend_of(protocol, shuffler)
    workload = None
    if b is None:  # protocol-specific plans (txpub) are not workloads
        plan_for(protocol, shuffler).validate(params)
    else:
        from protocols.workloads import get_workload

        try:
            check_params(protocol, params, RUNTIME_PARAMS, options=PARAM_OPTIONS)
        except ParamError as exc:
            raise ClusterError(str(exc)) from None
        for key, value in pinned_defaults(protocol).items():
            params.setdefault(key, value)
        workload = get_workload(protocol, dict(params))
        b.check_defences(params, protocol, workload)
    layout = {
        "clients": args.clients,
        "mix_servers": args.mix_servers,
        "threshold": args.threshold,
        "servers": args.servers,
    }
    plan_for(protocol, shuffler).layout(layout)  # raises on an impossible layout
    if b is not None:
        b.set_defaults(params, layout)
        b.check_params(params, layout)  # parameters a party would otherwise refuse mid-run
        b.check_workload(params, workload)  # batches it would refuse
    return protocol, shuffler, params, layout


def own_data_params(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (its text) and, with ``--data``, ``users`` (the file's data lines: the public number of
    participants, whatever the schema keeps of them)."""
    from pathlib import Path

    from protocols.datasets.schema import dump_schema, parse_schema

    try:
        text = Path(args.schema).read_text()
    except OSError as exc:
        raise ClusterError(f"--schema {args.schema}: {exc.strerror or exc}") from None
    schema = parse_schema(text, args.schema)  # SchemaError (a ValueError): one clear line
    # published: the schema's content only (names, domains, policies), never the file's comments
    out: dict[str, Any] = {"schema": dump_schema(schema)}
    data = getattr(args, "data", None)
    if data:
        from parties.runtime.own_data import count_rows
        from protocols.datasets.report import DataFileError

        try:
            rows, _ = count_rows(Path(data), schema)
        except (DataFileError, OSError) as exc:
            raise ClusterError(f"--data {data}: {exc}") from None
        if params.get("users") not in (None, rows):
            raise ClusterError(
                f"--users {params['users']} but {data} has {rows} data lines (one participant "
                "each); leave --users out with --data"
            )
        if rows < 2:
            raise ClusterError(f"{data}: {rows} data lines; nothing to run on")
        out["users"] = rows
    return out
