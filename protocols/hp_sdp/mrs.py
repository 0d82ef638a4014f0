"""MRS, HP-SDP's "Message Random Shuffling" (Algorithm 3), as printed: a reference enumerator only.

Algorithm 3 is Fuchs' QuickPerm (countdown) form of Heap's algorithm: it *enumerates*
permutations by successive swaps, then "uniformly picks a permutation sigma from Psi'". Spec 7.3:

* the pseudocode parity (odd i: j = B[i], even i: j = 0) visits n! - 1 distinct arrangements and
  never records the initial order (fixed by ``include_initial=True``);
* the prose parity (odd i: j = 0, even i: j = B[i]) does not enumerate S_n at all;
* an enumeration is deterministic; all randomness is the final uniform pick, which needs the whole
  list (Theta(n!) time and memory). Drawing that index digit by digit *is* Fisher-Yates, so the
  shuffle the project uses is :func:`mrs_shuffle` (Fisher-Yates via ``Generator.permutation``),
  documented as equivalent to Algorithm 3 lines 19-20. The shuffle never changes the histogram.

``mrs_enumerate`` refuses n > 9 (9! = 362,880 arrangements).
"""

from __future__ import annotations

import numpy as np

MAX_ENUMERATE = 9


def mrs_enumerate(
    n: int, parity: str = "pseudocode", include_initial: bool = False
) -> list[tuple[int, ...]]:
    """Arrangements of (0..n-1) visited by Algorithm 3 lines 1-18, in visiting order.

    ``parity="pseudocode"`` is the printed pseudocode (QuickPerm); ``"prose"`` swaps the parities
    as the paper's prose does. ``include_initial`` also records the starting order.
    """
    if parity not in ("pseudocode", "prose"):
        raise ValueError(f"mrs_enumerate: parity must be 'pseudocode' or 'prose', got {parity!r}")
    if int(n) != n or not 1 <= n <= MAX_ENUMERATE:
        raise ValueError(f"mrs_enumerate: n must be an integer in [1, {MAX_ENUMERATE}], got {n}")
    a = list(range(n))
    b = list(range(n + 1))  # B[1..n] of the paper (0-based list, B[n] = n is the sentinel)
    out: list[tuple[int, ...]] = [tuple(a)] if include_initial else []
    i = 1
    while i < n:
        b[i] -= 1
        odd = i % 2 == 1
        j = (b[i] if odd else 0) if parity == "pseudocode" else (0 if odd else b[i])
        a[j], a[i] = a[i], a[j]
        out.append(tuple(a))
        i = 1
        while b[i] == 0:
            b[i] = i
            i += 1
    return out


def mrs_pick(n: int, rng: np.random.Generator, include_initial: bool = True) -> tuple[int, ...]:
    """Algorithm 3 literally: enumerate, then pick one arrangement uniformly (tiny n only)."""
    perms = mrs_enumerate(n, "pseudocode", include_initial)
    return perms[int(rng.integers(0, len(perms)))]


def mrs_shuffle(messages: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniformly random permutation of the message rows (Fisher-Yates, O(n))."""
    m = np.asarray(messages)
    return m[rng.permutation(m.shape[0])]
