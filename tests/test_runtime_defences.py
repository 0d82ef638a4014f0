"""The survey's shuffler-side crowd threshold (section 1.2), as an option of the trusted shuffler
role: the batch is released only when its noisy size clears the threshold fixed for
``min_batch``; the noisy test is a release of its own in the ledger (eps_t, with beta charged to
delta), recomputed by ``sdp verify``; a withheld batch publishes nothing."""

from __future__ import annotations

import json

from conftest import sdp

from parties.verify.run import verify_run


def test_threshold_release_is_in_the_ledger_and_verifies(tmp_path):
    out = tmp_path / "run"
    proc = sdp(
        "run", "grr", "--users", "5000", "--param", "min_batch=4000", "--min-users", "4000",
        "--param", "threshold_epsilon=0.1", "--max-epsilon", "1.2", "--out", str(out),
        "--quiet", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    priv = json.loads(proc.stdout)["privacy"]
    first, protocol = priv["releases"]
    assert "noisy batch size" in first["what"] and first["eps"] == 0.1 and first["delta"] == 1e-9
    assert protocol["n_accounted"] == 4000 and protocol["eps"] <= 1.0
    assert priv["total"]["eps"] == first["eps"] + protocol["eps"]
    assert verify_run(out, progress=False).ok


def test_small_batch_is_withheld_and_nothing_published(tmp_path):
    out = tmp_path / "run"
    proc = sdp(
        "run", "grr", "--users", "5000", "--simulate-dropout", "0.5", "--param",
        "min_batch=4000", "--min-users", "4000", "--max-epsilon", "5", "--out", str(out),
        "--quiet",
    )  # fmt: skip
    assert proc.returncode != 0 and not (out / "result.json").exists()
    lines = [x for x in proc.stderr.splitlines() if x.startswith("sdp run:")]
    assert len(lines) == 1 and "withheld the batch" in lines[0]


def test_min_batch_is_an_option_of_the_trusted_shuffler_only(tmp_path):
    out = tmp_path / "run"
    proc = sdp("run", "grr", "--shuffler", "mixnet", "--param", "min_batch=10", "--out", str(out))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "only the trusted shuffler" in lines[0]
