"""Threshold arithmetic on public values, shared by the provers and the verifiers.

Lagrange coefficients at zero (which weight the decryption shares of a decryption set) and
Feldman's evaluation of a commitment vector at a point (a dealer's commitment to the share it
owes server ``j``). Both use only public inputs, so the record verifier may import this module
(it imports no prover code: ``tests/test_mixnet_protocol.py``); each formula is written once.
"""

from __future__ import annotations

from collections.abc import Sequence

from mpc.lagrange import lagrange_weights
from mpc.ristretto import L, msm


def lagrange_at_zero(xs: Sequence[int]) -> list[int]:
    """Lagrange coefficients at 0 for distinct nonzero evaluation points ``xs`` (mod L)."""
    if len(set(xs)) != len(xs) or any(x % L == 0 for x in xs):
        raise ValueError(f"lagrange: evaluation points must be distinct and nonzero: {list(xs)}")
    return lagrange_weights(xs, 0, L)


def commitment_at(comms: Sequence[bytes], j: int) -> bytes:
    """``sum_m j^m C_m``, the Feldman commitment to ``f(j)``."""
    return msm([pow(j, m, L) for m in range(len(comms))], list(comms), "dkg commitment")
