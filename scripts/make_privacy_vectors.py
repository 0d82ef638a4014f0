"""Known-answer vectors of docs/spec/07-privacy.md A-3 (the decomposition bound) and A-8 (the
FMT21 clone pair), written to tests/vectors/spec/privacy.json: the Python accountant's rigorous
bracket [lower, upper] of delta(eps) per mechanism, and for n <= 8 the exact value by brute force
over every count of the blanket GPARV's atoms (resp. of the clones; checked here against the
bracket before anything is written); for A-8 also the accountant's forward and inverse maps
(eps_central of fmt21 at (eps_local, n, delta), and the calibrated eps_local at (eps_c, n,
delta)), which A-4 and A-5 must accept.

    python scripts/make_privacy_vectors.py [OUT]
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

from protocols.accountant.decomposition import corner_parameters, decomposition_delta
from protocols.accountant.fmt21 import clone_pair, fmt21_epsilon, fmt21_max_local_epsilon
from protocols.accountant.variation_ratio import pair_delta

OUT = Path(__file__).resolve().parent.parent / "tests" / "vectors" / "spec" / "privacy.json"
CASES = [
    # (mechanism, k, eps_local, n, eps)
    ("grr", 10, 1.722412109375, 40, 0.9999077011504018),
    ("grr", 10, 1.722412109375, 40, 0.5),
    ("grr", 3, 3.0, 20, 2.79),
    ("grr", 2, 2.0, 1000, 0.3),
    ("grr", 41, 2.69, 45222, 0.08),
    ("hadamard", None, 2.0, 2000, 0.2),
    ("generic", None, 4.0, 100000, 0.118),
    ("oue", None, 2.0, 500, 0.4),
    ("sue", None, 2.0, 500, 0.5),
    ("grr", 4, 2.0, 6, 0.7),
    ("hadamard", None, 1.5, 7, 0.4),
    ("generic", None, 2.0, 8, 0.5),
    ("oue", None, 1.0, 5, 0.2),
]

# (eps_local, n, eps) for delta(eps), and (eps_local or eps_c, n, delta) for the maps
FMT21_CASES = [(4.0, 100000, 0.172), (2.0, 2000, 0.45), (6.9, 50000, 1.0), (1.5, 6, 1.2),
               (3.0, 8, 2.5), (1.0, 7, 0.3)]  # fmt: skip
FMT21_MAPS = [(4.0, 100000, 1e-6), (1.0, 50000, 2e-7), (0.5, 2000, 5e-6), (2.0, 40, 1e-6)]


def brute_force_clones(eps: float, eps_local: float, n: int) -> float:
    """Hockey-stick divergence of the clone pair by enumerating every (C, A, target bit)."""
    e0, big = math.exp(eps_local), math.exp(eps)
    a0, a1, rate = e0 / (e0 + 1), 1 / (e0 + 1), 1 / e0
    total = 0.0
    for c in range(n):
        pc = math.comb(n - 1, c) * rate**c * (1 - rate) ** (n - 1 - c)
        pa = [math.comb(c, x) / 2**c for x in range(c + 1)] + [0.0]  # pa[-1] = Pr[A = -1] = 0
        for a in range(c + 2):  # the first coordinate of the view (the second is c + 1 - a)
            p = a0 * pa[a - 1] + a1 * pa[a] if a <= c else a0 * pa[c]
            q = a1 * pa[a - 1] + a0 * pa[a] if a <= c else a1 * pa[c]
            total += pc * max(0.0, p - big * q)
    return total


def fmt21_vectors() -> list[dict]:
    out: list[dict] = []
    for eps_l, n, eps in FMT21_CASES:
        low, up = pair_delta(eps, clone_pair(eps_l), n, tail=1e-18, max_points=10**7)
        v = {"eps_local": eps_l, "n": n, "eps": eps, "delta_lower": low, "delta_upper": up}
        if n <= 8:
            exact = brute_force_clones(eps, eps_l, n)
            if not low * (1 - 1e-9) - 1e-15 <= exact <= up * (1 + 1e-9) + 1e-15:
                raise SystemExit(f"brute force {exact} outside the bracket [{low}, {up}]: {v}")
            v["delta_exact"] = exact
        out.append(v)
    for e, n, delta in FMT21_MAPS:
        out.append(
            {"n": n, "delta": delta, "eps_local": e, "eps_central": fmt21_epsilon(e, n, delta)}
        )
        out.append({"n": n, "delta": delta, "eps_central": e,
                    "max_eps_local": fmt21_max_local_epsilon(e, n, delta)})  # fmt: skip
    return out


def brute_force(eps: float, n: int, u: float, w10: float, w11: float, w00: float) -> float:
    """(1/n) E[(G_1 + .. + G_n)_+] by enumerating every count of the five atoms (small n)."""
    a = math.exp(eps)
    atoms = [(u - a, w10), (1 - a * u, w10), (u * (1 - a), w11), (1 - a, w00)]
    atoms.append((0.0, 1.0 - 2 * w10 - w11 - w00))
    total = 0.0
    for c in itertools.product(range(n + 1), repeat=4):
        rest = n - sum(c)
        if rest < 0:
            continue
        counts = (*c, rest)
        coef = math.factorial(n)
        for x in counts:
            coef //= math.factorial(x)
        p = float(coef)
        for (_, w), x in zip(atoms, counts):
            p *= w**x if x else 1.0
        s = sum(v * x for (v, _), x in zip(atoms, counts))
        total += p * max(s, 0.0)
    return total / n


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else OUT
    vectors = []
    for mech, k, eps_l, n, eps in CASES:
        u, w10, w11, w00 = corner_parameters(eps_l, mech, k=k)
        low, up = decomposition_delta(eps, eps_l, n, mech, k=k, tail=1e-18)
        v = {"mechanism": mech, "k": k, "eps_local": eps_l, "n": n, "eps": eps,
             "corners": {"u": u, "w10": w10, "w11": w11, "w00": w00},
             "delta_lower": low, "delta_upper": up}  # fmt: skip
        if n <= 8:
            exact = brute_force(eps, n, u, w10, w11, w00)
            if not low * (1 - 1e-9) - 1e-15 <= exact <= up * (1 + 1e-9) + 1e-15:
                raise SystemExit(f"brute force {exact} outside the bracket [{low}, {up}]: {v}")
            v["delta_exact"] = exact
        vectors.append(v)
    doc = {
        "spec": "docs/spec/07-privacy.md A-3",
        "about": "delta(eps) of the blanket decomposition bound: the Python accountant's bracket "
        "(decomposition_delta, tail 1e-18) and, for n <= 8, the exact value by brute force",
        "vectors": vectors,
        "fmt21": fmt21_vectors(),
        "fmt21_about": "A-8: delta(eps) of the FMT21 clone pair (pair_delta, tail 1e-18, no "
        "bucketing) with the brute force for n <= 8; and the forward (eps_central, None: no "
        "amplification) and inverse (max_eps_local) maps of protocols.accountant.fmt21",
    }
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(vectors)} vectors -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
