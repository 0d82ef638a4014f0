"""Run plan of the MPC secret-shared shuffler (``sdp run ... --shuffler mpc``).

Parties: ``client-1..P`` (user populations), ``mpc-1..m`` (servers running MPyC's runtime
among themselves, with TLS) and ``analyzer``. The shuffler itself (Shamir sharing,
permute-and-reshare, output modes, dead-server watchdog) is ``parties.mpc_shuffle.shuffler`` and
the modules it names; this module holds the roles written against the party runtime's node and
cluster.

Cluster parameters: ``mpc_ports`` (one MPyC port per server, in the order of the ``mpc-server``
parties: a list, "p1,p2,p3" or a base port; the MPyC host is the party's host), ``mpc_tls_dir``
(directory holding ``.config/`` from ``write_mpyc_tls_files``; without it MPyC's mesh runs
without TLS and the result says so), ``mpc_threshold`` (default (m-1)//2), ``mpc_mode``
(``open`` or ``histogram``), ``security`` (``malicious-abort``, the default: MAC-checked
shuffle secure with abort against a malicious minority; or ``semi-honest``, faster, no
checks), ``mpc_multiset`` (malicious-abort: add the multiset check behind the MAC check). The
launcher sets the first two.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mpc import mac_check
from mpc.shamir import PRIME
from parties.mpc_shuffle.backend import SERVER_ROLE
from parties.mpc_shuffle.mpyc_runtime import MPCServerError
from parties.mpc_shuffle.shuffler import analyzer_collect, client_submit, serve_rounds
from parties.mpc_shuffle.wire import MPCShufflerConfig, domain_refusal
from parties.runtime import codec
from parties.runtime.busy import beat_until_state
from parties.runtime.link import PeerError
from protocols.base import BatchSpec

PUBLISHED_INPUT = "shuffled"  # transcript type of the analyzer's published input multiset
MSG_STATE = "state"  # the analyzer's public state between rounds (to clients and servers)


MPYC_DIR = "mpyc"  # in a server's party directory: its MPyC TLS key and the trust bundle


class MpcPlan:
    """Run plan: clients -> m MPC servers (MPyC mesh among them) -> analyzer."""

    def prepare_party_dirs(self, cluster: Any, dirs: dict[str, Path]) -> None:
        """Per-party MPyC TLS for the servers' mesh (``mpc_tls``): each server's party
        directory gets its own key (``mpyc/.config/party_i.key``, mode 0600) and the bundle of
        every server's certificate; no server ever holds another's key."""
        if not cluster.params.get("mpc_tls"):
            return
        from parties.mpc_shuffle.mpyc_runtime import write_mpyc_party_tls, write_mpyc_trust_bundle

        servers = [p.name for p in cluster.by_role(SERVER_ROLE)]
        certs = [write_mpyc_party_tls(str(dirs[s] / MPYC_DIR), i) for i, s in enumerate(servers)]
        for s in servers:
            write_mpyc_trust_bundle(str(dirs[s] / MPYC_DIR), certs)

    def check_workload(self, params: dict[str, Any], workload: Any) -> None:
        """Refuse at launch the batches the parties would refuse (``wire.domain_refusal``)."""
        cfg = MPCShufflerConfig(("s1", "s2", "s3"), "a", ())  # the defaults of a run
        mode = str(params.get("mpc_mode", cfg.mode))
        security = str(params.get("security", cfg.security))
        for spec in workload.protocol.batch_specs():
            why = domain_refusal(spec, mode, security, cfg.max_domain)
            if why is not None:
                raise ValueError(why)

    def layout(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        m, clients = int(options.get("servers", 3)), int(options.get("clients", 2))
        if m < 3:
            raise ValueError(f"--servers must be >= 3 for the MPC shuffler, got {m}")
        return (
            [("analyzer", "analyzer")]
            + [(f"mpc-{i + 1}", SERVER_ROLE) for i in range(m)]
            + [(f"client-{i + 1}", "client") for i in range(clients)]
        )

    def peers(self, cluster: Any, name: str) -> set[str]:
        role = cluster.party(name).role
        servers = {p.name for p in cluster.by_role(SERVER_ROLE)}
        if role == "client":
            return servers | {_analyzer(cluster)}  # state between rounds comes from it
        if role == SERVER_ROLE:
            return {p.name for p in cluster.by_role("client")} | {_analyzer(cluster)}
        if role == "analyzer":
            return servers | {p.name for p in cluster.by_role("client")}
        raise PeerError(f"role {role!r} has no part in an MPC-shuffler run")

    async def start_client(self, node: Any, cluster: Any, workload: Any) -> Any:
        """A client party's run state: (configuration, protocol, blocks sent per round)."""
        return config_from_cluster(cluster), workload.protocol, {}

    async def round_state(self, node: Any, cluster: Any, run: Any, rnd: int) -> dict[str, Any]:
        return await recv_state(node, run[0], rnd)

    async def submit(self, node: Any, run: Any, rnd: int, block: Any) -> None:
        """Shamir-share the block and send share i to server i (``shuffler.client_submit``)."""
        cfg, proto, sent = run
        specs = proto.batch_specs_round(rnd, block.public)
        sent[rnd] = index = sent.get(rnd, -1) + 1  # the block's number, which the client signs
        await client_submit(
            node,
            cfg.for_round(rnd),
            specs,
            block.batches,
            last=block.last,
            users=block.total_users,
            block=index,
        )

    async def run(self, node: Any, cluster: Any) -> None:
        role = cluster.party(node.name).role
        fn = {
            "client": run_client_role,
            SERVER_ROLE: run_server_role,
            "analyzer": run_analyzer_role,
        }[role]
        await fn(node, cluster)


