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

from protocols.ledger import PrivacyRefusal, Release, gate

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

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """What round ``round`` publishes and the guarantee covering each, given the number of
        well-formed reports received per batch (see :mod:`protocols.ledger`).

        Return releases whose guarantee holds at ``counts`` (re-accounted at the count received
        where the protocol can), or raise ``PrivacyRefusal``. The default refuses: a protocol
        that does not describe its releases publishes nothing.
        """
        raise PrivacyRefusal(f"{self.name}: the protocol does not describe its releases")

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


def count_valid(specs_list: list[BatchSpec], batches: Batches) -> dict[str, int]:
    """Well-formed messages per batch of ``specs_list`` (0 for a batch that did not arrive);
    malformed batch names or widths raise ValueError like :func:`validate_batches`."""
    invalid = validate_batches(None, batches, specs_list)
    return {
        s.name: int(batches[s.name].shape[0]) - invalid[s.name] if s.name in batches else 0
        for s in specs_list
    }


def trusted_shuffle(batches: Batches, rng: np.random.Generator) -> Batches:
    """The in-process trusted shuffler: a uniform permutation of each batch."""
    return {name: arr[rng.permutation(arr.shape[0])] for name, arr in batches.items()}


def simulate(
    protocol: ShuffleProtocol,
    records: np.ndarray,
    rng: np.random.Generator,
    shuffler: Any = trusted_shuffle,
    populations: int = 1,
    ledger: list[Release] | None = None,
    max_epsilon: float | None = None,
) -> dict[str, Any]:
    """Run every round in process: encode, shuffle (trusted by default), analyze.

    The same ``encode_round``/``analyze_round`` calls as the networked run, with the users split
    into ``populations`` contiguous client populations like the launcher does. With ``ledger``
    (a list), every round's shuffled batches pass :func:`protocols.ledger.gate` before the
    analyzer sees them and the releases are appended to it (``PrivacyRefusal`` otherwise).
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
        shuffled = shuffler(merged, rng)
        if ledger is not None:
            counts = count_valid(protocol.batch_specs_round(r, public), shuffled)
            ledger.extend(gate(protocol, r, counts, max_epsilon))
        result = protocol.analyze_round(r, shuffled, public)
        public = result
    return result
