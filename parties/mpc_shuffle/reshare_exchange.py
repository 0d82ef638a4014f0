"""Permute-and-reshare over MPyC's runtime: the message exchange of ``mpc.permute_reshare``.

``agree_coalition_seeds`` runs the seed agreement (ephemeral X25519 keys all-to-all, then each
coalition leader sends every member its sealed seed); ``mpyc_permute_reshare`` runs the
C(m, t+1) rounds, each member sending its resharing to every server with ``Runtime.transfer``
over MPyC's own peer connections (TLS with ``--ssl``). The arithmetic of both is in
``mpc.permute_reshare``; ``to_secfld``/``from_secfld`` convert our shares to MPyC's secure field
arrays and back (the representations are the same).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from mpc import permute_reshare as pr
from mpc import shamir
from mpc.shamir import PRIME
from parties.mpc_shuffle.mpyc_runtime import MPCServerError
from parties.mpc_shuffle.secure_ops import exchange


async def agree_coalition_seeds(
    rt: Any, coals: list[pr.Coalition], run_label: bytes
) -> dict[pr.Coalition, bytes]:
    """Agree one secret 32-byte seed per coalition among its members only.

    Ephemeral X25519 keys are exchanged among all servers over MPyC's channels (authenticated
    by TLS with ``--ssl``); the leader of each coalition seals a fresh seed to every member
    (``mpc.permute_reshare.seal_coalition_seed``). Non-members learn nothing.
    """
    me = rt.pid
    sk, pk = pr.exchange_keypair()
    pubs = await rt.transfer(pk)  # all-to-all
    if not all(isinstance(p, bytes) and len(p) == 32 for p in pubs):
        raise MPCServerError("seed agreement: malformed X25519 public key from a server")
    seeds: dict[pr.Coalition, bytes] = {}
    for A in coals:
        leader = A[0]
        if me == leader:
            seeds[A] = os.urandom(32)
        for b in A[1:]:
            obj = None
            if me == leader:
                obj = pr.seal_coalition_seed(sk, pubs[b], run_label, A, b, seeds[A])
            got = await rt.transfer(obj, sender_receivers=[(leader, b)])
            if me == b:
                try:
                    seeds[A] = pr.open_coalition_seed(sk, pubs[leader], run_label, A, b, got[0])
                except ValueError as exc:
                    raise MPCServerError(f"seed agreement: {exc}") from None
    return seeds


async def mpyc_permute_reshare(
    rt: Any,
    arrays: dict[str, np.ndarray],
    seeds: dict[pr.Coalition, bytes],
    run_label: bytes = b"",
    *,
    addend: dict[str, np.ndarray] | None = None,
    deviate: tuple[str, int, int] | None = None,
) -> dict[str, np.ndarray]:
    """Shuffle the rows of every array (one independent permutation per batch) on MPyC.

    ``arrays`` maps batch names to this server's Shamir shares, shape ``(n_b, width_b)``; every
    server must pass the same names and shapes. Returns this server's shares of the shuffled
    batches. ``seeds`` comes from ``agree_coalition_seeds`` (only the member coalitions).
    ``addend`` (a member of the first coalition only): an additive share over that coalition
    added to this server's own in the first round (the MAC tags' GRR parts,
    ``malicious.tag_batches``). ``deviate`` = (batch, row, offset), tests only (``fault_hooks.mpc_offset``): this server
    adds ``offset`` to the row's first column while it reshares in its first coalition.
    """
    m, t, me = len(rt.parties), rt.threshold, rt.pid
    cur = {k: _field(arrays[k], f"mpyc_permute_reshare batch {k!r}") for k in arrays}
    shapes = {k: tuple(v.shape) for k, v in cur.items()}
    coals = pr.coalitions(m, t)
    if addend is not None and me not in coals[0]:
        raise ValueError(f"mpyc_permute_reshare: server {me} is not in {coals[0]}: no addend")
    for A in coals:
        outgoing: list[bytes | None] = [None] * m
        if me in A and deviate is not None:  # additive share + offset, exactly
            name, row, offset = deviate
            lam = int(shamir.lagrange_coefficients([a + 1 for a in A])[A.index(me)])
            cur[name] = cur[name].copy()
            cur[name][row, 0] = (int(cur[name][row, 0]) + offset * pow(lam, -1, PRIME)) % PRIME
            deviate = None
        if me in A:
            extra = {"addend": addend} if addend is not None and A == coals[0] else {}
            outgoing = list(pr.outgoing_reshares(cur, me, A, seeds[A], m, t, run_label, **extra))
        received = await exchange(rt, outgoing, list(A))
        try:  # uint32 between rounds (what the next round sends), int64 at the end
            cur = pr.combine_reshares(received, A, shapes, "uint32")
        except ValueError as exc:
            raise MPCServerError(str(exc)) from None
    return {k: v.astype(np.int64) for k, v in cur.items()}


def _field(a: np.ndarray, where: str) -> np.ndarray:
    """int64 field elements (``shamir.check_field``), or uint32 ones kept as they are (the
    representation the resharing sends: one range pass, no conversion)."""
    if a.dtype == np.uint32:
        if a.size and a.max() >= PRIME:
            raise ValueError(f"{where}: values must lie in [0, {PRIME})")
        return a
    return shamir.check_field(a, where)


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