def _analyzer(cluster: Any) -> str:
    ps = cluster.by_role("analyzer")
    if len(ps) != 1:
        raise ValueError(f"the run needs exactly one analyzer, found {len(ps)}")
    return ps[0].name


def config_from_cluster(cluster: Any) -> MPCShufflerConfig:
    """The shuffler configuration of a cluster (servers in cluster-file order)."""
    servers = tuple(p.name for p in cluster.by_role(SERVER_ROLE))
    params = dict(cluster.params)
    m = len(servers)
    return MPCShufflerConfig(
        servers=servers,
        analyzer=_analyzer(cluster),
        clients=tuple(p.name for p in cluster.by_role("client")),
        threshold=int(params.get("mpc_threshold", (m - 1) // 2)),
        mode=str(params.get("mpc_mode", "open")),
        security=str(params.get("security", "malicious-abort")),
        multiset=mac_check.flag(params.get("mpc_multiset", False)),
        timeout=float(getattr(cluster, "phase_timeout", 120.0)),
        run_label=f"sdp-mpc|{getattr(cluster, 'session', '')}".encode(),
    )


def mpc_addresses(cluster: Any) -> list[tuple[str, int]]:
    """(host, MPyC port) of every server from ``mpc_ports``: a list of ports, a string
    "p1,p2,..." or one int base port (server i uses base + i). ValueError if missing or wrong."""
    servers = cluster.by_role(SERVER_ROLE)
    ports = cluster.params.get("mpc_ports")
    if isinstance(ports, int) and not isinstance(ports, bool):
        ports = [ports + i for i in range(len(servers))]
    elif isinstance(ports, str):
        try:
            ports = [int(v) for v in ports.split(",") if v.strip()]
        except ValueError:
            ports = None
    if not isinstance(ports, list) or len(ports) != len(servers):
        raise ValueError(
            f"cluster parameter mpc_ports must give one MPyC port per MPC server "
            f"({len(servers)}), got {cluster.params.get('mpc_ports')!r}"
        )
    return [(p.host, int(port)) for p, port in zip(servers, ports, strict=True)]


async def recv_state(node: Any, cfg: MPCShufflerConfig, rnd: int) -> dict[str, Any]:
    """The analyzer's public state before round ``rnd`` (> 0)."""
    node.phase("state", rnd)
    obj = codec.loads(await node.recv(cfg.analyzer, MSG_STATE))
    if not isinstance(obj, dict):
        raise PeerError(f"malformed round-{rnd} state from the analyzer {cfg.analyzer}")
    return obj


async def run_client_role(node: Any, cluster: Any) -> None:
    """The client round loop (``parties.clients.loop``) with this backend's submit."""
    from parties.clients.loop import run_client
    from parties.mpc_shuffle.backend import BACKEND

    await run_client(BACKEND, node, cluster)


async def run_server_role(node: Any, cluster: Any) -> None:
    """One MPC server: MPyC mesh with the other servers, one shuffle per protocol round."""
    from parties.clients.roles import load_workload

    cfg = config_from_cluster(cluster)
    proto = load_workload(cluster).protocol
    tls = Path(node.keydir) / MPYC_DIR if cluster.params.get("mpc_tls") else None

    async def round_specs(rnd: int) -> Sequence[BatchSpec]:
        public = await recv_state(node, cfg, rnd) if rnd else {}
        return proto.batch_specs_round(rnd, public)

    try:
        await serve_rounds(
            node,
            cfg,
            round_specs,
            proto.n_rounds,
            cfg.servers.index(node.name),
            mpc_addresses(cluster),
            ssl_dir=None if tls is None else str(tls),
        )
    except MPCServerError as exc:  # an expected end (a lost server, a failed abort check):
        raise PeerError(str(exc)) from None  # one line, no traceback, nothing published


def histogram_to_multiset(counts: np.ndarray) -> np.ndarray:
    """Width-1 counts (1, bound) -> the sorted multiset of reports they describe."""
    if counts.shape[0] != 1:
        raise ValueError("histogram mode feeds the protocol's analyzer only for width-1 batches")
    c = counts[0]
    if (c < 0).any() or (c >= PRIME // 2).any():
        raise ValueError("histogram counts out of range")
    return np.repeat(np.arange(c.size, dtype=np.int64), c).reshape(-1, 1)


def security_statement(security: str, multiset: bool = False) -> str:
    """What the MPC shuffler guarantees in ``security`` mode (result.json, privacy statement)."""
    if security == "semi-honest":
        return (
            "MPC shuffler, semi-honest mode: honest majority (t < m/2) of servers that follow "
            "the protocol; a deviating server can change or tag the output undetected"
        )
    return (
        "MPC shuffler, malicious-abort mode: secure with abort against a malicious minority "
        "(t < m/2): client sharings are checked for degree <= t, the shuffle is checked by "
        "information-theoretic MACs (3 keys: an offset, or a duplicated, dropped or replaced "
        "row, passes with probability <= 2^-89.99)"
        + (" and a multiset check" if multiset else "")
        + " before anything is opened (histogram mode: the counting's products too); a "
        "deviating server can make the run abort, not change or read the shuffled output"
    )


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


async def run_analyzer_role(node: Any, cluster: Any) -> None:
    """Per round: reconstruct, run the protocol's analyzer, publish its input; broadcast the
    public state (clients and servers) or, after the last round, publish the estimate and
    write ``result.json``. Nothing is published if a server failed (``analyzer_collect``
    raises first)."""
    from parties.clients.roles import dump_batches, gate_round, load_workload, publish_result

    cfg = config_from_cluster(cluster)
    workload = load_workload(cluster)
    proto = workload.protocol
    public: dict[str, Any] = {}
    rounds = []
    released: list[Any] = []
    for rnd in range(proto.n_rounds):
        with beat_until_state(node, (*cfg.clients, *cfg.servers), rnd, proto.n_rounds):
            rcfg = cfg.for_round(rnd)
            out = await analyzer_collect(node, rcfg, proto.batch_specs_round(rnd, public))
            shuffled = out.batches
            if cfg.mode == "histogram":
                shuffled = {k: histogram_to_multiset(v) for k, v in out.batches.items()}
            released += gate_round(proto, rnd, public, shuffled, out.users, released)
            # the analyzer's input, published so that a verifier can re-run the analyzer (open:
            # the shuffled multiset; histogram: the multiset equivalent to the opened counts)
            node.phase("publish", rnd)
            node.publish(
                PUBLISHED_INPUT,
                dump_batches(shuffled, invalid=out.invalid, mode=cfg.mode, round=rnd),
            )
            node.phase("analyze", rnd)
            result = _jsonable(proto.analyze_round(rnd, shuffled, public))
            rounds.append(
                {
                    "round": rnd,
                    "messages": {k: int(v.shape[0]) for k, v in shuffled.items()},
                    "invalid_messages": out.invalid,
                    "rejected_clients": out.rejected_clients,
                    "server_stats": out.server_stats,
                }
            )
            if rnd < proto.n_rounds - 1:
                node.phase("state", rnd + 1)
                payload = codec.dumps(result)
                for peer in (*cfg.clients, *cfg.servers):
                    try:
                        await node.send(peer, MSG_STATE, payload, public=True)
                    except PeerError:
                        if peer in cfg.servers:
                            raise
                        # a client party that dropped out gets no state; its later rounds are
                        # left out by the servers

                public = codec.loads(payload)
    publish_result(
        node,
        cluster,
        workload,
        result,
        rounds[-1]["messages"],
        rounds[-1]["invalid_messages"],
        {
            "mpc": {
                "mode": cfg.mode,
                "servers": list(cfg.servers),
                "threshold": cfg.threshold,
                "mpyc_tls": bool(cluster.params.get("mpc_tls")),
                "rounds": rounds,
                "security": cfg.security,
                "trust": security_statement(cfg.security, cfg.multiset),
            }
        },
        released,
        {"shuffler_security": security_statement(cfg.security, cfg.multiset)},
    )
