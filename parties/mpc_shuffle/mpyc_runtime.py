"""MPyC's runtime for an MPC shuffler server process: start, failure watchdog, TLS files.

``make_runtime`` builds an MPyC ``Runtime`` for one party inside the running event loop,
``start_runtime`` connects the mesh under a timeout, ``guarded`` runs one MPC step under a
timeout and a dead-peer watchdog, ``mpyc_bytes_sent`` counts the mesh traffic, and
``write_mpyc_tls_files`` makes MPyC's ``--ssl`` certificates for all parties in one directory
(one host, tests); for separate hosts each party makes its own key and self-signed certificate
with ``write_mpyc_party_tls`` and installs the bundle of all parties' certificates with
``write_mpyc_trust_bundle`` (no private key ever leaves its party).

Failure handling: every MPyC step runs under a timeout and a watchdog that inspects MPyC's peer
connections. MPyC itself reports a dead peer only as a closed transport (``connection_lost``:
the peer's protocol is unset, or on a reset MPyC re-raises into the event loop), keeps waiting
for that peer's messages, and stops the whole event loop when an MPC task then fails
(``asyncoro._reconcile``). ``make_runtime`` therefore hooks (process-wide, server processes
only) ``MessageExchanger.connection_lost`` to record when each peer was lost, and
``asyncoro._reconcile`` plus the loop's exception handler to swallow the follow-up task errors
once a peer is gone; the watchdog then raises one ``MPCServerError`` naming the first server
lost ("lost connection to server mpc-2 (MPyC party 2)").

TLS: MPyC 0.11 supports TLS between its parties with ``--ssl`` (here ``ssl_dir``): mutual
authentication against ``.config/mpyc_ca.crt`` with per-party ``party_i.crt/.key`` and the
server name ``MPyC party i``, loaded relative to the working directory
(``write_mpyc_tls_files`` makes them; ``start_runtime`` connects from inside that directory).
MPyC unpickles its peers' payloads, so only TLS-authenticated servers should be peers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from parties.mpc_shuffle.wire import MPCShufflerConfig

T = TypeVar("T")


class MPCServerError(RuntimeError):
    """An MPC server failed, disconnected or timed out; the message names it."""


def import_mpyc_runtime() -> Any:
    """Import ``mpyc.runtime`` without letting it parse or rewrite this process's argv."""
    saved = sys.argv
    sys.argv = [saved[0] if saved else "sdp", "--no-log"]
    try:
        import mpyc.runtime as mr
    finally:
        sys.argv = saved
    return mr


def make_runtime(
    pid: int, addresses: Sequence[tuple[str, int]], threshold: int, *, ssl_dir: str | None = None
) -> Any:
    """An MPyC ``Runtime`` for party ``pid`` (call inside the running event loop).

    ``addresses[i]`` is (host, port) of MPyC party i. With ``ssl_dir`` the connections use TLS
    with MPyC's ``--ssl`` files: MPyC loads ``.config/party_{pid}.crt|.key`` and
    ``.config/mpyc_ca.crt`` relative to the working directory (also on every connection
    retry), so ``start_runtime`` runs ``start()`` inside ``ssl_dir`` and then restores the
    working directory (see ``write_mpyc_tls_files``).
    """
    mr = import_mpyc_runtime()
    import mpyc

    m = len(addresses)
    if not (0 <= pid < m) or not (0 < threshold and 2 * threshold < m):
        raise ValueError(f"make_runtime: bad pid {pid} / threshold {threshold} for {m} parties")
    opts = mpyc._get_arg_parser().parse_args([])
    opts.threshold, opts.index, opts.no_log = threshold, pid, True
    opts.no_async, opts.no_prss, opts.ssl = False, False, ssl_dir is not None
    if ssl_dir is not None:
        for f in (f"party_{pid}.crt", f"party_{pid}.key", "mpyc_ca.crt"):
            if not os.path.exists(os.path.join(ssl_dir, ".config", f)):
                raise ValueError(f"make_runtime: missing TLS file {ssl_dir}/.config/{f}")
        opts.sdp_ssl_dir = ssl_dir  # MPyC reads the files in start(): see ``start_runtime``
    parties = [mr.Party(i, h, int(p)) for i, (h, p) in enumerate(addresses)]
    rt = mr.Runtime(pid, parties, opts)
    for mod in (
        "sectypes",
        "asyncoro",
        "mpctools",
        "seclists",
        "secpols",
        "secgroups",
        "random",
        "statistics",
    ):
        sys.modules[f"mpyc.{mod}"].runtime = rt
    logging.disable(logging.INFO)  # MPyC logs start/stop lines at INFO on stdout
    _hook_connection_loss(rt)
    return rt


