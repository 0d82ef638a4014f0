"""Cluster description: the parties of a run and the run's parameters, in TOML.

Example::

    [run]
    session = "6f1c..."          # 16 random bytes, hex; binds every frame and transcript
    protocol = "grr"
    shuffler = "trusted"
    phase_timeout = 60.0

    [run.params]
    users = 10000
    domain = 10
    epsilon = 1.0

    [[party]]
    name = "analyzer"
    role = "analyzer"
    host = "127.0.0.1"
    port = 40001
"""

from __future__ import annotations

import json
import re
import secrets
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from parties.runtime.backend import default_shuffler, shuffler_names
from parties.runtime.errors import ClusterError, did_you_mean

__all__ = ["ClusterError", "did_you_mean"]  # re-exported: where the runtime has always had them

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class PartySpec:
    """One party of a run. A client party of a run on its owners' data names its own records
    file (a path on its host; only that party reads it) and declares its number of users
    (public: the accountant's n is the sum of the declared counts)."""

    name: str
    role: str
    host: str
    port: int
    data: str = ""
    users: int | None = None


@dataclass
class Cluster:
    """All parties of a run plus the run's settings."""

    session: str
    protocol: str
    shuffler: str
    parties: list[PartySpec]
    params: dict[str, Any] = field(default_factory=dict)
    phase_timeout: float = 60.0
    max_frame: int = 16 << 20
    rejoin_window: float = 0.0  # seconds a restarted party may take to rejoin (0: never)
    # this host's own records file per party (from its party directory's local.toml): never in
    # the public cluster file nor in its digest
    local_data: dict[str, str] = field(default_factory=dict)

    def data_of(self, name: str) -> str:
        """The records file of party ``name`` on this host ("" when none)."""
        return self.local_data.get(name) or self.party(name).data

    netem: dict[str, Any] = field(default_factory=dict)  # [netem] table (parties.runtime.netem)
    # [pool] table: party name -> where its CPU-bound work runs ("local" or "dask://HOST:PORT",
    # parties.runtime.pools). Deployment, not protocol: outside the cluster digest, like the
    # hosts' own data files; a server's pool holds its secrets (docs/scale.md)
    pools: dict[str, str] = field(default_factory=dict)

    def party(self, name: str) -> PartySpec:
        """The party called ``name``; ClusterError naming the known parties otherwise."""
        for p in self.parties:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.parties)
        raise ClusterError(f"unknown party {name!r}; the cluster file lists: {known}")

    def by_role(self, role: str) -> list[PartySpec]:
        """Parties with the given role, in file order."""
        return [p for p in self.parties if p.role == role]

    @property
    def session_bytes(self) -> bytes:
        return bytes.fromhex(self.session)


