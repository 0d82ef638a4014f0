"""The shuffle-model protocol interface: one encoder, one analyzer, a swappable shuffler.

A protocol turns each user's record into messages, each tagged with a *batch* (one logical
shuffler per batch: SRR-MS uses one batch per attribute, most protocols a single batch). A
message is a fixed-width vector of non-negative integers, each component below the batch's
``bound``. A shuffler receives ``{batch: int64 array of shape (n_messages, width)}`` and returns
the same multiset per batch in uniformly random order. The analyzer maps shuffled batches to a
JSON-serialisable estimate. Simulations and networked runs call the same two methods.

Every release passes :func:`protocols.privacy.ledger.gate` (in :func:`simulate` always; the parties call
it on the counts they received). A client block's private ``local`` state starts as
:func:`block_state` (the global indices of its users), which grouped protocols need to assign
users to groups by a public rule (:mod:`protocols.privacy.grouping`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from protocols.privacy.ledger import USERS, PrivacyRefusal, Release, gate

Batches = dict[str, np.ndarray]


@dataclass(frozen=True)
class BatchSpec:
    """Shape of the messages of one shuffle batch."""

    name: str
    width: int  # integer components per message
    bound: int  # every component lies in [0, bound)


USER_IDS = "user_ids"  # key of a block's ``local`` state: global indices of its users
GROUPING_SEED = "grouping_seed"  # key of a block's ``local`` state: the run's public grouping seed


def block_state(first_user: int, count: int, grouping_seed: int) -> dict[str, Any]:
    """The initial private ``local`` state of a client block holding the users
    ``first_user .. first_user + count - 1`` (global indices, in the order of its records).

    ``grouping_seed`` is the run's *public* seed of the group assignment
    (:mod:`protocols.privacy.grouping`): the same for every block of the run, fixed before any data is
    read (e.g. derived from the session id), fresh per run so that the partition is random
    across runs (the estimators' variances assume a random partition)."""
    if first_user < 0 or count < 0 or grouping_seed < 0:
        raise ValueError(
            f"block_state: need first_user, count, grouping_seed >= 0, got "
            f"{first_user}, {count}, {grouping_seed}"
        )
    return {
        USER_IDS: np.arange(first_user, first_user + count, dtype=np.int64),
        GROUPING_SEED: int(grouping_seed),
    }


def user_ids(local: dict[str, Any] | None, m: int, n: int, who: str) -> np.ndarray:
    """Global indices of a block's m users: from ``local`` (:func:`block_state`), or 0..n-1
    when the block is all n users; ValueError otherwise (a grouping cannot be guessed)."""
    ids = None if local is None else local.get(USER_IDS)
    if ids is None:
        if m == n:
            return np.arange(n, dtype=np.int64)
        raise ValueError(
            f"{who}: a block of {m} of the {n} users must come with its users' global indices "
            "(local state from protocols.base.block_state) to assign them to groups"
        )
    ids = np.asarray(ids, dtype=np.int64)
    if ids.shape != (m,):
        raise ValueError(f"{who}: {ids.shape[0]} user indices for a block of {m} users")
    return ids


def grouping_seed(local: dict[str, Any] | None, rng: np.random.Generator, who: str) -> int:
    """The run's public grouping seed from ``local``; a block that is the whole population
    (no ``local`` state) draws one from ``rng`` (a single call: nothing to agree on)."""
    if local and GROUPING_SEED in local:
        return int(local[GROUPING_SEED])
    if local and USER_IDS in local:
        raise ValueError(f"{who}: the block's local state has user indices but no grouping seed")
    return int(rng.integers(0, 2**62))


class ShuffleProtocol(ABC):
    """Encoder + analyzer of a shuffle-model protocol."""

    name: str = "abstract"
    # The operator's cap on the run's total epsilon (the gate's default; None = no cap). Workloads
    # set it from the run parameter ``max_epsilon`` (default: the target epsilon).
    max_epsilon: float | None = None

    def public_grouping(self, ids: np.ndarray, seed: int) -> np.ndarray | None:
        """The group of each user (global indices ``ids``) under the run's public grouping
        seed, for a protocol that splits its users into groups (:mod:`protocols.privacy.grouping`);
        None for one that does not. A function of the indices and public parameters only."""
        return None

    def block_grouping(
        self, local: dict[str, Any] | None, m: int, n: int, rng: np.random.Generator
    ) -> np.ndarray | None:
        """:meth:`public_grouping` of a block of m of the n users: their global indices and the
        run's grouping seed from ``local`` (:func:`block_state`; errors name ``<name>.encode``)."""
        who = f"{self.name}.encode"
        return self.public_grouping(user_ids(local, m, n, who), grouping_seed(local, rng, who))

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

    def noise_warning(self) -> str | None:
        """One plain-words line when the estimate's noise, computed from public parameters
        only (n, epsilon, domain), is of the order of the signal it estimates; else None."""
        return None

    def uniform_fake_reports(self) -> Any:
        """A :class:`protocols.defences.fake_removal.UniformFakeReports` when the analyzer can
        remove uniform fake messages exactly (single-message k-RR reports; the protocol then
        implements :meth:`estimate_from_counts`), else None: the run refuses ``fakes``."""
        return None

    def estimate_from_counts(
        self, counts: np.ndarray, reports: int, invalid: int
    ) -> dict[str, Any]:
        """The estimate from a histogram of reports (float counts per category, ``reports``
        users' reports, ``invalid`` malformed rows): for :meth:`uniform_fake_reports` protocols."""
        raise NotImplementedError(f"{self.name}: no estimate from a histogram of reports")

    def releases(self, round: int, counts: dict[str, int]) -> list[Release]:
        """What round ``round`` publishes and the guarantee covering each, given the number of
        well-formed reports received per batch (see :mod:`protocols.privacy.ledger`).

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


def received_counts(
    specs_list: list[BatchSpec], batches: Batches, users: int, fakes: dict[str, int] | None = None
) -> dict[str, int]:
    """What the privacy gate counts: the users' well-formed messages per batch (announced
    uniform ``fakes`` taken out) and, under :data:`USERS`, the users whose submissions arrived."""
    counts = count_valid(specs_list, batches)
    if fakes:
        from protocols.defences.fake_removal import without_fakes

        counts = without_fakes(counts, fakes)
    counts[USERS] = int(users)
    return counts


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
    dropout: float = 0.0,
    fakes: int = 0,
) -> dict[str, Any]:
    """Run every round in process: encode, shuffle (trusted by default), gate, analyze.

    The same ``encode_round``/``analyze_round`` calls as the networked run, with the users split
    into ``populations`` contiguous client populations like the launcher does, each starting
    from :func:`block_state`. Every round's shuffled batches pass :func:`protocols.privacy.ledger.gate`
    before the analyzer sees them (``PrivacyRefusal`` otherwise: nothing is analyzed); the
    releases are appended to ``ledger`` when given. ``max_epsilon`` overrides the protocol's cap.

    ``dropout``: that fraction of the users (floor, a uniformly random subset drawn from ``rng``)
    never reach the shuffler, in any round: a demonstration of a protocol refusing or
    re-accounting. A seeded ``rng`` makes this a reproducible *simulation*: its noise is known to
    whoever knows the seed.

    ``fakes``: F uniform fake rows added to the batch before the shuffle, as the trusted
    shuffler's ``fakes`` option does; the gate counts the users' reports only and the analyzer
    removes the fakes (:mod:`protocols.defences.fake_removal`, the networked analyzer's path).
    """
    from protocols.defences.fake_removal import analyze_with_fakes, fake_counts

    fake_rows = fake_counts(protocol, fakes)
    n = records.shape[0]
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"simulate: dropout must lie in [0, 1), got {dropout}")
    present = np.ones(n, dtype=bool)
    if dropout > 0:
        present[rng.choice(n, size=int(dropout * n), replace=False)] = False
    slices = [slice(i * n // populations, (i + 1) * n // populations) for i in range(populations)]
    ids = [np.arange(sl.start, sl.stop)[present[sl]] for sl in slices]
    seed = int(rng.integers(0, 2**62))  # the run's public grouping seed
    locals_: list[dict[str, Any]] = [{USER_IDS: i, GROUPING_SEED: seed} for i in ids]
    released: list[Release] = []
    public: dict[str, Any] = {}
    result: dict[str, Any] = {}
    for r in range(protocol.n_rounds):
        parts = [
            protocol.encode_round(r, records[i], rng, public, loc) for i, loc in zip(ids, locals_)
        ]
        specs = protocol.batch_specs_round(r, public)
        widths = {s.name: s.width for s in specs}
        merged = {
            name: np.concatenate(
                [p[name] for p in parts if name in p]
                or [np.zeros((0, widths.get(name, 1)), np.int64)]
            )
            for name in {k for p in parts for k in p}
        }
        if fake_rows:
            from protocols.defences.fake_removal import add_fakes

            merged = add_fakes(merged, specs, fake_rows, rng)
        shuffled = shuffler(merged, rng)
        counts = received_counts(specs, shuffled, int(present.sum()), fake_rows)
        released.extend(gate(protocol, r, counts, max_epsilon, previous=released))
        result = analyze_with_fakes(protocol, r, shuffled, public, fake_rows)
        public = result
    if ledger is not None:
        ledger.extend(released)
    return result


def gate_shuffled(
    protocol: ShuffleProtocol,
    shuffled: Batches,
    users: int,
    round: int = 0,
    public: dict[str, Any] | None = None,
    previous: list[Release] | None = None,
) -> list[Release]:
    """Gate one round's shuffled batches (``users`` = users whose submissions arrived): the
    call for code that runs encode/shuffle/analyze by hand (reproductions, benchmarks)."""
    counts = received_counts(protocol.batch_specs_round(round, public or {}), shuffled, users)
    return gate(protocol, round, counts, previous=previous or [])