def _hook_connection_loss(rt: Any) -> None:
    """Record when each MPyC peer connection is lost, and keep MPyC's follow-up task errors
    (it keeps using a vanished peer) out of stderr once a peer is gone: the watchdog in
    ``guarded`` reports the failure as one MPCServerError instead."""
    from mpyc import asyncoro

    rt._sdp_lost = {}
    cls = asyncoro.MessageExchanger
    if not getattr(cls, "_sdp_hooked", False):
        orig = cls.connection_lost

        def connection_lost(self: Any, exc: Exception | None) -> None:
            lost = getattr(self.runtime, "_sdp_lost", None)
            if lost is not None and self.peer_pid is not None:
                lost.setdefault(self.peer_pid, time.monotonic())
            if exc is not None:  # MPyC re-raises into the event loop; record instead
                logging.debug("MPyC connection to party %s lost: %r", self.peer_pid, exc)
                exc = None
            orig(self, exc)

        cls.connection_lost = connection_lost
        cls._sdp_hooked = True

        # MPyC stops the whole event loop when an MPC task fails (asyncoro._reconcile), which
        # would take the party's transport down too; after a lost peer, drop the error instead
        # and let ``guarded`` raise MPCServerError.
        orig_reconcile = asyncoro._reconcile

        def _reconcile(decl: Any, task: Any) -> None:
            if task.cancelled() or (task.exception() is not None and _dead_peers(asyncoro.runtime)):
                asyncoro.runtime._pc_level -= 1
                return
            orig_reconcile(decl, task)

        asyncoro._reconcile = _reconcile

    outer = rt._loop.get_exception_handler()  # the party's (it drops a signal's interrupt)

    def handler(loop: Any, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if exc is not None and not isinstance(exc, Exception) and outer is not None:
            outer(loop, context)  # a signal's interrupt is the party's, not MPyC's
            return
        if _dead_peers(rt):
            logging.debug("MPyC task error after a lost peer: %s", exc)
            return
        asyncoro.exception_handler(loop, context)

    rt._loop.set_exception_handler(handler)


def write_mpyc_tls_files(directory: str, m: int) -> None:
    """A CA and per-party certificates in ``directory/.config`` in MPyC's ``--ssl`` layout
    (subject CN and SAN ``MPyC party i``, which MPyC uses as the TLS server name)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    cfg = os.path.join(directory, ".config")
    os.makedirs(cfg, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)

    def cert(subject: str, key: Any, issuer: str, issuer_key: Any, ca: bool) -> x509.Certificate:
        b = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            b = b.add_extension(
                x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False
            )
        return b.sign(issuer_key, hashes.SHA256())

    def save(path: str, data: bytes) -> None:
        with open(os.path.join(cfg, path), "wb") as f:
            f.write(data)

    pem = serialization.Encoding.PEM
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = cert("MPyC Certification Authority", ca_key, "MPyC Certification Authority", ca_key, True)
    save("mpyc_ca.crt", ca.public_bytes(pem))
    for i in range(m):
        k = ec.generate_private_key(ec.SECP256R1())
        c = cert(f"MPyC party {i}", k, "MPyC Certification Authority", ca_key, False)
        save(f"party_{i}.crt", c.public_bytes(pem))
        save(
            f"party_{i}.key",
            k.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
        )


def write_mpyc_party_tls(directory: str, pid: int, *, days: int = 30) -> bytes:
    """ONE party's MPyC TLS key and certificate, made where that party runs (separate hosts).

    Writes ``directory/.config/party_{pid}.key`` (mode 0600) and ``party_{pid}.crt``: a
    self-signed P-256 certificate, not a CA (basicConstraints CA:FALSE, key usage digital
    signature, extended key usage TLS server and client), subject CN and SAN ``MPyC party
    {pid}`` (MPyC's TLS server name). Returns the certificate (PEM) to hand to the other
    parties; no private key leaves ``directory``. Each party then needs the trust bundle of
    every party's certificate (``write_mpyc_trust_bundle``), which MPyC loads as its CA file.
    """
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from parties.runtime.certs import self_signed_end_entity

    if pid < 0:
        raise ValueError(f"write_mpyc_party_tls: party index must be >= 0, got {pid}")
    cfg = os.path.join(directory, ".config")
    os.makedirs(cfg, mode=0o700, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = self_signed_end_entity(
        key,
        f"MPyC party {pid}",
        [x509.DNSName(f"MPyC party {pid}")],
        valid_from=datetime.timedelta(minutes=5),
        valid_for=datetime.timedelta(days=days),
        digest=hashes.SHA256(),
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    key_path = os.path.join(cfg, f"party_{pid}.key")
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    os.chmod(key_path, 0o600)
    with open(os.path.join(cfg, f"party_{pid}.crt"), "wb") as f:
        f.write(pem)
    return pem


def write_mpyc_trust_bundle(directory: str, certificates: Sequence[bytes]) -> None:
    """Write ``directory/.config/mpyc_ca.crt``: the PEM certificates of all m parties (index
    order), MPyC's CA file, so that each party accepts exactly the other parties' own
    self-signed certificates (``write_mpyc_party_tls``). ValueError on a malformed certificate
    or a certificate whose name is not ``MPyC party i`` for its index i."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    blobs = []
    for i, pem in enumerate(certificates):
        try:
            cert = x509.load_pem_x509_certificate(pem)
        except ValueError:
            raise ValueError(
                f"MPyC trust bundle: certificate {i} is not a PEM certificate"
            ) from None
        cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        if not cn or cn[0].value != f"MPyC party {i}":
            raise ValueError(f"MPyC trust bundle: certificate {i} is not for 'MPyC party {i}'")
        blobs.append(pem if pem.endswith(b"\n") else pem + b"\n")
    cfg = os.path.join(directory, ".config")
    os.makedirs(cfg, mode=0o700, exist_ok=True)
    with open(os.path.join(cfg, "mpyc_ca.crt"), "wb") as f:
        f.write(b"".join(blobs))


async def start_runtime(rt: Any, timeout: float, names: Sequence[str] | None = None) -> None:
    """``rt.start()`` under a timeout, in ``ssl_dir`` while MPyC loads its TLS files;
    ``names``: the party name of each MPyC pid (for per-link WAN emulation)."""
    ssl_dir = getattr(rt.options, "sdp_ssl_dir", None)
    cwd = os.getcwd()
    try:
        if ssl_dir is not None:
            os.chdir(ssl_dir)
        await asyncio.wait_for(rt.start(), timeout)
    finally:
        os.chdir(cwd)
    from parties.runtime.netem import shape_mpyc

    shape_mpyc(rt, names)  # WAN emulation (sdp run --netem) of the mesh's peer connections, if any
    from parties.mpc_shuffle.mpyc_rounds import count_mpyc_flights

    count_mpyc_flights(rt)  # the mesh's rounds, for the cost ledger
    if names is not None:
        _withhold_if_asked(rt, names)


def _withhold_if_asked(rt: Any, names: Sequence[str]) -> None:
    """Fault injection (tests, ``SDP_FAULT_WITHHOLD=PARTY:mpyc[:PEER]``): this server stays
    connected but sends its MPC messages (to PEER) nowhere, as a withholding server would."""
    from parties.runtime import fault_hooks

    me = names[rt.pid]
    for p in rt.parties:
        proto = getattr(p, "protocol", None)
        if (
            p.pid != rt.pid
            and proto is not None
            and fault_hooks.withholds(me, names[p.pid], "mpyc")
        ):
            proto.__class__ = _silent(type(proto))


def _silent(cls: type) -> type:
    """``cls`` (MPyC's slotted ``MessageExchanger``) whose ``send`` sends nothing."""

    class Silent(cls):  # type: ignore[misc, valid-type]
        __slots__ = ()

        def send(self, pc: Any, payload: Any) -> None:
            return None

    return Silent


def mpyc_bytes_sent(rt: Any) -> int:
    """Bytes this party sent over MPyC's peer connections so far (0 for ``LocalRuntime``)."""
    total = 0
    for p in rt.parties:
        proto = getattr(p, "protocol", None)
        if getattr(p, "pid", rt.pid) != rt.pid and proto is not None:
            total += int(getattr(proto, "nbytes_sent", 0))
    return total


def _dead_peers(rt: Any) -> list[int]:
    """MPyC peers whose connection is gone, first lost first (empty for runtimes without
    transports)."""
    dead = []
    for p in getattr(rt, "parties", ()):
        if not hasattr(p, "pid") or p.pid == rt.pid:
            continue
        proto = getattr(p, "protocol", None)
        tr = getattr(proto, "transport", None)
        if proto is None or tr is None or tr.is_closing():
            dead.append(p.pid)
    lost = getattr(rt, "_sdp_lost", {})
    return sorted(dead, key=lambda d: lost.get(d, float("inf")))


def _awaited_peers(rt: Any) -> list[int]:
    """MPyC peers this party waits for: a receive from them is pending (an unset future in
    their connection's buffers)."""
    waited = []
    for p in getattr(rt, "parties", ()):
        proto = getattr(p, "protocol", None)
        buffers = getattr(proto, "buffers", None) or {}
        if getattr(p, "pid", rt.pid) != rt.pid and any(
            isinstance(b, asyncio.Future) and not b.done() for b in buffers.values()
        ):
            waited.append(p.pid)
    return waited


async def guarded(rt: Any, cfg: MPCShufflerConfig, step: str, aw: Awaitable[T]) -> T:
    """Await an MPC step under ``cfg.timeout`` and a dead-peer watchdog (MPCServerError)."""
    task = asyncio.ensure_future(aw)
    deadline = time.monotonic() + cfg.timeout
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=0.2)
            if done:
                return task.result()
            dead = _dead_peers(rt)
            if dead:
                names = [f"{cfg.servers[d]} (MPyC party {d})" for d in dead]
                later = f" (then also {', '.join(names[1:])})" if len(names) > 1 else ""
                raise MPCServerError(
                    f"MPC step {step!r}: lost connection to server {names[0]}{later}"
                )
            if time.monotonic() > deadline:
                # the culprit: the servers whose messages this one still waits for
                waited = [f"{cfg.servers[d]} (MPyC party {d})" for d in _awaited_peers(rt)]
                raise MPCServerError(
                    f"MPC step {step!r}: timed out after {cfg.timeout:.0f} s waiting for "
                    + (
                        f"server {', '.join(waited)} (withheld its messages)"
                        if waited
                        else "the other servers"
                    )
                )
    finally:
        if not task.done():
            task.cancel()
