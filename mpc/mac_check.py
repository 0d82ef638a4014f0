"""Arithmetic of the MPC shuffler's malicious-abort mode: information-theoretic MACs over GF(p).

Model: honest majority (t < m/2), a malicious minority; security with abort (Chida, Genkin,
Hamada, Ikarashi, Kikuchi, Lindell, Nof, CRYPTO 2018, "SPDZ-wise" Shamir). Everything here is
local (pure functions on one server's shares, or on opened public values); the message
exchange is ``parties.mpc_shuffle.malicious``.

* MAC keys: ``MAC_KEYS`` = 3 independent secret keys alpha_1..alpha_3 (each the sum of fresh
  sharings input by every server, so uniform and unknown to any t). Every shared value x
  carries the tags alpha_j x (GRR98 products folded into the shuffle's first round,
  ``parties.mpc_shuffle.malicious.tag_batches``); the shuffle moves the tags in the
  same rows as the value (``stack_tags`` / ``split_tags``), so permute-and-reshare applies the
  same permutation and resharing to both.
* MAC check (``mac_check_sums``): after the shuffle, with coins r_{j,i} drawn after the
  outputs are fixed, the servers open c_j = sum_i r_{j,i} [alpha_j y_i] - [alpha_j] sum_i
  r_{j,i} [y_i]. Honest: c_j = 0. An adversary that added offsets delta to values and eps to
  tags (in any resharing or tag multiplication) gives c_j = sum_i r_{j,i} (eps_{j,i} - alpha_j
  delta_i); with delta != 0 this vanishes with probability at most 2/p per key (guess alpha_j,
  or hit a zero of the coins), independently per key: all three pass with probability
  <= (2/p)^3 < 2^-89.99 (``mac_soundness_bits``). A non-permutation (a member mapping its
  additive shares so that rows are duplicated, dropped or replaced) is such an error too,
  with eps - alpha delta != 0 unless the member guesses alpha: the MAC check alone catches it.
* Multiset check (``row_digests``): rows are compressed with public random coefficients
  beta and the servers open rho (prod_i (z - d(x_i)) - prod_i (z - d(y_i))) for a public random
  z and a secret random rho, all drawn after the outputs are fixed. Honest: 0. If the output
  rows are not a permutation of the input rows, the difference is a nonzero polynomial of
  degree <= 2n in (beta, z), which vanishes with probability <= 2n/p (Schwartz-Zippel) per
  repetition (``multiset_soundness_bits``); an optional second, independent line behind the MAC
  check (``--param mpc_multiset=on``: log2 n multiplication rounds), which already catches any
  deviation in this linear protocol.
* Input check (``input_combinations``): a client's sharing must lie on polynomials of degree
  <= t; the servers open random combinations sum_i rho_i [x_i] + [mask] (coins drawn after
  every submission arrived, a fresh random degree-t mask per combination so nothing about the
  values is revealed) and test the m opened shares for consistency. An inconsistent sharing
  passes one combination with probability 1/p: ``INPUT_CHECK_REPETITIONS`` = 3 give p^-3.

Coins: ``coin_seed`` hashes jointly opened random field elements into a 32-byte seed, expanded
by ChaCha20 (``coins``), so one opening gives every coin of a check.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from mpc import shamir
from mpc.shamir import PRIME

MAC_KEYS = 3  # independent MAC keys over GF(2^31 - 1): a forgery passes w.p. <= (2/p)^3
INPUT_CHECK_REPETITIONS = 3  # random combinations per client: an inconsistent sharing, p^-3
MULTISET_REPETITIONS = 1  # product checks at independent random points (when asked for)
COIN_ELEMENTS = 4  # jointly opened field elements hashed into one coin seed (124 bits)
SECURITY_MODES = ("malicious-abort", "semi-honest")


def flag(value: object) -> bool:
    """A yes/no run parameter (``mpc_multiset``) as given: true, 1, yes or on -> True."""
    return str(value).lower() in ("true", "1", "yes", "on")


def mac_soundness_bits(keys: int = MAC_KEYS) -> float:
    """-log2 of the probability that a value offset passes every key's MAC check."""
    if keys < 1:
        raise ValueError(f"MAC check: need at least one key, got {keys}")
    return keys * math.log2(PRIME / 2)


