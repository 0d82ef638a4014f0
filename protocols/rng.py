"""Randomness: a reproducible seeding scheme for experiments and a CSPRNG-seeded path for clients.

Experiments (reproducible). One integer *root seed* per experiment; every consumer derives its
own independent stream from a *path* of names and indices::

    rng = experiment_rng(seed, "seed002", "rep", 3, "users")

The path is turned into a numpy ``SeedSequence(seed, spawn_key=...)``: strings map to 32-bit
integers by BLAKE2b (stable across runs and machines, unlike Python's ``hash``), integers are
used as they are. Distinct paths give statistically independent streams (SeedSequence's
guarantee), the same path always gives the same stream, and adding a consumer never shifts the
streams of the others. ``spawn_rngs`` splits one stream into n children the same way.

Real clients (not reproducible). ``secure_rng()`` returns a ``PCG64DXSM`` generator seeded with
256 bits from the operating system's CSPRNG (``secrets``). The seed is unpredictable; PCG64DXSM
itself is not a cryptographic generator (its state can in principle be recovered from many
outputs), which is acceptable for a device that randomizes one report and then discards the
generator; create a fresh one per report. ``secure_randbelow`` draws directly from the OS
CSPRNG for small amounts of randomness (e.g. hash seeds that must stay secret).
"""

from __future__ import annotations

import hashlib
import secrets

import numpy as np


def _key(part: int | str) -> int:
    if isinstance(part, bool) or not isinstance(part, int | str):
        raise ValueError(f"rng path parts must be int or str, got {part!r}")
    if isinstance(part, int):
        if part < 0:
            raise ValueError(f"rng path integers must be >= 0, got {part}")
        return part
    return int.from_bytes(hashlib.blake2b(part.encode(), digest_size=4).digest(), "little")


def experiment_seed_sequence(seed: int, *path: int | str) -> np.random.SeedSequence:
    """The SeedSequence of ``path`` under the experiment's root ``seed``."""
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"experiment seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence(int(seed), spawn_key=tuple(_key(p) for p in path))


def experiment_rng(seed: int, *path: int | str) -> np.random.Generator:
    """Reproducible generator for one consumer (see module docstring)."""
    return np.random.Generator(np.random.PCG64(experiment_seed_sequence(seed, *path)))


def spawn_rngs(seed: int, n: int, *path: int | str) -> list[np.random.Generator]:
    """n independent reproducible generators: children 0..n-1 of ``path``."""
    if n < 0:
        raise ValueError(f"spawn_rngs: n must be >= 0, got {n}")
    return [experiment_rng(seed, *path, i) for i in range(n)]


def secure_rng() -> np.random.Generator:
    """Fresh generator seeded with 256 bits from the OS CSPRNG (for real clients)."""
    entropy = int.from_bytes(secrets.token_bytes(32), "little")
    return np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence(entropy)))


def secure_randbelow(bound: int, size: int = 1) -> np.ndarray:
    """``size`` integers uniform in [0, bound) straight from the OS CSPRNG."""
    if bound < 1:
        raise ValueError(f"secure_randbelow: bound must be >= 1, got {bound}")
    return np.array([secrets.randbelow(bound) for _ in range(size)], dtype=np.int64)
