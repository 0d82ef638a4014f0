"""Per-shuffler uniform fakes as an option of the trusted shuffler role (``--param fakes=F``):
the shuffler adds F uniform rows before shuffling and signs the count; the analyzer removes
them through the one shared path (``protocols.defences.fake_removal.analyze_with_fakes``,
unbiased); the ledger is the users' as accounted and ``privacy.fakes`` states the
all-others-collude blanket; ``sdp verify`` re-derives it from the shuffler's signed count."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import copy_run, keys_of, resign_transcript, sdp

from parties.runtime import codec
from parties.verify.run import verify_run
from protocols.base import simulate, trusted_shuffle
from protocols.defences.fake_messages import blanket_epsilon_with_fakes
from protocols.defences.fake_removal import add_fakes, fake_counts, fakes_statement
from protocols.rng import experiment_rng
from protocols.workloads import get_workload

USERS, FAKES = 3000, 2500  # as in conftest.grr_fakes_run


@pytest.fixture
def fakes_run(grr_fakes_run: Path) -> Path:
    """GRR with USERS users and FAKES fakes (the session's shared run)."""
    return grr_fakes_run


def test_grr_with_fakes_completes_verifies_and_states_the_fakes(fakes_run):
    res = json.loads((fakes_run / "result.json").read_text())
    # the analyzer's batch holds the users' reports and the fakes; the estimate the users' only
    assert res["messages"] == {"reports": USERS + FAKES}
    assert res["estimate"]["reports"] == USERS and res["estimate"]["fakes"] == FAKES
    priv = res["privacy"]
    (release,) = priv["releases"]
    assert release["n_received"] == USERS  # the gate counted the users' reports, not the fakes
    assert release["eps"] == priv["eps_central"] and priv["total"]["eps"] == release["eps"]
    protocol = get_workload("grr", {"users": USERS}).protocol
    assert priv["fakes"] == json.loads(json.dumps(fakes_statement(protocol, FAKES, USERS)))
    collude = priv["fakes"]["all_other_users_collude"]
    assert collude["valid"] and collude["eps"] == pytest.approx(
        math.sqrt(14 * 10 * math.log(2 / priv["delta"]) / FAKES)
    )
    report = verify_run(fakes_run, progress=False)
    assert report.ok, report.first_failure


def test_shuffler_signed_the_fake_count(fakes_run):
    entries = [
        json.loads(x) for x in (fakes_run / "transcripts" / "shuffler.jsonl").read_text().split()
    ]
    (sent,) = [e for e in entries if e["dir"] == "send" and e["ty"] == "shuffled"]
    obj = codec.loads((fakes_run / "transcripts" / "shuffler.blobs" / sent["dg"]).read_bytes())
    assert obj["fakes"] == {"reports": FAKES} and obj["users"] == USERS
    assert codec.obj_to_array(obj["batches"]["reports"]).shape == (USERS + FAKES, 1)


@pytest.mark.parametrize(
    "path, value",
    [
        (("fakes", "count"), FAKES - 500),
        (("fakes", "all_other_users_collude", "eps"), 0.5),
        (("fakes", "all_other_users_collude", "valid"), False),
    ],
)
def test_result_json_claiming_other_fakes_is_caught(fakes_run, tmp_path, path, value):
    run = copy_run(fakes_run, tmp_path)
    res = json.loads((run / "result.json").read_text())
    node = res["privacy"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    (run / "result.json").write_text(json.dumps(res))
    report = verify_run(run, progress=False)
    assert not report.ok and "result.json" in report.first_failure


def test_analyzer_signing_another_fake_statement_is_caught(fakes_run, tmp_path):
    """An analyzer re-signing its own transcript with a privacy statement claiming fewer fakes
    (and a matching result.json) disagrees with the count the shuffler signed."""
    run = copy_run(fakes_run, tmp_path)
    path = run / "transcripts" / "analyzer.jsonl"
    entries = [json.loads(x) for x in path.read_text().splitlines()]
    (pub,) = [e for e in entries if e["dir"] == "publish" and e["ty"] == "privacy"]
    blobs = run / "transcripts" / "analyzer.blobs"
    privacy = codec.loads((blobs / pub["dg"]).read_bytes())
    protocol = get_workload("grr", {"users": USERS}).protocol
    privacy["fakes"] = json.loads(json.dumps(fakes_statement(protocol, 4 * FAKES, USERS)))
    payload = codec.dumps(privacy)
    pub["dg"], pub["len"] = hashlib.sha256(payload).hexdigest(), len(payload)
    (blobs / pub["dg"]).write_bytes(payload)
    resign_transcript(run, "analyzer", entries, keys_of(fakes_run))
    res = json.loads((run / "result.json").read_text())
    res["privacy"] = codec.loads(payload)
    (run / "result.json").write_text(json.dumps(res))
    report = verify_run(run, progress=False)
    assert not report.ok
    assert "privacy.fakes differs" in report.first_failure, report.first_failure


@pytest.mark.parametrize(
    "args, words",
    [
        (("cnt_2m", "--users", "5000", "--param", "fakes=100"), "cannot remove uniform fake"),
        (("grr", "--shuffler", "mixnet", "--param", "fakes=100"), "only the trusted shuffler"),
        (("grr", "--param", "fakes=-1"), "integer >= 0"),
    ],
)
def test_fakes_refused_at_launch_with_one_line(tmp_path, args, words):
    out = tmp_path / "run"
    proc = sdp("run", *args, "--out", str(out), "--quiet")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sdp run: fakes")
    assert words in lines[0] and not (out / "result.json").exists()


def _errors(name: str, params: dict, fakes: int, reps: int, key: str) -> np.ndarray:
    w = get_workload(name, params)
    truth = np.asarray(w.truth()[key], dtype=np.float64)
    rng = experiment_rng(19, f"fakes-{name}-{fakes}")
    out = [
        np.asarray(simulate(w.protocol, w.records, rng, fakes=fakes)[key], np.float64) - truth
        for _ in range(reps)
    ]
    return np.asarray(out).reshape(reps, -1)


@pytest.mark.parametrize(
    "name, params, key",
    [
        ("grr", {"users": 2000, "domain": 10}, "frequencies"),
        ("hist_kr", {"users": 20000, "domain": 8}, "counts"),
        ("cnt_rr", {"users": 5000}, "count"),
    ],
)
def test_estimate_with_fakes_is_unbiased(name, params, key):
    """Seeded simulations through the analyzer path the parties use: the mean error with fakes
    is within a few standard errors of 0, as without; the fakes only widen the spread."""
    reps, f = 200, 2000
    plain, faked = _errors(name, params, 0, reps, key), _errors(name, params, f, reps, key)
    for err in (plain, faked):
        z = np.abs(err.mean(axis=0)) / (err.std(axis=0, ddof=1) / math.sqrt(reps))
        assert z.max() < 4.5, (name, z)
    assert faked.std(axis=0).mean() > plain.std(axis=0).mean()


def test_ignoring_the_fakes_would_be_detected_as_biased():
    """The unbiasedness test has power: the protocol's own analyzer on a batch with fakes
    (fakes not removed) is biased towards the uniform histogram far beyond the standard error."""
    w = get_workload("grr", {"users": 2000, "domain": 10})
    p, truth = w.protocol, np.asarray(w.truth()["frequencies"])
    rng = experiment_rng(19, "naive")
    specs, rows = p.batch_specs(), fake_counts(p, 2000)
    errs = np.asarray(
        [
            np.asarray(
                p.analyze(
                    trusted_shuffle(add_fakes(p.encode(w.records, rng), specs, rows, rng), rng)
                )["frequencies"]
            )
            - truth
            for _ in range(100)
        ]
    )
    z = np.abs(errs.mean(axis=0)) / (errs.std(axis=0, ddof=1) / 10)
    assert z.max() > 10


def test_fakes_statement_is_the_blanket_with_fakes():
    p = get_workload("grr", {"users": USERS}).protocol
    d = p.uniform_fake_reports()
    s = fakes_statement(p, FAKES, USERS)
    assert s["all_other_users_collude"]["eps"] == blanket_epsilon_with_fakes(
        d.eps_local, d.k, 1, FAKES, d.delta
    )
    assert s["honest_users_and_fakes"]["eps"] == blanket_epsilon_with_fakes(
        d.eps_local, d.k, USERS, FAKES, d.delta
    )
    assert s["count"] == FAKES and "unchanged" in s["ledger"]
    few = fakes_statement(p, 100, USERS)["all_other_users_collude"]
    assert few["eps"] is None and not few["valid"]
    need = math.ceil(14 * d.k * math.log(2 / d.delta))
    assert few["condition"].startswith("not valid") and f"F >= {need} fakes" in few["condition"]


def test_simulated_gate_counts_users_reports_only():
    w = get_workload("cnt_rr", {"users": 5000})
    ledger: list = []
    est = simulate(w.protocol, w.records, experiment_rng(19, "gate"), ledger=ledger, fakes=700)
    assert est["reports"] == 5000 and est["fakes"] == 700
    assert [r.n_received for r in ledger] == [5000]
