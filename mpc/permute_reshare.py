"""O(n) secret-shared shuffle by permute-and-reshare (Laur-Willemson-Zhang style).

Model: m servers, Shamir threshold t < m/2, at most t corrupted. On its own the protocol is
secure against semi-honest servers only (a deviating member can add an offset to any row it
reshares); the malicious-abort mode of the MPC shuffler shuffles every value together with its
MAC tags and checks them afterwards (``mpc.mac_check``), which turns any such deviation into an
abort.

For every coalition A of t+1 servers, in a fixed order:
1. members of A agree on a secret seed (X25519 key exchange inside A; the leader A[0] draws the
   seed and sends it to each member encrypted under their pairwise DH key);
2. each member turns its Shamir share into an additive share over A (times its Lagrange
   coefficient for the points of A);
3. each member permutes its additive shares with pi_A, expanded from the seed by ChaCha20
   (random 64-bit sort keys; ties are redrawn, so pi_A is exactly uniform);
4. each member Shamir-reshares its permuted additive share to all m servers; every server adds
   the t+1 sharings it receives: a fresh Shamir sharing of the permuted vector.
Any t servers miss some coalition, so the composed permutation is uniform and hidden to them.
Cost: C(m, t+1) sequential rounds, (t+1)(m-1) n field elements sent per round.

This module holds the pure steps only (numbers and bytes in and out): the coalitions, the
permutation expanded from a seed, one member's round (``member_round``), the sum of the
sharings a server receives (``combine_reshares``), the key derivation and sealing of coalition
seeds (``exchange_keypair``, ``seal_coalition_seed``, ``open_coalition_seed``) and
``simulate_permute_reshare``, which runs all servers in one process (tests, reference). The
exchange over MPyC's runtime is ``parties.mpc_shuffle.reshare_exchange``.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from mpc import shamir
from mpc.shamir import PRIME

Coalition = tuple[int, ...]


def coalitions(m: int, t: int) -> list[Coalition]:
    """All sets of t+1 servers in lexicographic order (the shuffle's rounds)."""
    if not (m >= 3 and 0 < t and 2 * t < m):
        raise ValueError(f"permute-and-reshare needs m >= 3 and 0 < t < m/2, got m={m}, t={t}")
    return list(itertools.combinations(range(m), t + 1))


def permutation_from_seed(seed: bytes, n: int, label: bytes = b"") -> np.ndarray:
    """A uniform permutation of range(n) expanded from a 32-byte seed by ChaCha20.

    Sort on 64-bit keystream keys; if two keys tie (probability < n^2/2^65) the keys are
    redrawn with the next nonce, so the result is exactly uniform given the seed is.
    """
    if len(seed) != 32:
        raise ValueError(f"permutation_from_seed: seed must be 32 bytes, got {len(seed)}")
    key = hashlib.sha256(b"sdp-perm|" + seed + b"|" + label).digest()
    for counter in itertools.count():
        nonce = counter.to_bytes(16, "little")
        keys = np.frombuffer(shamir.chacha20_stream(key, nonce, 8 * n), dtype="<u8")
        order = np.argsort(keys, kind="stable")
        if n < 2 or not (np.diff(keys[order]) == 0).any():
            return order
    raise AssertionError("unreachable")


def to_additive(share_i: np.ndarray, pid: int, coalition: Coalition) -> np.ndarray:
    """Server ``pid``'s additive share over ``coalition`` of the secret behind its Shamir share."""
    lam = shamir.lagrange_coefficients([a + 1 for a in coalition])[coalition.index(pid)]
    return shamir.mul_mod(share_i, int(lam))


def member_round(
    share_i: np.ndarray, pid: int, coalition: Coalition, seed: bytes, m: int, t: int, label: bytes
) -> np.ndarray:
    """One member's work in a round: additive share, permute rows, reshare to all m servers.

    Returns the outgoing sharings, shape ``(m, *share_i.shape)`` (row r goes to server r).
    """
    return shamir.share(permuted_additive(share_i, pid, coalition, seed, label), m, t)


def permuted_additive(
    share_i: np.ndarray,
    pid: int,
    coalition: Coalition,
    seed: bytes,
    label: bytes,
    addend: np.ndarray | None = None,
) -> np.ndarray:
    """Member ``pid``'s additive share over ``coalition`` (plus ``addend``, an additive share
    over the coalition it holds besides its Shamir share), rows permuted by the coalition's
    permutation (uint32: the representation the resharing sends). ``np.take`` on whole rows:
    several times faster than fancy indexing for rows of value and tags."""
    perm = permutation_from_seed(seed, share_i.shape[0], label + bytes(coalition))
    out = to_additive(np.take(share_i, perm, axis=0), pid, coalition).astype("<u4")
    if addend is not None:
        shamir.add_mod32(out, np.take(addend, perm, axis=0).astype("<u4", copy=False), out=out)
    return out


def simulate_permute_reshare(
    shares: np.ndarray, t: int, seeds: dict[Coalition, bytes] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Run the whole shuffle for all servers in one process (tests, reference).

    ``shares`` has shape ``(m, n, ...)``. Returns (new shares, composed permutation ``perm``)
    with ``secret_out = secret_in[perm]``.
    """
    m, n = shares.shape[0], shares.shape[1]
    seeds = seeds or {}
    perm_total = np.arange(n)
    cur = shamir.check_field(shares, "simulate_permute_reshare shares")
    for A in coalitions(m, t):
        seed = seeds.get(A) or os.urandom(32)
        new = np.zeros_like(cur)
        for a in A:
            new = (new + member_round(cur[a], a, A, seed, m, t, b"")) % PRIME
        perm_total = perm_total[permutation_from_seed(seed, n, bytes(A))]
        cur = new
    return cur, perm_total


# --------------------------------------------------------------------------------------------
# Coalition seeds: ephemeral X25519 inside each coalition, the leader seals a fresh seed to
# every member under the HKDF of their DH secret (ChaCha20-Poly1305, the info string binds the
# run, the coalition and the member).


def exchange_keypair() -> tuple[bytes, bytes]:
    """A fresh ephemeral X25519 key pair as raw bytes (private, public)."""
    sk = X25519PrivateKey.generate()
    raw = serialization.Encoding.Raw
    return (
        sk.private_bytes(raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()),
        sk.public_key().public_bytes(raw, serialization.PublicFormat.Raw),
    )


def _seed_info(run_label: bytes, coalition: Coalition, member: int) -> bytes:
    return b"sdp-coalition|" + run_label + b"|" + bytes(coalition) + b"|" + bytes([member])


def _pair_key(own_private: bytes, peer_public: bytes, info: bytes) -> bytes:
    if not (isinstance(peer_public, bytes) and len(peer_public) == 32):
        raise ValueError("coalition seed: a peer's X25519 public key must be 32 bytes")
    own = X25519PrivateKey.from_private_bytes(own_private)
    shared = own.exchange(X25519PublicKey.from_public_bytes(peer_public))
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(shared)


def seal_coalition_seed(
    own_private: bytes,
    member_public: bytes,
    run_label: bytes,
    coalition: Coalition,
    member: int,
    seed: bytes,
) -> bytes:
    """The leader's sealed copy of ``seed`` for ``member`` of ``coalition``."""
    info = _seed_info(run_label, coalition, member)
    return ChaCha20Poly1305(_pair_key(own_private, member_public, info)).encrypt(
        bytes(12), seed, info
    )


def open_coalition_seed(
    own_private: bytes,
    leader_public: bytes,
    run_label: bytes,
    coalition: Coalition,
    member: int,
    sealed: bytes,
) -> bytes:
    """A member opens its sealed seed; ValueError if it does not authenticate."""
    info = _seed_info(run_label, coalition, member)
    try:
        return ChaCha20Poly1305(_pair_key(own_private, leader_public, info)).decrypt(
            bytes(12), sealed, info
        )
    except (InvalidTag, TypeError):
        raise ValueError(
            f"coalition seed: cannot open the seed of coalition {coalition} from server "
            f"{coalition[0]}"
        ) from None


# --------------------------------------------------------------------------------------------
# A round's messages: what a member sends to each server, what a server adds up.


def outgoing_reshares(
    arrays: dict[str, np.ndarray],
    pid: int,
    coalition: Coalition,
    seed: bytes,
    m: int,
    t: int,
    run_label: bytes,
    addend: dict[str, np.ndarray] | None = None,
) -> list[bytes]:
    """Member ``pid``'s round for every batch (sorted by name, one permutation per batch):
    the bytes it sends to each of the m servers (``addend``: see ``permuted_additive``)."""
    parts = [  # member_round, straight to the wire (uint32, same values)
        shamir.share_wire(
            permuted_additive(
                arrays[k],
                pid,
                coalition,
                seed,
                run_label + k.encode() + b"|",
                None if addend is None else addend[k],
            ),
            m,
            t,
        )
        for k in sorted(arrays)
    ]
    return [b"".join(p[r] for p in parts) for r in range(m)]


def combine_reshares(
    received: list[bytes],
    coalition: Coalition,
    shapes: dict[str, tuple[int, ...]],
    dtype: str = "int64",
) -> dict[str, np.ndarray]:
    """Add up the sharings received from the members of ``coalition`` (in its order): this
    server's new Shamir shares (int64, or uint32 between rounds). ValueError names the member
    whose message is malformed."""
    names = sorted(shapes)
    if len(received) != len(coalition):
        raise ValueError(f"reshare: {len(received)} messages for coalition {coalition}")
    parts: dict[str, list[tuple[str, bytes]]] = {k: [] for k in names}
    for a, data in zip(coalition, received, strict=True):
        if not isinstance(data, (bytes, bytearray)):
            raise ValueError(f"reshare: server {a} sent {type(data).__name__}, not bytes")
        view, off = memoryview(data), 0
        for k in names:
            s = shapes[k]
            size = 4 * math.prod(s)
            parts[k].append((f"reshare from server {a}", view[off : off + size]))
            off += size
        if off != len(data):
            raise ValueError(f"reshare: server {a} sent {len(data)} bytes, expected {off}")
    return {k: shamir.sum_wire(parts[k], shapes[k], dtype) for k in names}
