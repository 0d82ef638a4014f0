"""Multi-round protocols: the public state flows from the analyzer to the next round."""

from __future__ import annotations

import numpy as np

from protocols.base import Batches, BatchSpec, ShuffleProtocol, simulate
from protocols.privacy.ledger import Release


class TwoRoundMax(ShuffleProtocol):
    """Round 0: every user reports its value; round 1: users report value - max(round 0)."""

    name = "two-round-test"
    n_rounds = 2

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("v", 1, 1000)]

    def encode(self, records, rng):  # pragma: no cover - rounds override it
        raise AssertionError

    def analyze(self, shuffled):  # pragma: no cover
        raise AssertionError

    def encode_round(self, round, records, rng, public, local) -> Batches:
        if round == 0:
            local["n"] = len(records)
            return {"v": records.reshape(-1, 1)}
        assert local["n"] == len(records)  # private state survives between rounds
        return {"v": (public["max"] - records).reshape(-1, 1)}

    def analyze_round(self, round, shuffled, public):
        v = shuffled["v"][:, 0]
        return {"max": int(v.max())} if round == 0 else {"sum_gap": int(v.sum())}

    def releases(self, round, counts):  # a test protocol: no noise, eps 0 by fiat
        return [Release(f"round {round}", "test", 0.0, 0.0, counts["v"], counts["v"], "test")]


def test_simulate_two_rounds_with_populations():
    rec = np.arange(100)
    out = simulate(TwoRoundMax(), rec, np.random.default_rng(0), populations=3)
    assert out == {"sum_gap": int((99 - rec).sum())}
