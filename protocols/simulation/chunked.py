"""Chunked, memory-bounded simulation at 10^7-10^8 users, optionally on an executor.

:func:`protocols.base.simulate` holds every user's record and message at once: at 10^8 users
that is gigabytes. A protocol whose analyzer needs only the histogram of the shuffled reports
(one report per user in one batch, randomized by k-RR: ``uniform_fake_reports()`` describes it
and ``estimate_from_counts`` estimates from the histogram, e.g. ``grr``, ``hist_kr``,
``cnt_rr``) can instead be simulated chunk by chunk: each chunk draws its users' records,
encodes them with the protocol's own ``encode_round`` and returns only its histogram; the
histograms add up. A uniform shuffle does not change a histogram, so the trusted shuffle is
implicit. Memory is then bounded by one chunk per worker (plus k counts per chunk), not by n.

Determinism: users are cut into fixed blocks of ``block_users``; block b draws its records and
its randomization from ``SeedSequence(seed, spawn_key=(0, b))``, whatever chunk it falls in. A
chunk is a whole number of blocks, so the estimate is the same for every chunk size and every
executor (none, a local process pool, a Dask cluster's ``Client.get_executor()``): any
``concurrent.futures.Executor``-like object with ``submit`` works, nothing here imports a pool.
A seeded simulation's noise is known to whoever knows the seed (``simulate``'s caveat).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from protocols.base import ShuffleProtocol, block_state
from protocols.defences.fake_removal import UniformFakeReports, report_histogram
from protocols.privacy.ledger import Release, gate

BLOCK_USERS = 1 << 16  # users per randomness block (the unit of determinism)
CHUNK_USERS = 16 * BLOCK_USERS  # users per chunk of work (about 10^6): its memory bound

# (first user, count, block rng) -> that block's records, one row or value per user
RecordSource = Callable[[int, int, np.random.Generator], np.ndarray]


class SubmitExecutor(Protocol):
    """What :func:`simulate_chunked` needs of an executor: ``concurrent.futures``' ``submit``."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any: ...


@dataclass(frozen=True)
class ZipfRecords:
    """A picklable :data:`RecordSource`: values in [0, k) from ``sdp run grr``'s Zipf law
    (:func:`protocols.grr.workload.zipf_values`), each block with its own data seed."""

    k: int
    exponent: float = 1.1

    def __call__(self, first: int, count: int, rng: np.random.Generator) -> np.ndarray:
        from protocols.grr.workload import zipf_values

        return zipf_values(count, self.k, self.exponent, int(rng.integers(0, 2**62)))


def block_rng(seed: int, block: int) -> np.random.Generator:
    """The generator of block ``block``: records and randomization of its users."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0, block)))


def histogram_reports(protocol: ShuffleProtocol) -> UniformFakeReports:
    """The protocol's single-batch k-RR report descriptor, or ValueError (one line) when its
    analyzer needs more than the histogram of the shuffled reports."""
    get = getattr(protocol, "uniform_fake_reports", None)
    desc = get() if get is not None else None
    if desc is None or protocol.n_rounds != 1:
        raise ValueError(
            f"simulate_chunked: the analyzer of {protocol.name!r} needs more than a histogram of "
            "one round's reports (only single-message k-RR protocols: grr, hist_kr, cnt_rr); "
            "use protocols.base.simulate"
        )
    return desc


def chunk_histogram(
    protocol: ShuffleProtocol,
    source: RecordSource,
    seed: int,
    n: int,
    blocks: tuple[int, int],
    block_users: int,
    grouping_seed: int,
) -> tuple[np.ndarray, int, int]:
    """(counts per category, well-formed reports, malformed rows) of blocks [b0, b1): the work
    of one chunk, run in the caller's process or on an executor's worker."""
    desc = histogram_reports(protocol)
    counts = np.zeros(desc.k, np.float64)
    reports = invalid = 0
    for b in range(*blocks):
        first = b * block_users
        count = min(block_users, n - first)
        rng = block_rng(seed, b)
        records = source(first, count, rng)
        if len(records) != count:
            raise ValueError(f"record source gave {len(records)} records for {count} users")
        local = block_state(first, count, grouping_seed)
        batches = protocol.encode_round(0, records, rng, {}, local)
        c, r, i = report_histogram(desc, batches.get(desc.batch))
        counts += c
        reports += r
        invalid += i
    return counts, reports, invalid


def simulate_chunked(
    protocol: ShuffleProtocol,
    n: int,
    source: RecordSource,
    seed: int,
    chunk_users: int = CHUNK_USERS,
    executor: SubmitExecutor | None = None,
    block_users: int = BLOCK_USERS,
    ledger: list[Release] | None = None,
    max_epsilon: float | None = None,
) -> dict[str, Any]:
    """The estimate of ``n`` users whose records ``source`` draws, chunk by chunk.

    Same result for every ``chunk_users`` (a multiple of ``block_users``) and ``executor``
    (None: in this process). The release passes :func:`protocols.privacy.ledger.gate` with the
    reports counted (``PrivacyRefusal`` otherwise); releases go to ``ledger`` when given.
    """
    desc = histogram_reports(protocol)
    if n < 1:
        raise ValueError(f"simulate_chunked: n must be >= 1, got {n}")
    if block_users < 1 or chunk_users < block_users or chunk_users % block_users:
        raise ValueError(
            f"simulate_chunked: chunk_users ({chunk_users}) must be a positive multiple of "
            f"block_users ({block_users}), so that the result does not depend on the chunking"
        )
    n_blocks = -(-n // block_users)
    per = chunk_users // block_users
    spans = [(b, min(b + per, n_blocks)) for b in range(0, n_blocks, per)]
    grouping_seed = int(
        np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,))).integers(0, 2**62)
    )
    args = (source, seed, n)
    if executor is None:
        parts = [chunk_histogram(protocol, *args, s, block_users, grouping_seed) for s in spans]
    else:
        futures = [
            executor.submit(chunk_histogram, protocol, *args, s, block_users, grouping_seed)
            for s in spans
        ]
        parts = [f.result() for f in futures]
    counts = np.sum([p[0] for p in parts], axis=0)
    reports = sum(p[1] for p in parts)
    invalid = sum(p[2] for p in parts)
    released = gate(protocol, 0, {desc.batch: reports}, max_epsilon, previous=[])
    if ledger is not None:
        ledger.extend(released)
    return {**protocol.estimate_from_counts(counts, reports, invalid), "chunks": len(spans)}
