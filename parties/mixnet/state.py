"""Runtime state of a mix-net run: its configuration, a server's accumulated state, the abort.

The server's phases (``parties.mixnet.dkg``, ``server`` for submissions and mixing,
``decrypt`` for threshold decryption) share one state type; ``record.public_record`` turns a
finished state into the run's public record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc.dkg import DkgResult
from mpc.mixnet.mixing import ShuffleGenerators
from mpc.mixnet.params import run_params
from mpc.mixnet.params import session_of as session_digest_of
from mpc.mixnet.schema import check_shape
from parties.mixnet.record_stream import EncodedList
from protocols.base import BatchSpec


class MixnetAbort(RuntimeError):
    """The run cannot complete under the dead-server policy; nothing is published.

    ``evidence``: signed proof of the fault that caused it (e.g. two different mix steps
    signed by one mixer), sent to the analyzer with the abort so that ``sdp verify`` can check
    whom it names."""

    def __init__(self, message: str, evidence: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.evidence = evidence


@dataclass
class MixnetConfig:
    """Parameters shared by every party of a mix-net run."""

    session_id: str
    servers: list[str]
    specs: list[BatchSpec]
    t: int = 2
    clients: str = "clients"  # the client party (a single one: in-process runs and tests)
    analyzer: str = "analyzer"
    client_parties: list[str] = field(default_factory=list)  # every client party, if several
    workers: int = 1
    patience: int = 4  # receive timeouts tolerated when waiting on a slow phase of another party
    mix_patience: int = 100  # timeouts tolerated while another server mixes
    hop_patience: int = 2  # phase timeouts of silence (no _busy) before a mixer is skipped
    combine_all: bool = True  # every server verifies t shares and decrypts; else the lowest

    def __post_init__(self) -> None:
        check_shape(len(self.servers), self.t)  # MixnetShapeError: fewer than 2 servers, t < 2

    def params(self) -> dict[str, Any]:
        """The public parameters (hashed into every challenge)."""
        return run_params(self.servers, self.t, [(s.name, s.width, s.bound) for s in self.specs])

    def spec_map(self) -> dict[str, dict[str, Any]]:
        """Batch name -> public batch parameters."""
        return {b["name"]: b for b in self.params()["batches"]}

    @property
    def client_names(self) -> list[str]:
        """The client parties whose submissions the servers collect."""
        return list(self.client_parties) or [self.clients]

    def layouts(self) -> dict[str, tuple[int, int]]:
        """Batch name -> ``(width, bound)``."""
        return {s.name: (s.width, s.bound) for s in self.specs}


def session_of(cfg: MixnetConfig, dkg_record: dict[str, Any]) -> bytes:
    """Session digest from the public DKG record."""
    return session_digest_of(cfg.session_id, cfg.params(), dkg_record)


@dataclass
class ServerState:
    """What a server knows at the end of a run (source of the public record)."""

    cfg: MixnetConfig
    me: int
    dkg: DkgResult | None = None
    sess: bytes = b""
    # the client submissions: decoded until screened, then held as their canonical encoding
    # (record_stream.EncodedList), all that the record needs of them (docs/scale.md, "Memory")
    submissions: list[dict[str, Any]] | EncodedList = field(default_factory=list)
    inputs: list[dict[str, Any]] = field(default_factory=list)  # [{client party, count}]
    users: int = 0  # users whose submissions arrived whole (mpc.mixnet.params.users_whole)
    accepted: dict[str, list[int]] = field(default_factory=dict)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    mixes: list[dict[str, Any]] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)  # signed proofs of faults
    decryption: dict[str, dict[int, Any]] = field(default_factory=dict)
    dec_set: list[int] = field(default_factory=list)  # the t servers whose shares decrypted
    plaintexts: dict[str, list[list[int] | None]] = field(default_factory=dict)
    result: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # CPU-bound work per phase (s)
    delegated: int | None = None  # with combine_all=False: the server that combined
    gens: ShuffleGenerators | None = None  # set with the session digest

    def set_session(self, sess: bytes) -> None:
        """Fix the session digest (and so the shuffle generators) after the DKG."""
        self.sess = sess
        self.gens = ShuffleGenerators(sess)

    def tick(self, name: str, t0: float) -> float:
        """Add the time since ``t0`` to phase ``name``; returns now."""
        now = time.perf_counter()
        self.timings[name] = self.timings.get(name, 0.0) + now - t0
        return now