def cluster_digest(cluster: Cluster) -> str:
    """SHA-256 (hex) of the cluster's canonical JSON: what every party records in its signed
    transcript, so a run directory's ``cluster.toml`` cannot be edited after the run unnoticed
    (formatting of the TOML file does not matter, its content does)."""
    import hashlib
    import json

    doc = {
        "session": cluster.session,
        "protocol": cluster.protocol,
        "shuffler": cluster.shuffler,
        "phase_timeout": float(cluster.phase_timeout),
        "max_frame": int(cluster.max_frame),
        **({"rejoin_window": float(cluster.rejoin_window)} if cluster.rejoin_window else {}),
        **({"netem": cluster.netem} if cluster.netem else {}),
        "params": {k: v for k, v in sorted(cluster.params.items()) if v is not None},
        "parties": [[p.name, p.role, p.host, p.port, p.data, p.users] for p in cluster.parties],
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


RUN_KEYS = (
    "session",
    "protocol",
    "shuffler",
    "phase_timeout",
    "max_frame",
    "rejoin_window",
    "params",
)


def _check_keys(table: dict[str, Any], known: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in known:
            raise ClusterError(
                f"{where}: unknown key {key!r}{did_you_mean(key, known)} "
                f"(known: {', '.join(known)})"
            )


def new_session_id() -> str:
    """A fresh random session id (16 bytes, hex)."""
    return secrets.token_hex(16)


def load_cluster(path: str | Path, session_optional: bool = False) -> Cluster:
    """Parse and validate a cluster TOML file (a missing session gets a fresh one if
    ``session_optional``: ``sdp cluster init`` of a hand-written file)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ClusterError(f"cluster file {path} not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ClusterError(f"cluster file {path}: invalid TOML: {exc}") from None
    _check_keys(data, ("run", "party", "netem", "pool"), f"cluster file {path}")
    run = data.get("run", {})
    if not isinstance(run, dict):
        raise ClusterError(f"cluster file {path}: [run] must be a table")
    _check_keys(run, RUN_KEYS, f"cluster file {path}, [run]")
    known = shuffler_names()
    shuffler = str(run.get("shuffler", default_shuffler()))
    if shuffler not in known:
        raise ClusterError(
            f"cluster file {path}: [run] shuffler {shuffler!r} is unknown"
            f"{did_you_mean(shuffler, known)} (known: {', '.join(known)})"
        )
    session = str(run.get("session", ""))
    if not session and session_optional:
        session = new_session_id()
    if not re.fullmatch(r"[0-9a-f]{32}", session):
        raise ClusterError(f"cluster file {path}: run.session must be 32 lowercase hex digits")
    raw_parties = data.get("party", [])
    if not isinstance(raw_parties, list) or not raw_parties:
        raise ClusterError(f"cluster file {path}: no [[party]] entries")
    parties: list[PartySpec] = []
    seen: set[str] = set()
    for i, p in enumerate(raw_parties):
        where = f"cluster file {path}, party #{i + 1}"
        if isinstance(p, dict):
            _check_keys(p, tuple(f.name for f in fields(PartySpec)), where)
        try:
            users = p.get("users")
            spec = PartySpec(
                str(p["name"]),
                str(p["role"]),
                str(p["host"]),
                int(p["port"]),
                str(p.get("data", "")),
                None if users is None else int(users),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ClusterError(f"{where}: needs name, role, host, port ({exc})") from None
        if spec.users is not None and spec.users < 0:
            raise ClusterError(f"{where}: users must be >= 0, got {spec.users}")
        if not NAME_RE.match(spec.name):
            raise ClusterError(f"{where}: invalid party name {spec.name!r}")
        if spec.name in seen:
            raise ClusterError(f"{where}: duplicate party name {spec.name!r}")
        if not 0 < spec.port < 65536:
            raise ClusterError(f"{where}: port {spec.port} out of range")
        seen.add(spec.name)
        parties.append(spec)
    return Cluster(
        session=session,
        protocol=str(run.get("protocol", "")),
        shuffler=shuffler,
        parties=parties,
        params=dict(run.get("params", {})),
        phase_timeout=float(run.get("phase_timeout", 60.0)),
        max_frame=int(run.get("max_frame", 16 << 20)),
        rejoin_window=rejoin_window_seconds(run.get("rejoin_window", 0.0), "[run] rejoin_window"),
        netem=_netem_table(data.get("netem"), f"cluster file {path}, [netem]"),
        pools=_pool_table(data.get("pool"), seen, f"cluster file {path}, [pool]"),
    )


def _pool_table(raw: Any, names: set[str], where: str) -> dict[str, str]:
    """The [pool] table (party name -> pool spec), checked (ClusterError naming the entry)."""
    from parties.runtime.pools import PoolSpecError, check_pool_spec

    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ClusterError(f"{where} must be a table of party name = pool")
    out = {}
    for name, spec in raw.items():
        if name not in names:
            raise ClusterError(f"{where}: {name!r} is no party of this cluster")
        try:
            out[name] = check_pool_spec(str(spec))
        except PoolSpecError as exc:
            raise ClusterError(f"{where}: {name}: {exc}") from None
    return out


def _netem_table(raw: Any, where: str) -> dict[str, Any]:
    """The [netem] table, checked (ClusterError naming the setting otherwise)."""
    from parties.runtime.netem import NetemError, netem_from_cluster

    try:
        netem_from_cluster(raw, where)
    except NetemError as exc:
        raise ClusterError(str(exc)) from None
    return dict(raw or {})


LOCAL_FILE = "local.toml"


def write_local_data(party_dir: Path, data: str) -> None:
    """A client party's own records file, in its own directory only (``local.toml``)."""
    (party_dir / LOCAL_FILE).write_text(f"data = {_toml_value(str(data))}\n")


def read_local_data(party_dir: Path, name: str) -> dict[str, str]:
    """{name: records file} from the party directory's ``local.toml`` ({} when absent)."""
    path = Path(party_dir) / LOCAL_FILE
    if not path.exists():
        return {}
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ClusterError(f"{path}: invalid TOML: {exc}") from None
    _check_keys(doc, ("data",), str(path))
    return {name: str(doc["data"])} if doc.get("data") else {}


def rejoin_window_seconds(value: Any, where: str) -> float:
    """A rejoin window in seconds, in [0, 86400]; ClusterError naming ``where`` otherwise."""
    try:
        w = float(value)
    except (TypeError, ValueError):
        raise ClusterError(f"{where} must be a number of seconds, got {value!r}") from None
    if not 0.0 <= w <= 86400.0:
        raise ClusterError(f"{where} must lie in [0, 86400] seconds, got {w}")
    return w


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        # a TOML basic string: JSON's escapes are TOML's (control characters as \uXXXX)
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise ClusterError(f"cannot write parameter value {v!r} to TOML")


def dump_cluster(cluster: Cluster) -> str:
    """Serialise a cluster back to TOML (the inverse of ``load_cluster``)."""
    lines = [
        "[run]",
        f"session = {_toml_value(cluster.session)}",
        f"protocol = {_toml_value(cluster.protocol)}",
        f"shuffler = {_toml_value(cluster.shuffler)}",
        f"phase_timeout = {_toml_value(float(cluster.phase_timeout))}",
        f"max_frame = {_toml_value(int(cluster.max_frame))}",
        *(
            [f"rejoin_window = {_toml_value(float(cluster.rejoin_window))}"]
            * bool(cluster.rejoin_window)
        ),
        "",
        "[run.params]",
    ]
    lines += [f"{k} = {_toml_value(v)}" for k, v in sorted(cluster.params.items()) if v is not None]
    if cluster.netem:
        from parties.runtime.netem import netem_to_toml

        lines += netem_to_toml(cluster.netem)
    for p in cluster.parties:
        lines += [
            "",
            "[[party]]",
            f"name = {_toml_value(p.name)}",
            f"role = {_toml_value(p.role)}",
            f"host = {_toml_value(p.host)}",
            f"port = {p.port}",
        ]
        if p.data:  # a hand-written file's path: sdp cluster init moves it to local.toml
            lines.append(f"data = {_toml_value(p.data)}")
        if p.users is not None:
            lines.append(f"users = {int(p.users)}")
    if cluster.pools:
        lines += ["", "[pool]"] + [f"{k} = {_toml_value(v)}" for k, v in sorted(cluster.pools.items())]
    return "\n".join(lines) + "\n"
