"""Per-party Ed25519 keys and self-signed X.509 certificates (``sdp keys``).

``KEYDIR/NAME.key`` is the party's private Ed25519 key (PKCS#8 PEM, mode 0600); it signs the
party's TLS handshakes, frame seals and transcript checkpoints. ``KEYDIR/NAME.crt`` is its
certificate (public). For separate-host runs copy every ``.crt`` to every host and each ``.key``
only to its own host.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import ipaddress
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import NameOID

from parties.runtime.cluster import Cluster, ClusterError, load_cluster


class KeyError_(ValueError):
    """A key or certificate is missing, unreadable or does not match the cluster."""


def make_party_key(name: str, host: str, keydir: Path) -> None:
    """Create ``NAME.key`` and a self-signed ``NAME.crt`` for one party."""
    key = ed25519.Ed25519PrivateKey.generate()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    alt: list[x509.GeneralName] = [x509.DNSName(name)]
    try:
        alt.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        alt.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .sign(key, None)
    )
    keydir.mkdir(parents=True, exist_ok=True)
    key_path = keydir / f"{name}.key"
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    (keydir / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def make_cluster_keys(cluster: Cluster, keydir: Path) -> None:
    """Keys and certificates for every party of the cluster."""
    for p in cluster.parties:
        make_party_key(p.name, p.host, keydir)


@dataclass
class PartyIdentity:
    """A party's certificate (DER), its SHA-256 fingerprint and Ed25519 public key."""

    name: str
    cert_der: bytes
    fingerprint: str
    public_key: bytes  # raw 32 bytes


def load_certificate(keydir: Path, name: str) -> PartyIdentity:
    """Load and check ``NAME.crt`` (Ed25519, CN = NAME)."""
    path = keydir / f"{name}.crt"
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
    der = cert.public_bytes(serialization.Encoding.DER)
    raw = pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return PartyIdentity(name, der, hashlib.sha256(der).hexdigest(), raw)


def load_private_key(keydir: Path, name: str) -> bytes:
    """The raw 32-byte Ed25519 seed of party ``name``; checks it matches the certificate."""
    path = keydir / f"{name}.key"
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except FileNotFoundError:
        raise KeyError_(f"private key of party {name!r} missing: {path}") from None
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


def main(argv: list[str]) -> int:
    """``sdp keys CLUSTER.toml --out KEYDIR``."""
    ap = argparse.ArgumentParser(prog="sdp keys", description=__doc__.splitlines()[0])
    ap.add_argument("cluster", help="cluster TOML file")
    ap.add_argument("--out", required=True, help="directory for NAME.key / NAME.crt")
    args = ap.parse_args(argv)
    try:
        cluster = load_cluster(args.cluster)
        make_cluster_keys(cluster, Path(args.out))
    except (ClusterError, OSError) as exc:
        print(f"sdp keys: {exc}", file=sys.stderr)
        return 1
    print(f"wrote keys and certificates of {len(cluster.parties)} parties to {args.out}")
    return 0
