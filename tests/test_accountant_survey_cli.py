"""``sdp account --theorem`` (the survey's Theorems 1-4, 9), the robust gamma variant and basic
composition on the command line: values from protocols.accountant.survey, "not valid" with the
violated condition."""

from __future__ import annotations

import json
import math

from conftest import sdp

from protocols.accountant import survey

THEOREM4 = ("--theorem", "theorem4", "--n", "100000", "--delta", "1e-6")


def _acct(*args: str) -> dict:
    proc = sdp("account", *args, "--json", check=True)
    return json.loads(proc.stdout)


def test_theorem4_forward_and_inverse_match_the_library():
    out = _acct(*THEOREM4, "--eps-local", "4", "--k", "10")
    assert out["valid"] and out["value"] == survey.theorem4(4.0, 100_000, 1e-6, 10).value
    inv = _acct(*THEOREM4, "--eps-central", str(out["value"]), "--k", "10")
    assert math.isclose(inv["value"], 4.0, rel_tol=1e-6)


def test_outside_a_theorem_is_not_valid_with_the_condition():
    out = _acct("--theorem", "theorem1", "--n", "100", "--delta", "1e-6", "--eps-local", "1")
    assert out["valid"] is False and out["value"] is None and "n >= 1000" in out["reason"]


def test_robust_gamma_pays_for_the_missing_users():
    args = [*THEOREM4, "--eps-central", "0.5", "--k", "10"]
    full, half = _acct(*args), _acct(*args, "--gamma", "0.5")
    assert half["value"] < full["value"] and "ceil(gamma N) = 50000" in half["reason"]


def test_theorem9_and_basic_composition():
    t9 = _acct("--theorem", "theorem9", "--eps-central", "1", "--delta", "1e-7", "--mu", "1e-9")
    assert math.isclose(t9["delta"], 1e-7 + (1 + math.e) * 1e-9)
    seq = _acct("--basic", "seq", "--guarantee", "1,1e-7", "--guarantee", "0.5,1e-8")
    par = _acct("--basic", "par", "--guarantee", "1,1e-7", "--guarantee", "0.5,1e-8")
    assert (seq["eps"], par["eps"]) == (1.5, 1.0)
    assert math.isclose(seq["delta"], 1.1e-7) and par["delta"] == 1e-7
