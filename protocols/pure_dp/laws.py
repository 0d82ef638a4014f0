"""Per-user laws over message counts of the catalogue's counting randomizers, for the exact
pure-epsilon check (:mod:`protocols.pure_dp.exact`).

Each law is written from the protocol object's own parameters (tests check it against the real
encoder's frequencies): an array over (zeros, ones) message counts, or over the count of ones
when a protocol sends only messages "1".
"""

from __future__ import annotations

import math

import numpy as np

from protocols.counting.cnt_2m import Cnt2M
from protocols.counting.cnt_bn import CntBN
from protocols.counting.cnt_rr import CntRR


def rr_law(lam: float, x: int) -> np.ndarray:
    """Boolean RR (a uniform bit w.p. lam): one message, law over (zeros, ones)."""
    law = np.zeros((2, 2))
    keep = 1.0 - lam / 2.0
    law[0, 1] = keep if x else 1.0 - keep
    law[1, 0] = 1.0 - law[0, 1]
    return law


def bit_plus_noise_law(t: int, p: float, x: int) -> np.ndarray:
    """Own bit + t Bernoulli(p) bits (Cnt_BN): law over (zeros, ones), zeros + ones = 1 + t."""
    law = np.zeros((t + 2, t + 2))
    for j in range(t + 1):
        ones = x + j
        law[1 + t - ones, ones] = math.comb(t, j) * p**j * (1.0 - p) ** (t - j)
    return law


def two_message_law(p: float, x: int) -> np.ndarray:
    """x + Bernoulli(p) messages "1" (Cnt_2M): law over the count of ones."""
    law = np.zeros(3)
    law[x] += 1.0 - p
    law[x + 1] += p
    return law


def counting_laws(protocol: CntRR | CntBN | Cnt2M) -> list[np.ndarray]:
    """[law of a user holding 0, law of a user holding 1] for a catalogue counting protocol."""
    if isinstance(protocol, CntRR):
        return [rr_law(protocol.lam, x) for x in (0, 1)]
    if isinstance(protocol, CntBN):
        return [bit_plus_noise_law(protocol.t, protocol.p, x) for x in (0, 1)]
    if isinstance(protocol, Cnt2M):
        return [two_message_law(protocol.p, x) for x in (0, 1)]
    raise TypeError(f"counting_laws: no per-user law for {type(protocol).__name__}")


__all__ = ["bit_plus_noise_law", "counting_laws", "rr_law", "two_message_law"]
