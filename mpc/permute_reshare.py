"""O(n) secret-shared shuffle by permute-and-reshare (Laur-Willemson-Zhang style).

Model: m servers, Shamir threshold t < m/2, semi-honest adversary corrupting at most t servers
(MPyC's model: honest majority, passive corruption; a deviating server is out of scope and can
change the output undetected).

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

This module has the pure numpy steps (``simulate_permute_reshare`` runs all servers in one
process for tests) and the networked version on MPyC's runtime (``mpyc_permute_reshare``),
which uses ``Runtime.transfer`` over MPyC's own peer connections (TLS with ``--ssl``).
"""

from __future__ import annotations

import hashlib
import itertools
import os
from typing import Any

import numpy as np
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
    return share_i * int(lam) % PRIME


def member_round(
    share_i: np.ndarray, pid: int, coalition: Coalition, seed: bytes, m: int, t: int, label: bytes
) -> np.ndarray:
    """One member's work in a round: additive share, permute rows, reshare to all m servers.

    Returns the outgoing sharings, shape ``(m, *share_i.shape)`` (row r goes to server r).
    """
    perm = permutation_from_seed(seed, share_i.shape[0], label + bytes(coalition))
    return shamir.share(to_additive(share_i, pid, coalition)[perm], m, t)


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
# Networked version on MPyC's runtime.


class MPCServerError(RuntimeError):
    """An MPC server failed, disconnected or timed out; the message names it."""


def _pair_key(own: X25519PrivateKey, peer_pub: bytes, info: bytes) -> bytes:
    shared = own.exchange(X25519PublicKey.from_public_bytes(peer_pub))
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(shared)


async def agree_coalition_seeds(
    rt: Any, coals: list[Coalition], run_label: bytes
) -> dict[Coalition, bytes]:
    """Agree one secret 32-byte seed per coalition among its members only.

    Ephemeral X25519 keys are exchanged among all servers over MPyC's channels (authenticated
    by TLS with ``--ssl``); the leader of each coalition encrypts a fresh seed to every member
    with ChaCha20-Poly1305 under the HKDF of their DH secret. Non-members learn nothing.
    """
    me = rt.pid
    sk = X25519PrivateKey.generate()
    pk = sk.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    pubs = await rt.transfer(pk)  # all-to-all
    if not all(isinstance(p, bytes) and len(p) == 32 for p in pubs):
        raise MPCServerError("seed agreement: malformed X25519 public key from a server")
    seeds: dict[Coalition, bytes] = {}
    for A in coals:
        leader = A[0]
        if me == leader:
            seeds[A] = os.urandom(32)
        for b in A[1:]:
            info = b"sdp-coalition|" + run_label + b"|" + bytes(A) + b"|" + bytes([b])
            obj = None
            if me == leader:
                key = _pair_key(sk, pubs[b], info)
                obj = ChaCha20Poly1305(key).encrypt(bytes(12), seeds[A], info)
            got = await rt.transfer(obj, sender_receivers=[(leader, b)])
            if me == b:
                key = _pair_key(sk, pubs[leader], info)
                try:
                    seeds[A] = ChaCha20Poly1305(key).decrypt(bytes(12), got[0], info)
                except Exception:
                    raise MPCServerError(
                        f"seed agreement: cannot decrypt the seed of coalition {A} from "
                        f"server {leader}"
                    ) from None
    return seeds


def _flatten(arrays: dict[str, np.ndarray]) -> tuple[list[str], list[tuple[int, ...]]]:
    names = sorted(arrays)
    return names, [tuple(arrays[k].shape) for k in names]


