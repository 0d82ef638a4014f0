"""Issue 37 item 2: H8 re-mounted. A lying trusted shuffler announces (and signs) the fake
count the run asks for, but its "fakes" are all the value 0, not uniform: the estimate is
biased towards 0 and the fakes' privacy blanket is absent. Nothing can catch it (the trusted
shuffler is trusted; adding fewer rows would show, since the analyzer subtracts the announced
count and the privacy gate then sees too few reports), so ``sdp verify`` must say that the fake
count is the shuffler's own unverifiable claim, on which the estimate rests.

The lie is mounted in the real shuffler process of ``sdp run``: a ``sitecustomize`` on the
party processes' path replaces ``protocols.defences.fake_removal.add_fakes`` by one that adds
no rows (before ``parties.trusted.plan`` imports it); every other party runs unmodified.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import sdp

USERS, FAKES = 3000, 2500  # as tests/test_runtime_fakes.py (the gate passes)

LIAR = """
import numpy as np
import protocols.defences.fake_removal as fr
def add_fakes(batches, specs, fakes, rng):  # the announced number of rows, none uniform
    out = dict(batches)
    for name, count in fakes.items():
        w = next(s.width for s in specs if s.name == name)
        out[name] = np.concatenate([np.asarray(out[name], np.int64), np.zeros((count, w), np.int64)])
    return out
fr.add_fakes = add_fakes
"""


@pytest.mark.slow  # one sdp run and one sdp verify (~100 s on the loaded 2-core machine)
def test_a_trusted_shuffler_lying_about_its_fakes_is_disclosed_by_verify(tmp_path):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(LIAR)
    run = tmp_path / "run"
    path = os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))
    proc = sdp(
        "run", "grr", "--users", str(USERS), "--param", f"fakes={FAKES}", "--out", str(run),
        "--quiet", env={"PYTHONPATH": path}, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = json.loads((run / "result.json").read_text())
    assert res["messages"] == {"reports": USERS + FAKES} and res["estimate"]["fakes"] == FAKES
    honest_share = 1 / 10  # grr over 10 values: uniform fakes add 1/10 of FAKES to each
    assert res["estimate"]["frequencies"][0] > honest_share + 0.3, res["estimate"]  # biased
    out = sdp("verify", str(run), "--json", timeout=300)
    report = json.loads(out.stdout)
    # undetectable by construction (the trusted shuffler is trusted); the verifier says so
    assert report["ok"], report
    warned = " ".join(report["warnings"])
    assert "its fake count" in warned and "its own unverifiable claim" in warned, warned
