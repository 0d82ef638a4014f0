"""The one builder of the self-signed end-entity TLS certificates the parties pin.

Both the runtime's party keys (``parties.runtime.keys``) and MPyC's per-party TLS files
(``parties.mpc_shuffle.mpyc_runtime``) are end-entity certificates: ``CA:FALSE``, key usage
digital signature only, extended key usage TLS server and client, self-signed. They differ only
in the key type, the subject alternative names and the validity window, which are parameters.
"""

from __future__ import annotations

import datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SIGNATURE_ONLY = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=False,
    crl_sign=False,
    encipher_only=False,
    decipher_only=False,
)


def self_signed_end_entity(
    key: Any,
    common_name: str,
    alt_names: list[x509.GeneralName],
    *,
    valid_from: datetime.timedelta,
    valid_for: datetime.timedelta,
    digest: hashes.HashAlgorithm | None,
) -> x509.Certificate:
    """A certificate for ``key`` valid from now - ``valid_from`` to now + ``valid_for``.

    ``digest`` is the signature hash (None for Ed25519, which hashes internally).
    """
    if valid_from < datetime.timedelta(0) or valid_for <= datetime.timedelta(0):
        raise ValueError(
            f"certificate window must start now or earlier and end later: {valid_from}, {valid_for}"
        )
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - valid_from)
        .not_valid_after(now + valid_for)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(SIGNATURE_ONLY, critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .sign(key, digest)
    )
