"""Client commitments to MPC input sharings (issue 37): what a client party signs for each
block of shares it sends, so that a refused sharing names whoever deviated. Pure functions.

For one block of a client's submission and server j (0-based, of m, threshold t):

* the client draws ``INPUT_CHECK_REPETITIONS`` uniform secrets mu and shares them with degree t
  (the **mask**, M_j its shares to j), and a 32-byte **salt** s_j for j alone;
* d_j = SHA-256 of (domain, label, client, block, j, server name, s_j, M_j, the share arrays x_j
  by sorted batch name with their shapes): ``share_digest``. The salt keeps d_j from revealing
  a 31-bit share to anyone who brute-forces the hash (d_j goes to every server);
* the check's coins rho = H(label, client, block, d_0 .. d_{m-1}) (``coin_seed``): fixed only
  after every server's shares are (Fiat-Shamir), so the client cannot aim at them;
* the **openings** o_j[r] = sum over batches of <rho_{batch, r}, x_j[batch]> + M_j[r]
  (``openings``); the client signs (block, last, d_0..d_{m-1}, o_0..o_{m-1}).

A server accepts its block only if its data hash to d_j; it then checks o_j against its data.
If the client's sharing of a block has degree > t on the honest servers' points, the vector
o (one value per server, per repetition) lies on a polynomial of degree <= t with probability
at most 1/p per repetition for each hash output the client tries (p^-3 for the three; the
client can grind by re-hashing, ~2^93 evaluations per success), so either o is inconsistent
(the signed statement convicts the client) or some honest server's o_j differs from its data
(its complaint, the salt, mask and shares it received, convicts the client). The openings
reveal nothing: o is a degree-t sharing of sum rho x + mu with mu uniform and secret. A
complaint reveals one server's shares of one block (nothing, for t >= 1), and an honest server
complains only about a client that lied to it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

import numpy as np

from mpc import shamir
from mpc.mac_check import INPUT_CHECK_REPETITIONS, coins, dot
from mpc.shamir import PRIME

SALT_BYTES = 32
_DOMAIN = b"sdp-mpc-input-v1"


def _field(raw: bytes) -> bytes:
    return len(raw).to_bytes(8, "big") + raw


def share_digest(
    label: bytes,
    client: str,
    block: int,
    index: int,
    server: str,
    salt: bytes,
    mask: Sequence[int],
    arrays: dict[str, np.ndarray],
) -> str:
    """SHA-256 hex that binds server ``index`` (``server``)'s shares of one block to the
    client, the run and round (``label``) and the block; see the module docstring."""
    if len(salt) != SALT_BYTES:
        raise ValueError(f"input commitment: salt must be {SALT_BYTES} bytes, got {len(salt)}")
    h = hashlib.sha256(_DOMAIN)
    for part in (label, client.encode(), str(block).encode(), str(index).encode(),
                 server.encode(), salt):  # fmt: skip
        h.update(_field(part))
    h.update(_field(shamir.to_wire(shamir.check_field(np.asarray(mask), "input mask"))))
    for name in sorted(arrays):
        a = shamir.check_field(np.asarray(arrays[name]), f"input batch {name!r}")
        h.update(_field(name.encode()) + _field(repr(tuple(a.shape)).encode()))
        h.update(_field(shamir.to_wire(a)))
    return h.hexdigest()


def coin_seed(label: bytes, client: str, block: int, digests: Sequence[str]) -> bytes:
    """The seed of a block's check coins: a hash of every server's share digest."""
    h = hashlib.sha256(_DOMAIN + b"|coins")
    for part in (label, client.encode(), str(block).encode(), *(d.encode() for d in digests)):
        h.update(_field(part))
    return h.digest()


def openings(arrays: dict[str, np.ndarray], mask: Sequence[int], seed: bytes) -> list[int]:
    """o[r] = sum over batches of <rho_{batch, r}, x[batch]> + mask[r], for one server's shares
    (the same linear function the client applies to each server's shares)."""
    out = []
    for r, mu in enumerate(mask):
        total = int(mu) % PRIME
        for name in sorted(arrays):
            a = np.asarray(arrays[name], dtype=np.int64)
            total = (total + dot(coins(seed, f"input|{name}|{r}", a.shape), a)) % PRIME
        out.append(total)
    return out


def consistent_openings(opened: Sequence[Sequence[int]], t: int) -> bool:
    """True iff the m servers' openings (m lists of equal length) lie, per repetition, on one
    polynomial of degree <= t."""
    a = shamir.check_field(np.asarray(opened, dtype=np.int64), "input openings")
    if a.ndim != 2 or a.shape[0] <= t:
        raise ValueError(f"input openings: need more than {t} servers' lists, got {a.shape}")
    return bool(shamir.consistent(a, t).all())


def commit_block(
    label: bytes,
    client: str,
    block: int,
    servers: Sequence[str],
    t: int,
    per_server: Sequence[dict[str, np.ndarray]],
    randomness: tuple[list[bytes], np.ndarray] | None = None,
) -> tuple[list[bytes], list[list[int]], list[str], list[list[int]]]:
    """Client side: (salts, mask shares, digests, openings), one each per server, for one
    block whose shares to server j are ``per_server[j]``. ``randomness`` (salts, mask shares
    (m, 3)) fixes the salts and the mask for benchmarks; by default both are fresh."""
    m = len(servers)
    if randomness is None:
        mask = shamir.share(shamir.random_field_elements((INPUT_CHECK_REPETITIONS,)), m, t)
        salts = [os.urandom(SALT_BYTES) for _ in range(m)]
    else:
        salts, mask = randomness
    masks = [[int(v) for v in mask[j]] for j in range(m)]
    digests = [
        share_digest(label, client, block, j, s, salts[j], masks[j], per_server[j])
        for j, s in enumerate(servers)
    ]
    seed = coin_seed(label, client, block, digests)
    return salts, masks, digests, [openings(per_server[j], masks[j], seed) for j in range(m)]
