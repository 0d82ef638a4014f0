"""Per-party Ed25519 keys, X.509 certificates, party directories and trust files.

A party's private key signs its TLS handshakes, frame seals and transcript checkpoints; it lives
only in that party's *party directory* (never in a run directory)::

    PARTYDIR/                 mode 0700
      cluster.toml            the public cluster file (same on every host)
      NAME.key                this party's private key (PKCS#8 PEM, mode 0600), nowhere else
      certs/P.crt             every party's certificate (public; not a CA certificate)
      trust.json              session, cluster digest and every certificate's SHA-256
                              fingerprint: what an auditor needs to verify a run independently

``sdp cluster init`` writes one such directory per party (``parties.runtime.cluster_init``);
``sdp run`` writes them to a private temporary directory and deletes the private keys after the
run. A run directory holds certificates only (``RUN_DIR/certs``); ``sdp verify --trust`` takes
the expected fingerprints from outside it.

Two kinds of trust anchor (``trust.json``'s ``anchor``; docs/security.md):

* ``one-process``: every key was made by one process (``sdp run``, or ``sdp cluster init``
  alone), so whoever ran it held every private key and could sign any transcript;
* ``per-host``: each host made its own key (``sdp keygen``, the key never leaves the host) and
  ``sdp cluster init --certs DIR`` pinned the certificates the hosts sent; no one holds more
  than their own party's key.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import NameOID

from parties.runtime.certs import self_signed_end_entity
from parties.runtime.cluster import Cluster, cluster_digest, dump_cluster

CERTS = "certs"
TRUST = "trust.json"
ONE_PROCESS = "one-process"
PER_HOST = "per-host"


class KeyError_(ValueError):
    """A key or certificate is missing, unreadable or does not match the cluster."""


def _write_private(path: Path, data: bytes) -> None:
    """Create ``path`` with mode 0600 (never readable by others, even for an instant)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)


def make_party_key(name: str, host: str, keydir: Path) -> bytes:
    """Create ``KEYDIR/NAME.key`` (0600); returns the PEM of its self-signed certificate.

    The certificate is an end-entity certificate (``CA:FALSE``, key usage digital signature,
    TLS client and server): it is pinned by fingerprint, never used to sign another one.
    """
    key = ed25519.Ed25519PrivateKey.generate()
    alt: list[x509.GeneralName] = [x509.DNSName(name)]
    try:
        alt.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        alt.append(x509.DNSName(host))
    cert = self_signed_end_entity(
        key,
        name,
        alt,
        valid_from=datetime.timedelta(days=1),
        valid_for=datetime.timedelta(days=3650),
        digest=None,
    )
    keydir.mkdir(parents=True, exist_ok=True)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write_private(keydir / f"{name}.key", pem)
    return cert.public_bytes(serialization.Encoding.PEM)


def fingerprint(cert_pem: bytes) -> str:
    """SHA-256 (hex) of a certificate's DER encoding."""
    der = x509.load_pem_x509_certificate(cert_pem).public_bytes(serialization.Encoding.DER)
    return hashlib.sha256(der).hexdigest()


def trust_document(
    cluster: Cluster, certs: dict[str, bytes], anchor: str = ONE_PROCESS
) -> dict[str, Any]:
    """The public trust anchor of a run: session, cluster digest, certificate fingerprints,
    and how the keys were made (``anchor``: ``one-process`` or ``per-host``)."""
    return {
        "session": cluster.session,
        "cluster_sha256": cluster_digest(cluster),
        "anchor": anchor,
        "fingerprints": {name: fingerprint(pem) for name, pem in sorted(certs.items())},
    }


def keygen(name: str, host: str, keydir: Path) -> bytes:
    """``sdp keygen``: this host's own key in ``KEYDIR/NAME.key`` (0600) and its certificate in
    ``KEYDIR/certs/NAME.crt``; returns the certificate (PEM), the only thing to hand over."""
    if (keydir / f"{name}.key").exists():
        raise KeyError_(f"{keydir / f'{name}.key'} exists; a party's key is made once")
    keydir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(keydir, 0o700)
    pem = make_party_key(name, host, keydir)
    (keydir / CERTS).mkdir(exist_ok=True)
    cert_path(keydir, name).write_bytes(pem)
    return pem


