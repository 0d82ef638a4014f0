"""Shared state of a mix-net run: configuration, a server's accumulated state, the abort error.

Split from ``mpc.mixnet_protocol`` so the server's phases (``mixnet_protocol`` for DKG,
submissions and mixing, ``mixnet_decrypt`` for threshold decryption) share one state type.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc.dkg import DkgResult
from mpc.elgamal import message_layout
from mpc.mixnet_schema import dkg_digest, session_digest, shuffle_generators
from protocols.base import BatchSpec


class MixnetAbort(RuntimeError):
    """The run cannot complete under the dead-server policy; nothing is published."""


@dataclass
class MixnetConfig:
    """Parameters shared by every party of a mix-net run."""

    session_id: str
    servers: list[str]
    specs: list[BatchSpec]
    t: int = 2
    clients: str = "clients"
    analyzer: str = "analyzer"
    workers: int = 1
    verify_mixes: bool = True
    patience: int = 4  # receive timeouts tolerated when waiting on a slow phase of another party
    mix_patience: int = 100  # timeouts tolerated while another server mixes
    combine_all: bool = True  # every server verifies t shares and decrypts; else the lowest

    def params(self) -> dict[str, Any]:
        """The public parameters (hashed into every challenge)."""
        return {
            "k": len(self.servers),
            "t": self.t,
            "servers": list(self.servers),
            "batches": [
                {
                    "name": s.name,
                    "width": s.width,
                    "bound": s.bound,
                    "components": message_layout(s.width, s.bound)[1],
                }
                for s in self.specs
            ],
        }

    def spec_map(self) -> dict[str, dict[str, Any]]:
        """Batch name -> public batch parameters."""
        return {b["name"]: b for b in self.params()["batches"]}


def session_of(cfg: MixnetConfig, dkg_record: dict[str, Any]) -> bytes:
    """Session digest from the public DKG record."""
    comms = {i: dkg_record["commitments"][i] for i in dkg_record["qual"]}
    return session_digest(cfg.session_id, cfg.params(), dkg_record["pk"], dkg_digest(comms))


@dataclass
class ServerState:
    """What a server knows at the end of a run (source of the public record)."""

    cfg: MixnetConfig
    me: int
    dkg: DkgResult | None = None
    sess: bytes = b""
    submissions: list[dict[str, Any]] = field(default_factory=list)
    accepted: dict[str, list[int]] = field(default_factory=dict)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    mixes: list[dict[str, Any]] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    decryption: dict[str, dict[int, Any]] = field(default_factory=dict)
    dec_set: list[int] = field(default_factory=list)  # the t servers whose shares decrypted
    plaintexts: dict[str, list[list[int] | None]] = field(default_factory=dict)
    result: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # CPU-bound work per phase (s)
    delegated: int | None = None  # with combine_all=False: the server that combined
    _gens: dict[tuple[str, int], tuple[bytes, list[bytes]]] = field(default_factory=dict)

    def generators(self, batch: str, n: int) -> tuple[bytes, list[bytes]]:
        """Shuffle generators of a batch, derived once per run (every step uses the same)."""
        key = (batch, n)
        if key not in self._gens:
            self._gens[key] = shuffle_generators(self.sess, batch, n)
        return self._gens[key]

    def tick(self, name: str, t0: float) -> float:
        """Add the time since ``t0`` to phase ``name``; returns now."""
        now = time.perf_counter()
        self.timings[name] = self.timings.get(name, 0.0) + now - t0
        return now
