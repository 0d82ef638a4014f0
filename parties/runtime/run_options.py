"""The options that describe a run (``sdp run`` and ``sdp cluster init`` share them).

:func:`add_run_options` adds them to a parser, :func:`resolve_job` turns parsed options into
(protocol, shuffler, protocol parameters, layout options), checking that the protocol and its
parameters make a workload (or a protocol-specific plan) before anything is written.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from parties.runtime.cluster import ClusterError
from parties.runtime.plans import plan_for

# The main job (plain ``sdp run``): PSRR-SS on the bundled Adult data through the verifiable
# mix-net with 3 servers (threshold 2), then the full verification.
MAIN_JOB: dict[str, Any] = {
    "protocol": "psrr-ss",
    "shuffler": "mixnet",
    "params": {"dataset": "adult", "epsilon": 1.0},
}
DEFAULT_SHUFFLER = "trusted"
PARAM_OPTIONS = (
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
    ap.add_argument("--shuffler", choices=["trusted", "mixnet", "mpc"], default=None)
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
    for item in args.param:
        if "=" not in item:
            raise ClusterError(f"--param expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        params[k.strip()] = parse_value(v.strip())
    for k, v in params.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise ClusterError(f"parameter {k} must be finite, got {v}")
    return params


def resolve_job(
    args: argparse.Namespace, protocol: str | None = None
) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """(protocol, shuffler, params, layout options) of the run the options describe.

    Builds the workload once (or validates a protocol-specific plan's parameters) so that a bad
    parameter is one clear error before anything is written.
    """
    protocol = protocol or getattr(args, "protocol", None) or getattr(args, "source", None)
    main_job = protocol is None
    protocol = protocol or MAIN_JOB["protocol"]
    shuffler = args.shuffler or (MAIN_JOB["shuffler"] if main_job else DEFAULT_SHUFFLER)
    params = collect_params(args)
    if main_job:
        params = {**MAIN_JOB["params"], **params}
    plan = plan_for(protocol, shuffler)
    if hasattr(plan, "validate"):  # protocol-specific plans (txpub) are not workloads
        plan.validate(params)
    else:
        from protocols.workloads import get_workload

        get_workload(protocol, dict(params))
    if shuffler == "mixnet":
        params.setdefault("threshold", args.threshold)
    layout = {
        "clients": args.clients,
        "mix_servers": args.mix_servers,
        "threshold": args.threshold,
        "servers": args.servers,
    }
    plan.layout(layout)  # raises on an impossible layout
    return protocol, shuffler, params, layout