def collected_certificates(cluster: Cluster, certs_dir: Path) -> dict[str, bytes]:
    """The certificates the hosts sent (``CERTS_DIR/NAME.crt``, one per party of ``cluster``),
    each checked (Ed25519, CN = NAME, not a CA) as a party would."""
    out: dict[str, bytes] = {}
    for p in cluster.parties:
        path = certs_dir / f"{p.name}.crt"
        if not path.exists():
            raise KeyError_(f"--certs {certs_dir}: no certificate {path.name} for party {p.name!r}")
        check_certificate(path, p.name)
        out[p.name] = path.read_bytes()
    return out


def make_party_dirs(
    cluster: Cluster, out: Path, certs: dict[str, bytes] | None = None
) -> dict[str, Path]:
    """One party directory per party under ``out`` (see the module docstring).

    Returns ``{name: directory}``. Each directory holds only its own party's private key; with
    ``certs`` (the certificates the hosts made with ``sdp keygen``) no key at all: the hosts
    merge the directory into their own, which holds their key (a ``per-host`` anchor).
    """
    out.mkdir(parents=True, exist_ok=True)
    dirs = {p.name: out / p.name for p in cluster.parties}
    made: dict[str, bytes] = {}
    for p in cluster.parties:
        d = dirs[p.name]
        d.mkdir(mode=0o700, exist_ok=True)
        os.chmod(d, 0o700)
        if certs is None:
            made[p.name] = make_party_key(p.name, p.host, d)
    anchor = ONE_PROCESS if certs is None else PER_HOST
    certs = made if certs is None else certs
    toml = dump_cluster(cluster)
    trust = json.dumps(trust_document(cluster, certs, anchor), indent=1)
    for d in dirs.values():
        (d / "cluster.toml").write_text(toml)
        (d / CERTS).mkdir(exist_ok=True)
        for name, pem in certs.items():
            (d / CERTS / f"{name}.crt").write_bytes(pem)
        (d / TRUST).write_text(trust)
    return dirs


@dataclass
class PartyIdentity:
    """A party's certificate (DER), its SHA-256 fingerprint and Ed25519 public key."""

    name: str
    cert_der: bytes
    fingerprint: str
    public_key: bytes  # raw 32 bytes


def cert_path(keydir: Path, name: str) -> Path:
    """Where a party directory keeps ``name``'s certificate."""
    return keydir / CERTS / f"{name}.crt"


def load_certificate(keydir: Path, name: str) -> PartyIdentity:
    """Load and check ``KEYDIR/certs/NAME.crt`` (Ed25519, CN = NAME, not a CA)."""
    return check_certificate(cert_path(keydir, name), name)


def check_certificate(path: Path, name: str) -> PartyIdentity:
    """Load and check the certificate at ``path`` (Ed25519, CN = NAME, not a CA)."""
    try:
        cert = x509.load_pem_x509_certificate(path.read_bytes())
    except FileNotFoundError:
        raise KeyError_(f"certificate of party {name!r} missing: {path}") from None
    except ValueError as exc:
        raise KeyError_(f"certificate {path} unreadable: {exc}") from None
    pub = cert.public_key()
    if not isinstance(pub, ed25519.Ed25519PublicKey):
        raise KeyError_(f"certificate {path} does not hold an Ed25519 key")
    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not cns or cns[0].value != name:
        raise KeyError_(f"certificate {path} is for {cns[0].value if cns else '?'!r}, not {name!r}")
    try:
        if cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca:
            raise KeyError_(f"certificate {path} is a CA certificate; party certificates are not")
    except x509.ExtensionNotFound:
        pass
    der = cert.public_bytes(serialization.Encoding.DER)
    raw = pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return PartyIdentity(name, der, hashlib.sha256(der).hexdigest(), raw)


def load_private_key(keydir: Path, name: str) -> bytes:
    """The raw 32-byte Ed25519 seed of party ``name``; checks mode and the certificate."""
    path = keydir / f"{name}.key"
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        raise KeyError_(f"private key of party {name!r} missing: {path}") from None
    if mode & 0o077:
        raise KeyError_(f"private key {path} is readable by others (mode {mode:o}); chmod 600 it")
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise KeyError_(f"private key {path} unreadable: {exc}") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise KeyError_(f"private key {path} is not an Ed25519 key")
    ident = load_certificate(keydir, name)
    pub = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    if pub != ident.public_key:
        raise KeyError_(f"private key {path} does not match certificate {name}.crt")
    return key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
