"""The shuffle-model protocol interface: one encoder, one analyzer, a swappable shuffler.

A protocol turns each user's record into messages, each tagged with a *batch* (one logical
shuffler per batch: SRR-MS uses one batch per attribute, most protocols a single batch). A
message is a fixed-width vector of non-negative integers, each component below the batch's
``bound``. A shuffler receives ``{batch: int64 array of shape (n_messages, width)}`` and returns
the same multiset per batch in uniformly random order. The analyzer maps shuffled batches to a
JSON-serialisable estimate. Simulations and networked runs call the same two methods.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

Batches = dict[str, np.ndarray]


@dataclass(frozen=True)
class BatchSpec:
    """Shape of the messages of one shuffle batch."""

    name: str
    width: int  # integer components per message
    bound: int  # every component lies in [0, bound)


class ShuffleProtocol(ABC):
    """Encoder + analyzer of a shuffle-model protocol."""

    name: str = "abstract"

    @abstractmethod
    def batch_specs(self) -> list[BatchSpec]:
        """The batches this protocol's messages go to, with their widths and bounds."""

    @abstractmethod
    def encode(self, records: np.ndarray, rng: np.random.Generator) -> Batches:
        """Local randomizer for all given users at once (vectorized).

        ``records`` holds one row (or value) per user; returns messages per batch.
        """

    @abstractmethod
    def analyze(self, shuffled: Batches) -> dict[str, Any]:
        """Estimate from the shuffled messages (order must not matter)."""

    def privacy(self) -> dict[str, Any]:
        """Privacy statement of the run (eps, delta, local eps, bound used)."""
        return {}

    # -- multi-round protocols ------------------------------------------------------------
    # A protocol with n_rounds > 1 (e.g. GFIM: candidates from round 0, refinement in round 1)
    # overrides encode_round/analyze_round. After every round but the last, the analyzer's
    # returned dict is *public state* broadcast to every client population; ``local`` is the
    # client population's private state kept between rounds (e.g. which users are in which
    # group). Batch specs may depend on the round (``batch_specs_round``).
    n_rounds: int = 1

    def batch_specs_round(self, round: int, public: dict[str, Any]) -> list[BatchSpec]:
        """Batches of round ``round`` (default: ``batch_specs``)."""
        return self.batch_specs()

    def encode_round(
        self,
        round: int,
        records: np.ndarray,
        rng: np.random.Generator,
        public: dict[str, Any],
        local: dict[str, Any],
    ) -> Batches:
        """Messages of round ``round`` for the given users (default: ``encode``)."""
        return self.encode(records, rng)

    def analyze_round(
        self, round: int, shuffled: Batches, public: dict[str, Any]
    ) -> dict[str, Any]:
        """Public state for the next round, or the final estimate after the last round."""
        return self.analyze(shuffled)


def validate_batches(
    protocol: ShuffleProtocol | None, batches: Batches, specs_list: list[BatchSpec] | None = None
) -> dict[str, int]:
    """Check shape and domain of messages; returns the number of invalid rows per batch.

    Raises ValueError for unknown batches or wrong widths (a malformed submission).
    """
    if specs_list is None:
        if protocol is None:
            raise ValueError("validate_batches needs a protocol or a list of batch specs")
        specs_list = protocol.batch_specs()
    specs = {s.name: s for s in specs_list}
    invalid: dict[str, int] = {}
    for name, arr in batches.items():
        if name not in specs:
            raise ValueError(f"unknown batch {name!r}; expected one of {sorted(specs)}")
        spec = specs[name]
        if arr.ndim != 2 or arr.shape[1] != spec.width:
            raise ValueError(
                f"batch {name!r}: messages must have shape (n, {spec.width}), got {arr.shape}"
            )
        bad = ((arr < 0) | (arr >= spec.bound)).any(axis=1)
        invalid[name] = int(bad.sum())
    return invalid


def trusted_shuffle(batches: Batches, rng: np.random.Generator) -> Batches:
    """The in-process trusted shuffler: a uniform permutation of each batch."""
    return {name: arr[rng.permutation(arr.shape[0])] for name, arr in batches.items()}


def simulate(
    protocol: ShuffleProtocol,
    records: np.ndarray,
    rng: np.random.Generator,
    shuffler: Any = trusted_shuffle,
    populations: int = 1,
) -> dict[str, Any]:
    """Run every round in process: encode, shuffle (trusted by default), analyze.

    The same ``encode_round``/``analyze_round`` calls as the networked run, with the users split
    into ``populations`` contiguous client populations like the launcher does.
    """
    n = records.shape[0]
    slices = [slice(i * n // populations, (i + 1) * n // populations) for i in range(populations)]
    locals_: list[dict[str, Any]] = [{} for _ in slices]
    public: dict[str, Any] = {}
    result: dict[str, Any] = {}
    for r in range(protocol.n_rounds):
        parts = [
            protocol.encode_round(r, records[sl], rng, public, loc)
            for sl, loc in zip(slices, locals_)
        ]
        merged = {
            name: np.concatenate([p[name] for p in parts if name in p])
            for name in {k for p in parts for k in p}
        }
        result = protocol.analyze_round(r, shuffler(merged, rng), public)
        public = result
    return result