def multiset_soundness_bits(n: int, repetitions: int = MULTISET_REPETITIONS) -> float:
    """-log2 of the probability that a non-permutation of n rows passes the multiset check."""
    if n < 1:
        return float("inf")
    return repetitions * (math.log2(PRIME) - math.log2(2 * n))


def coin_seed(opened: np.ndarray, label: bytes) -> bytes:
    """A 32-byte seed from jointly opened random field elements (domain-separated)."""
    data = np.ascontiguousarray(np.asarray(opened, dtype=np.int64) % PRIME, dtype="<u4").tobytes()
    return hashlib.sha256(b"sdp-mpc-coins|" + label + b"|" + data).digest()


def coins(seed: bytes, label: str, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform field elements of ``shape`` expanded from ``seed`` for the named use."""
    key = hashlib.sha256(seed + b"|" + label.encode()).digest()
    count = math.prod(shape)
    return shamir.keyed_field_elements(key, bytes(16), count).reshape(shape)


def dot(a: np.ndarray, b: np.ndarray) -> int:
    """sum(a * b) mod PRIME for field arrays of the same shape (no int64 overflow)."""
    if a.size == 0:
        return 0
    return int(shamir.mul_mod(a, b).sum() % PRIME)  # n < 2^32 products < 2^31: no overflow


def stack_tags(values: np.ndarray | None, tags: np.ndarray) -> np.ndarray:
    """One array per batch for the shuffle: row i = (x_i, alpha_1 x_i, .., alpha_K x_i).

    ``values`` (n, w) (None: zeros), ``tags`` (K, n, w) -> (n, (K + 1) w), uint32 (the
    representation the resharing sends; field elements fit)."""
    k, n, w = tags.shape
    out = np.zeros((n, (k + 1) * w), dtype="<u4")
    if values is not None:
        out[:, :w] = values
    out[:, w:].reshape(n, k, w)[...] = tags.transpose(1, 0, 2)
    return out


def split_tags(stacked: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of ``stack_tags``: (values (n, w), tags (K, n, w))."""
    n = stacked.shape[0]
    k = stacked.shape[1] // width - 1
    if stacked.shape[1] != (k + 1) * width or k < 1:
        raise ValueError(f"split_tags: width {stacked.shape[1]} is not (K+1) * {width}")
    tags = stacked[:, width:].reshape(n, k, width).transpose(1, 0, 2)
    return stacked[:, :width], np.ascontiguousarray(tags)


def mac_check_sums(
    values: np.ndarray, tags: np.ndarray, r: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per key j: this server's shares of sum_i r_j,i y_i and of sum_i r_j,i alpha_j y_i.

    ``values`` (n, w), ``tags`` and ``r`` (K, n, w). The check value is the second minus
    alpha_j times the first (one secure multiplication per key)."""
    k = tags.shape[0]
    s_val = np.array([dot(r[j], values) for j in range(k)], dtype=np.int64)
    s_tag = np.array([dot(r[j], tags[j]) for j in range(k)], dtype=np.int64)
    return s_val, s_tag


def row_digests(rows: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """d(x) = x_0 + sum_{c >= 1} beta_c x_c per row (linear: works on shares). ``beta`` (w,)
    with beta_0 ignored (taken as 1)."""
    n, w = rows.shape
    acc = rows[:, 0].copy()
    for c in range(1, w):
        acc = (acc + rows[:, c] * int(beta[c])) % PRIME
    return acc.reshape(n)


def input_combinations(arrays: list[np.ndarray], rho: list[np.ndarray]) -> int:
    """sum over the client's batches of sum rho * x (one combination, on shares)."""
    total = 0
    for a, r in zip(arrays, rho, strict=True):
        total = (total + dot(r, a)) % PRIME
    return total
