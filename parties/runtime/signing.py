"""Ed25519 signing (libsodium via PyNaCl) for seals and transcript checkpoints."""

from __future__ import annotations

import nacl.bindings as sodium
from nacl.exceptions import BadSignatureError


class Signer:
    """Holds a party's Ed25519 key; signs with libsodium."""

    def __init__(self, seed: bytes) -> None:
        if len(seed) != 32:
            raise ValueError("Ed25519 seed must be 32 bytes")
        self.public_key, self._sk = sodium.crypto_sign_seed_keypair(seed)

    def sign(self, message: bytes) -> bytes:
        """Detached 64-byte signature."""
        return sodium.crypto_sign(message, self._sk)[:64]


def verify_signature(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """True iff ``signature`` is a valid Ed25519 signature of ``message`` under ``public_key``."""
    try:
        sodium.crypto_sign_open(signature + message, public_key)
        return True
    except (BadSignatureError, ValueError, TypeError):
        return False
