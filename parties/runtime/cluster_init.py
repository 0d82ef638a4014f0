"""``sdp cluster init``: lay out a run's parties and write one directory per party.

Two ways in::

    sdp cluster init CLUSTER.toml --out DIR          # a cluster file you wrote (session optional)
    sdp cluster init PROTOCOL [sdp run options] --host NAME=HOST ... --out DIR

With ``--certs DIR`` (``DIR/NAME.crt`` for every party, made on each host by ``sdp keygen``)
no key is made here: the party directories hold the cluster file, the certificates and
``trust.json`` (``anchor: per-host``), to merge into each host's own directory, which holds its
key. Without it every key is made in this one process (``anchor: one-process``): whoever runs it
could sign for every party, which suits one box, not a real deployment (docs/deploy.md).

The second lays the parties out as ``sdp run`` does (same options: ``--shuffler``,
``--mix-servers``, ``--clients``, ``--param`` ...) on the hosts you name (``--host`` repeated,
``--default-host`` for the rest), ports counting up from ``--port-base``. Either way ``DIR/NAME/``
is written for every party (``parties.runtime.keys``: the public cluster file, that party's
private key and nobody else's, every certificate, ``trust.json``), ``DIR/trust.json`` is the
auditor's copy of the trust anchor, and the exact command to run on each host is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from parties.runtime.cluster import (
    Cluster,
    ClusterError,
    PartySpec,
    check_ports,
    load_cluster,
    new_session_id,
    rejoin_window_seconds,
    write_local_data,
)
from parties.runtime.keys import PER_HOST, TRUST, collected_certificates, make_party_dirs
from parties.runtime.plans import (
    backend_of,
    check_roles,
    extra_ports,
    plan_for,
    prepare_party_dirs,
)
from parties.runtime.run_options import (
    add_run_options,
    check_cluster_params,
    netem_table,
    resolve_job,
)
from protocols.workloads import pinned_defaults


def layout_cluster(
    protocol: str,
    shuffler: str,
    params: dict[str, Any],
    layout_options: dict[str, Any],
    hosts: dict[str, str],
    ports: list[int],
    phase_timeout: float,
    extra_ports: int = 0,
) -> tuple[Cluster, Any]:
    """The cluster of a run laid out by its plan; ``hosts`` maps party names to hosts
    (``"*"``: everyone else); ``ports`` holds one port per party plus ``extra_ports``."""
    plan = plan_for(protocol, shuffler)
    layout = plan.layout(layout_options)
    if len(ports) < len(layout) + extra_ports:
        raise ClusterError(f"need {len(layout) + extra_ports} ports, got {len(ports)}")
    unknown = set(hosts) - {n for n, _ in layout} - {"*"}
    if unknown:
        raise ClusterError(
            f"--host names unknown parties {sorted(unknown)}; the run has "
            + ", ".join(n for n, _ in layout)
        )
    parties = []
    for (name, role), port in zip(layout, ports):
        host = hosts.get(name, hosts.get("*"))
        if host is None:
            raise ClusterError(f"no host for party {name!r} (use --host {name}=HOST)")
        parties.append(PartySpec(name, role, host, port))
    check_ports(parties, "sdp cluster init")
    b = backend_of(protocol, shuffler)
    if b is not None and extra_ports:
        b.assign_ports(params, ports[len(layout) : len(layout) + extra_ports])
    cluster = Cluster(
        session=new_session_id(),
        protocol=protocol,
        shuffler=shuffler,
        parties=parties,
        params=params,
        phase_timeout=phase_timeout,
    )
    return cluster, plan


def commands(cluster: Cluster, out: Path, per_host: bool = False) -> list[str]:
    """The command each host runs (one line per party); ``per_host``: in the directory that
    ``sdp keygen`` made on that host."""
    return [
        f"# on {p.host}: sdp party --dir "
        + (f"PARTYDIR-of-{p.name}" if per_host else str(out / p.name))
        + f" --out run/   ({p.role}, port {p.port})"
        for p in cluster.parties
    ]


def write_cluster(cluster: Cluster, out: Path, certs_dir: Path | None = None) -> dict[str, Path]:
    """Party directories for ``cluster`` under ``out`` plus ``out/trust.json``; with
    ``certs_dir`` the hosts' own certificates are pinned and no key is made."""
    if out.exists() and any(out.iterdir()):
        raise ClusterError(f"{out} exists and is not empty; choose another --out")
    check_roles(cluster)  # before any file is written
    from dataclasses import replace

    # a client's records file goes to its own directory only (local.toml), never into the
    # cluster file every party and the published run directory hold
    local = {**{p.name: p.data for p in cluster.parties if p.data}, **cluster.local_data}
    cluster = replace(cluster, parties=[replace(p, data="") for p in cluster.parties])
    certs = collected_certificates(cluster, certs_dir) if certs_dir is not None else None
    dirs = make_party_dirs(cluster, out, certs)
    for name, path in local.items():
        write_local_data(dirs[name], path)
    prepare_party_dirs(cluster, dirs)
    first = next(iter(dirs.values()))
    (out / TRUST).write_text((first / TRUST).read_text())
    return dirs


