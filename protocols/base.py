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


def validate_batches(protocol: ShuffleProtocol, batches: Batches) -> dict[str, int]:
    """Check shape and domain of messages; returns the number of invalid rows per batch.

    Raises ValueError for unknown batches or wrong widths (a malformed submission).
    """
    specs = {s.name: s for s in protocol.batch_specs()}
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
