"""An aborted multi-round run names what it released (issue 26, finding 3).

A round's result goes out to the clients and the shuffler before the next round: when the gate
refuses a later round, ``ABORTED.json`` and the launcher's stderr line list every release that
passed the gate before; and where the later round cannot be covered even with every user of
the earlier one, the gate refuses the earlier round already (nothing goes out)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import sdp

from parties.clients.roles import gate_round
from parties.launcher import abort_run, gate_refusal
from protocols.privacy.ledger import USERS, PrivacyRefusal, gate
from protocols.workloads import get_workload

USERS_N = 4000


def _ldpminer():
    return get_workload("ldpminer", {"shuffle": True, "users": USERS_N}).protocol


def test_gate_refuses_round0_when_round1_cannot_be_covered():
    """LDPMiner over a shuffler, 30% of the users gone: round 0 alone is re-accounted within
    max_epsilon, but round 1 (the same users at most) cannot be: refused at round 0."""
    p = _ldpminer()
    n = int(0.7 * USERS_N)
    with pytest.raises(PrivacyRefusal, match="round 1 could not be covered.*before round 0"):
        gate(p, 0, {"phase1": n, USERS: n})
    ok = gate(p, 0, {"phase1": USERS_N, USERS: USERS_N})  # everyone: both rounds covered
    assert len(ok) == 1


def _round0():
    p = _ldpminer()
    return p, gate(p, 0, {"phase1": USERS_N, USERS: USERS_N})


def test_later_refusal_lists_the_earlier_release(tmp_path):
    """Round 0 passed (and went out); round 1 is refused: the analyzer's refusal carries round
    0's ledger, and the launcher's ABORTED.json and stderr line list it."""
    p, released = _round0()
    shuffled = {"phase2": np.zeros((USERS_N // 2, 2), dtype=np.int64)}
    public = {"candidates": list(range(p.k_max))}
    with pytest.raises(PrivacyRefusal) as exc:
        gate_round(p, 1, public, shuffled, USERS_N // 2, released)
    reasons = {"analyzer": f"error: {exc.value}"}
    text, plain, ledger = gate_refusal(reasons)
    assert "ALREADY RELEASED" in text and "round 0" in text and "refused round 1" in text
    abort_run(tmp_path, plain, 1.0, "privacy gate", ledger)
    aborted = json.loads((tmp_path / "ABORTED.json").read_text())
    rel = aborted["released_before_abort"]["releases"]
    assert [r["round"] for r in rel] == [0] and rel[0]["eps"] == released[0].eps
    assert "released before" not in aborted["failed_parties"]["analyzer"]


def test_ldpminer_dropout_run_refuses_before_round0_is_released(tmp_path):
    """The issue's command: the refusal now comes at round 0, before anything went out, and
    ABORTED.json says that nothing was released."""
    out = tmp_path / "run"
    proc = sdp(
        "run", "ldpminer", "--param", "shuffle=true", "--simulate-dropout", "0.3",
        "--users", str(USERS_N), "--out", str(out), "--quiet", timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "nothing published: the privacy gate refused round 0" in proc.stderr
    assert "round 1 could not be covered" in proc.stderr
    aborted = json.loads((out / "ABORTED.json").read_text())
    assert aborted["released_before_abort"]["releases"] == []
