"""The privacy ledger's gate and composition (protocols.privacy.ledger)."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.base import BatchSpec, ShuffleProtocol, simulate
from protocols.privacy.ledger import PrivacyRefusal, Release, compose, gate


class _Counting(ShuffleProtocol):
    """A toy protocol accounted for ``planned`` reports, that refuses to re-account."""

    name = "toy"

    def __init__(self, planned: int, eps: float = 1.0) -> None:
        self.planned = planned
        self.eps = eps

    def batch_specs(self) -> list[BatchSpec]:
        return [BatchSpec("b", 1, 2)]

    def encode(self, records, rng):
        return {"b": np.asarray(records, dtype=np.int64).reshape(-1, 1)}

    def analyze(self, shuffled):
        return {"ones": int(shuffled["b"].sum())}

    def releases(self, round, counts):
        return [Release("count of ones", "toy", self.eps, 1e-7, self.planned, counts["b"], "toy")]


def test_gate_passes_at_the_planned_count_and_refuses_below() -> None:
    p = _Counting(10)
    (r,) = gate(p, 0, {"b": 10})
    assert r.holds and r.n_received == 10
    with pytest.raises(PrivacyRefusal, match="9 reports received"):
        gate(p, 0, {"b": 9})
    with pytest.raises(PrivacyRefusal, match="max_epsilon"):
        gate(_Counting(10, eps=2.0), 0, {"b": 10}, max_epsilon=1.5)


def test_default_protocol_refuses() -> None:
    class Silent(_Counting):
        releases = ShuffleProtocol.releases

    with pytest.raises(PrivacyRefusal, match="does not describe"):
        gate(Silent(1), 0, {"b": 1})


def test_simulate_gates_each_round_and_counts_only_well_formed_rows() -> None:
    rng = np.random.default_rng(1)
    ledger: list[Release] = []
    est = simulate(_Counting(5), np.array([0, 1, 1, 0, 1]), rng, ledger=ledger)
    assert est == {"ones": 3} and len(ledger) == 1 and ledger[0].n_received == 5
    bad = np.array([0, 1, 7, 0, 1])  # one message outside [0, 2): not well formed
    with pytest.raises(PrivacyRefusal):
        simulate(_Counting(5), bad, rng, ledger=[])


def test_compose_parallel_over_groups_sequential_over_rounds() -> None:
    g = [
        Release("a", "m", 1.0, 1e-7, 5, 5, "x", group="g1"),
        Release("b", "m", 0.5, 1e-7, 5, 5, "x", group="g2"),
        Release("c", "m", 0.25, 1e-8, 5, 5, "x", round=1),
    ]
    tot = compose(g)
    assert tot["eps"] == pytest.approx(1.25) and tot["delta"] == pytest.approx(1.1e-7)


def test_release_validation() -> None:
    with pytest.raises(ValueError):
        Release("a", "m", float("nan"), 0.0, 1, 1, "x")
    with pytest.raises(ValueError):
        Release("a", "m", 1.0, 0.0, 1, 1, "x", kind="maybe")
    r = Release("a", "m", 1.0, 0.0, 3, 3, "x")
    assert Release.from_json(r.to_json()) == r