async def mpyc_permute_reshare(
    rt: Any, arrays: dict[str, np.ndarray], seeds: dict[Coalition, bytes], run_label: bytes = b""
) -> dict[str, np.ndarray]:
    """Shuffle the rows of every array (one independent permutation per batch) on MPyC.

    ``arrays`` maps batch names to this server's Shamir shares, shape ``(n_b, width_b)``; every
    server must pass the same names and shapes. Returns this server's shares of the shuffled
    batches. ``seeds`` comes from ``agree_coalition_seeds`` (only the member coalitions).
    """
    m, t, me = len(rt.parties), rt.threshold, rt.pid
    names, shapes = _flatten(arrays)
    cur = {k: shamir.check_field(arrays[k], f"mpyc_permute_reshare batch {k!r}") for k in names}
    for A in coalitions(m, t):
        outgoing: list[bytes | None] = [None] * m
        if me in A:
            parts = [
                member_round(cur[k], me, A, seeds[A], m, t, run_label + k.encode() + b"|")
                for k in names
            ]
            outgoing = [b"".join(shamir.to_wire(p[r]) for p in parts) for r in range(m)]
        futs = [rt.transfer(outgoing[r], sender_receivers=[(a, r) for a in A]) for r in range(m)]
        received = await rt.gather(futs[me])
        for r in range(m):
            if r != me:
                await rt.gather(futs[r])  # sends to r complete on our side (empty result)
        new = {k: np.zeros(s, dtype=np.int64) for k, s in zip(names, shapes, strict=True)}
        for a, data in zip(A, received, strict=True):
            off = 0
            for k, s in zip(names, shapes, strict=True):
                size = 4 * (int(np.prod(s)) if s else 1)
                part = shamir.from_wire(data[off : off + size], s, f"reshare from server {a}")
                new[k] = (new[k] + part) % PRIME
                off += size
            if off != len(data):
                raise MPCServerError(f"reshare: server {a} sent {len(data)} bytes, expected {off}")
        cur = new
    return cur


def secfld_type(rt: Any) -> Any:
    """MPyC's secure field type over GF(PRIME) (shares are interchangeable with ours)."""
    return rt.SecFld(PRIME)


def to_secfld(rt: Any, share_i: np.ndarray) -> Any:
    """Wrap this server's Shamir shares as an MPyC secure field array (no communication)."""
    sf = secfld_type(rt)
    return sf.array(sf.field.array(np.asarray(share_i, dtype=object)))


async def from_secfld(rt: Any, x: Any) -> np.ndarray:
    """This server's share of an MPyC secure field array, as int64."""
    v = await rt.gather(x)
    return np.asarray(v.value, dtype=object).astype(np.int64)


class LocalRuntime:
    """In-process stand-in for MPyC's ``Runtime`` with the subset used here (``pid``,
    ``parties``, ``threshold``, ``transfer``, ``gather``): lets unit tests run m servers as
    coroutines in one event loop. Messages are matched by call order, as MPyC's program counter
    does; sends happen at call time.
    """

    def __init__(self, net: LocalMPCNetwork, pid: int) -> None:
        self.net = net
        self.pid = pid
        self.parties = tuple(range(net.m))
        self.threshold = net.t
        self._calls = 0

    def transfer(
        self, obj: Any, senders: Any = None, receivers: Any = None, sender_receivers: Any = None
    ) -> Any:
        """Same graph semantics as ``mpyc.runtime.Runtime.transfer``; returns a Future."""
        import asyncio
        import pickle

        k = self._calls
        self._calls += 1
        m, me = self.net.m, self.pid
        single = isinstance(senders, int)
        if sender_receivers is None:
            snd = [senders] if single else list(range(m) if senders is None else senders)
            rcv = (
                [receivers]
                if isinstance(receivers, int)
                else list(range(m) if receivers is None else receivers)
            )
            my_senders = snd if me in rcv else []
            my_receivers = rcv if me in snd else []
        else:
            my_senders = [a for a, b in sender_receivers if b == me]
            my_receivers = [b for a, b in sender_receivers if a == me]
        data = pickle.dumps(obj)
        for r in my_receivers:
            self.net.bytes_sent[me] += len(data) if r != me else 0
            self.net.slot(me, r, k).set_result(data)
        parts = [self.net.slot(s, me, k) for s in my_senders]

        async def collect() -> Any:
            got = [pickle.loads(await f) for f in parts]
            return got[0] if single else got

        return asyncio.ensure_future(collect())

    async def gather(self, x: Any) -> Any:
        """Await a future returned by ``transfer``."""
        return await x


class LocalMPCNetwork:
    """m ``LocalRuntime`` servers sharing one event loop (tests only)."""

    def __init__(self, m: int, t: int) -> None:
        self.m, self.t = m, t
        self._slots: dict[tuple[int, int, int], Any] = {}
        self.bytes_sent = [0] * m

    def slot(self, s: int, r: int, k: int) -> Any:
        import asyncio

        key = (s, r, k)
        if key not in self._slots:
            self._slots[key] = asyncio.get_running_loop().create_future()
        return self._slots[key]

    def runtimes(self) -> list[LocalRuntime]:
        return [LocalRuntime(self, i) for i in range(self.m)]
