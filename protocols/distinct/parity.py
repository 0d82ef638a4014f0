"""Distinct elements by re-randomized parities (the pan-private "density" estimator through a
secure XOR over Split-Mix shares).

Problem: user i holds x_i in [k]; estimate D = |{x_1, ..., x_n}|. Changing one user's value
changes D by at most 1.

Randomizer. User i draws one bit per element j of [k]: y_ij ~ Bernoulli(1/2) if j = x_i (the
element "re-randomizes" its bit, as a pan-private state does on arrival), else
y_ij ~ Bernoulli(p). The ideal functionality releases only the parities P_j = XOR_i y_ij:
P_j ~ Bernoulli(1/2) exactly when some user holds j, whatever the number of holders, and
P_j ~ Bernoulli((1 - beta_m)/2) otherwise, beta_m = (1 - 2p)^m for m contributing users.

Privacy (our derivation; replace-one neighbours). Moving one user from j to j' changes the laws
of P_j and P_j' only (when no other user holds them): 1/2 vs (1 -+ beta)/2 on each, so the
likelihood ratio of the parity vector is at most (1 + beta)/(1 - beta), i.e. eps = 2 atanh(beta)
with beta = (1 - 2p)^h for h honest users; bits of malicious users are independent of the honest
ones and only mix these laws. p is set so that (1 - 2p)^m0 = tanh(eps/2) for m0 = ceil(gamma N)
honest users: pure eps for the ideal functionality with any h >= m0 honest users (robust), and
fewer honest users re-account exactly at beta_h. The k bits travel as words of w bits
(``word_bits``, default 30, blocks of [k]); each word is split into s uniform XOR shares in the
group Z_2^w (IKOS split and mix), s from Balle, Bell, Gascon & Nissim's Theorem 1 with log2 q =
w (:func:`protocols.summation.split_mix.num_shares`, sized for m0), and the protocol is
(eps, (1 + e^eps) 2^-sigma, gamma)-robustly shuffle private by the survey's Theorem 9 (as
Cnt_SGM; delta from ``delta_split``). Caveat: Theorem 1 is stated for Z_q; we apply it to the
group Z_2^w of the same size (``word_bits=1`` is the stated case Z_2, at k s messages per user).

Estimator. With m users received, ones = sum_j P_j has mean k (1 - beta_m)/2 + D beta_m/2, so
D^ = (2 ones - k (1 - beta_m))/beta_m is unbiased with variance
(D + (k - D)(1 - beta_m^2))/beta_m^2 <= k/beta_m^2: additive error Theta(sqrt(k)/eps) at
gamma = 1 (beta = tanh(eps/2)), the Theta(sqrt(k)) of BCJM's abstract.

The SODA 2021 text beyond the abstract was not reachable here (docs/survey.md lists what was
tried); this construction is ours: the pan-private distinct-count estimator of Dwork, Naor,
Pitassi, Rothblum & Yekhanin (ICS 2010; re-draw a fair bit on arrival) made a shuffle protocol
by a secure XOR, which is the robust-shuffle / pan-private connection the paper's title names.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from protocols.accountant.survey import robust_users, theorem9, theorem9_sigma
from protocols.base import Batches, BatchSpec
from protocols.catalogue.common import CatalogueProtocol, Guarantee
from protocols.catalogue.inputs import check_values
from protocols.summation.split_mix import Q_MAX, num_shares, uniform_mod

BATCH = "shares"


@dataclass(frozen=True)
class ParityParams:
    """Public parameters of the distinct-elements protocol."""

    n: int  # planned users N
    k: int  # domain size
    epsilon: float  # pure eps of the ideal parities with >= m0 honest users
    gamma: float
    min_users: int  # m0 = ceil(gamma N)
    p: float  # Bernoulli rate of a bit of an element the user does not hold
    word_bits: int  # w: bits of [k] per message
    blocks: int  # ceil(k / w)
    sigma: int
    shares: int  # s per block
    delta_split: float  # (1 + e^eps) 2^-sigma

    def beta(self, users: int) -> float:
        """(1 - 2p)^users: the bias of an unheld element's parity."""
        return math.exp(users * math.log1p(-2 * self.p))

    def block_bits(self) -> np.ndarray:
        """Width of every block (w, except a shorter last one)."""
        widths = np.full(self.blocks, self.word_bits, dtype=np.int64)
        widths[-1] = self.k - self.word_bits * (self.blocks - 1)
        return widths

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parity_parameters(
    n: int,
    k: int,
    epsilon: float,
    *,
    gamma: float = 1.0,
    delta_split: float = 1e-12,
    word_bits: int = 30,
) -> ParityParams:
    """Parameters for N users over [k] (module docstring); ValueError names a bad one."""
    if int(n) != n or n < 3:
        raise ValueError(f"distinct: users must be an integer >= 3, got {n}")
    if int(k) != k or k < 2:
        raise ValueError(f"distinct: domain k must be an integer >= 2, got {k}")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"distinct: epsilon must be finite and > 0, got {epsilon}")
    if int(word_bits) != word_bits or not 1 <= word_bits <= 30:
        raise ValueError(f"distinct: word_bits must be an integer in [1, 30], got {word_bits}")
    m0 = robust_users(int(n), gamma)
    if m0 < 3:
        raise ValueError(f"distinct: ceil(gamma N) = {m0} < 3 honest users")
    # (1 - 2p)^m0 = tanh(eps/2)  <=>  p = -expm1(ln tanh(eps/2) / m0) / 2
    p = -math.expm1(math.log(math.tanh(epsilon / 2)) / m0) / 2
    w = min(int(word_bits), int(k))
    sigma = theorem9_sigma(float(epsilon), delta_split)
    assert (1 << w) <= Q_MAX
    return ParityParams(
        n=int(n),
        k=int(k),
        epsilon=float(epsilon),
        gamma=float(gamma),
        min_users=m0,
        p=p,
        word_bits=w,
        blocks=-(-int(k) // w),
        sigma=sigma,
        shares=num_shares(m0, 1 << w, sigma),
        delta_split=theorem9(float(epsilon), 0.0, 2.0 ** (-sigma))[1],
    )


def parity_words(values: np.ndarray, params: ParityParams, rng: np.random.Generator) -> np.ndarray:
    """(n, blocks) int64 words of every user's bits y_ij (module docstring), exactly drawn."""
    x = np.asarray(values, dtype=np.int64)
    n, k, w = x.size, params.k, params.word_bits
    words = np.zeros((n, params.blocks), dtype=np.int64)
    own = (rng.random(n) < 0.5).astype(np.int64)  # the held element's fair bit
    rows = np.arange(n)
    words[rows, x // w] |= own << (x % w)
    # k - 1 independent Bernoulli(p) bits = a Binomial(k - 1, p) count on a uniform subset
    ones = rng.binomial(k - 1, params.p, size=n)
    for i in np.flatnonzero(ones):
        r = rng.choice(k - 1, size=int(ones[i]), replace=False)
        j = r + (r >= x[i])  # skip the held element
        np.bitwise_or.at(words, (np.full(j.size, i), j // w), np.left_shift(1, j % w))
    return words


def xor_split(words: np.ndarray, params: ParityParams) -> np.ndarray:
    """(n * blocks * s, 2) messages (block, share): s uniform XOR shares of every word."""
    n, b, s = words.shape[0], params.blocks, params.shares
    masks = (np.int64(1) << params.block_bits()) - 1
    sh = uniform_mod(1 << params.word_bits, (n, b, s)) & masks[None, :, None]
    sh[:, :, s - 1] = words ^ np.bitwise_xor.reduce(sh[:, :, : s - 1], axis=2)
    block = np.broadcast_to(np.arange(b, dtype=np.int64)[None, :, None], sh.shape)
    return np.stack([block.ravel(), sh.ravel()], axis=1)


def xor_parities(messages: np.ndarray, params: ParityParams) -> tuple[np.ndarray, int, int]:
    """(parity bit of every element of [k], well-formed messages, malformed) of a batch."""
    m = np.asarray(messages, dtype=np.int64)
    if m.ndim != 2 or m.shape[1] != 2:
        raise ValueError(f"distinct analyzer: messages must have shape (n, 2), got {m.shape}")
    block, word = m[:, 0], m[:, 1]
    ok = (block >= 0) & (block < params.blocks)
    ok[ok] &= (word[ok] >= 0) & (word[ok] < (np.int64(1) << params.block_bits()[block[ok]]))
    block, word = block[ok], word[ok]
    acc = np.zeros(params.blocks, dtype=np.int64)
    for b in range(params.blocks):  # few blocks: one pass each
        acc[b] = np.bitwise_xor.reduce(word[block == b]) if word.size else 0
    bits = (acc[:, None] >> np.arange(params.word_bits)[None, :]) & 1
    return bits.ravel()[: params.k].astype(np.int64), int(ok.sum()), int((~ok).sum())


class RobustDistinct(CatalogueProtocol):
    """``blocks * s`` messages (block, XOR share) per user in batch ``shares``."""

    name = "distinct"
    release_what = "number of distinct values"

    def __init__(
        self,
        n: int,
        k: int,
        eps_c: float,
        gamma: float = 1.0,
        delta_split: float = 1e-12,
        word_bits: int = 30,
    ) -> None:
        self.params = parity_parameters(
            n, k, eps_c, gamma=gamma, delta_split=delta_split, word_bits=word_bits
        )
        self.n, self.k, self.eps_c = self.params.n, self.params.k, float(eps_c)

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec(BATCH, 2, max(self.params.blocks, 1 << self.params.word_bits))]

    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        x = check_values(records, self.k, "distinct.encode")
        return {BATCH: xor_split(parity_words(x, self.params, rng), self.params)}

    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        msgs = shuffled.get(BATCH)
        if msgs is None:
            raise ValueError(f"distinct analyzer: no {BATCH!r} batch received")
        bits, good, bad = xor_parities(msgs, self.params)
        users = good // (self.params.blocks * self.params.shares)
        if users < 1:
            raise ValueError("distinct analyzer: no user's shares received")
        return self.estimate_from_parities(bits, users) | {"messages": good, "invalid": bad}

    def estimate_from_parities(self, bits: np.ndarray, users: int) -> dict[str, Any]:
        """The unbiased D^ (and its clip to [0, k]) from the k parities of ``users`` users."""
        beta = self.params.beta(users)
        ones = int(np.asarray(bits).sum())
        est = (2 * ones - self.k * (1 - beta)) / beta
        return {
            "distinct": float(est),
            "distinct_clipped": float(min(max(est, 0.0), self.k)),
            "ones": ones,
            "users": int(users),
        }

    def variance(self, distinct: int, users: int | None = None) -> float:
        """Exact variance of D^ when ``distinct`` values are held by ``users`` (default N)."""
        b = self.params.beta(self.n if users is None else users)
        return (distinct + (self.k - distinct) * (1 - b * b)) / (b * b)

    def messages_per_user(self) -> float:
        return float(self.params.blocks * self.params.shares)

    def bits_per_user(self) -> float:
        return float(self.params.shares * int(self.params.block_bits().sum()))

    def max_messages(self) -> dict[str, int]:
        return {BATCH: self.params.blocks * self.params.shares}

    def mechanism(self) -> str:
        p = self.params
        return (
            f"re-randomized parities (p={p.p:.4g}, m0={p.min_users}) + XOR split-mix "
            f"(w={p.word_bits}, s={p.shares}, {p.blocks} blocks)"
        )

    def guarantee(self, users: int) -> Guarantee:
        p = self.params
        if users < 3:
            raise ValueError(f"only {users} users received")
        eps = 2 * math.atanh(p.beta(users))
        sigma = math.floor(
            ((p.shares - 1) * (math.log2(users) - math.log2(math.e)) - p.word_bits) / 2
        )
        if sigma < 1:
            raise ValueError(f"{users} users: {p.shares} shares give no statistical security")
        sigma = min(sigma, p.sigma)
        _, delta = theorem9(eps, 0.0, 2.0 ** (-sigma))
        if delta >= 1:
            raise ValueError(f"{users} users: delta {delta:.3g} >= 1")
        note = (
            f"parities of {users} users: eps = 2 atanh((1-2p)^{users}); XOR split-mix sigma "
            f"{sigma} (Theorem 9)"
        )
        return Guarantee(eps, delta, "parity-bias + survey-thm9 (XOR split-mix)", "upper", note)

    def privacy(self) -> dict[str, Any]:
        p = self.params
        note = "pure eps for the ideal parities; delta only from the XOR split-mix distance"
        return self.split_mix_statement(p, {"sigma": p.sigma, "shares": p.shares}, note)