def _parse_client_data(items: list[str]) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    for item in items:
        try:
            name, rest = item.split("=", 1)
            path, users = rest.rsplit(":", 1)
            out[name.strip()] = (path.strip(), int(users))
        except ValueError:
            raise ClusterError(f"--client-data expects NAME=PATH:USERS, got {item!r}") from None
    return out


def _with_client_data(cluster: Cluster, data: dict[str, tuple[str, int]]) -> Cluster:
    from dataclasses import replace

    clients = [p.name for p in cluster.by_role("client")]
    missing = sorted(set(clients) - set(data))
    unknown = sorted(set(data) - set(clients))
    if missing or unknown:
        raise ClusterError(
            f"--client-data must name every client party ({', '.join(clients)}); "
            + (f"missing {missing}" if missing else f"unknown {unknown}")
        )
    parties = [replace(p, users=data[p.name][1]) if p.name in data else p for p in cluster.parties]
    return replace(cluster, parties=parties, local_data={n: d for n, (d, _) in data.items()})


def _parse_hosts(items: list[str], default: str | None) -> dict[str, str]:
    hosts: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise ClusterError(f"--host expects NAME=HOST, got {item!r}")
        name, host = item.split("=", 1)
        hosts[name.strip()] = host.strip()
    if default:
        hosts["*"] = default
    return hosts


def main(argv: list[str]) -> int:
    """Entry of ``sdp cluster``."""
    if not argv or argv[0] != "init":
        print(
            "usage: sdp cluster init (CLUSTER.toml | PROTOCOL [options]) --out DIR", file=sys.stderr
        )
        return 2
    ap = argparse.ArgumentParser(prog="sdp cluster init", description=__doc__.splitlines()[0])
    ap.add_argument("source", help="a cluster TOML file, or a protocol name (sdp run NAME)")
    ap.add_argument("--out", required=True, help="directory for the party directories")
    ap.add_argument("--host", action="append", default=[], metavar="NAME=HOST")
    ap.add_argument("--default-host", default="127.0.0.1", help="host of parties not named")
    ap.add_argument("--port-base", type=int, default=47000, help="first port (counting up)")
    ap.add_argument(
        "--client-data",
        action="append",
        default=[],
        metavar="NAME=PATH:USERS",
        help="a client party's own records file (a path on its host) and its declared number "
        "of users (public); with --schema, for a run on the data owners' own files",
    )
    ap.add_argument(
        "--certs",
        metavar="DIR",
        help="DIR/NAME.crt for every party, each made on its own host by sdp keygen: no key "
        "is made here (per-host trust anchor); without it this process makes every key",
    )
    add_run_options(ap, for_init=True)
    args = ap.parse_args(argv[1:])
    out = Path(args.out)
    try:
        if args.source.endswith(".toml"):
            cluster = load_cluster(args.source, session_optional=True)
            check_cluster_params(cluster)
            cluster.params = {**pinned_defaults(cluster.protocol), **cluster.params}
        else:
            client_data = _parse_client_data(args.client_data)
            if client_data and args.schema is None:
                raise ClusterError("--client-data needs --schema (the public schema of the files)")
            if client_data and args.users is None:
                args.users = sum(u for _, u in client_data.values())
            protocol, shuffler, params, layout_options = resolve_job(args, args.source)
            hosts = _parse_hosts(args.host, args.default_host)
            n_extra = extra_ports(protocol, shuffler, layout_options)
            n = len(plan_for(protocol, shuffler).layout(layout_options)) + n_extra
            ports = list(range(args.port_base, args.port_base + n))
            if ports[-1] > 65535:
                raise ClusterError(f"--port-base {args.port_base} leaves no room for {n} ports")
            cluster, _ = layout_cluster(
                protocol,
                shuffler,
                params,
                layout_options,
                hosts,
                ports,
                args.phase_timeout,
                n_extra,
            )
            if client_data:
                cluster = _with_client_data(cluster, client_data)
            cluster.rejoin_window = rejoin_window_seconds(args.rejoin_window, "--rejoin-window")
            cluster.netem = netem_table(args)
        dirs = write_cluster(cluster, out, Path(args.certs) if args.certs else None)
    except (ClusterError, KeyError, ValueError, ArithmeticError, OSError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"sdp cluster init: {msg}", file=sys.stderr)
        return 2
    trust = json.loads((out / TRUST).read_text())
    print(f"wrote {len(dirs)} party directories under {out} (session {cluster.session})")
    if trust.get("anchor") == PER_HOST:
        print(
            "per-host keys: copy each DIR/NAME/ into that host's own party directory (the one "
            "sdp keygen made, holding its key), then:"
        )
    else:
        print("copy each DIR/NAME/ to its host only (it holds that party's private key), then:")
        print(
            "note: every key was made by this one process (one-process trust anchor): whoever "
            "ran it could sign for every party; for a real deployment use sdp keygen on each "
            "host and --certs"
        )
    print("\n".join(commands(cluster, out, trust.get("anchor") == PER_HOST)))
    print(f"auditors verify with: sdp verify RUN_DIR --trust {out / TRUST}")
    print("certificate fingerprints (SHA-256):")
    for name, fp in trust["fingerprints"].items():
        print(f"  {name}: {fp}")
    return 0
