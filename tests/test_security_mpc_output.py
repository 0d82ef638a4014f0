"""Issue 16 item 9: the MPC shuffle's published output is tied to the servers' output shares,
and the malicious-client domain check of the histogram mode is sound to 2^-92 per row.

Attacks mounted on the real code paths:
* a malicious analyzer publishes a different multiset (and the estimate it gives, so the
  analyzer re-run agrees), re-signing its own transcript and result.json: ``sdp verify`` must
  fail and name the mismatch between the publication and the servers' signed output shares;
* the servers' output shares must be in their signed transcripts (public entries);
* a malicious client submits out-of-domain values as raw field elements (bypassing the honest
  encoder's sentinel) in histogram mode, and the unlucky event of the old single check (the
  random mask r = 0, probability 2^-31) is forced: the row must still be caught.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import tomllib
from _mpc_helpers import honest_client, raw_client, run_in_process, transcript_entries
from conftest import keys_of, put_blob, resign_transcript, sdp

from mpc import histogram_arith, shamir
from parties.mpc_shuffle import wire
from parties.runtime import codec
from protocols.base import BatchSpec

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def mpc_run(mpc_grr_run):
    """An honest GRR run over the MPC shuffler (the session's shared run, 600 users)."""
    return mpc_grr_run


def test_servers_output_shares_are_in_their_signed_transcripts(mpc_run):
    for s in ("mpc-1", "mpc-2", "mpc-3"):
        outs = [
            e
            for e in transcript_entries(mpc_run, s)
            if e["dir"] == "send" and e["ty"] == "mpc-output"
        ]
        assert outs and all(e["pub"] for e in outs), f"{s}: output shares are not public"


def test_analyzer_publishing_another_multiset_fails_verification(mpc_run, tmp_path):
    import shutil

    from parties.runtime.codec import to_jsonable
    from protocols.workloads import get_workload

    run = tmp_path / "forged"
    shutil.copytree(mpc_run, run)
    entries = transcript_entries(run, "analyzer")
    pub = next(e for e in entries if e["dir"] == "publish" and e["ty"] == "shuffled")
    obj = codec.loads((run / "transcripts" / "analyzer.blobs" / pub["dg"]).read_bytes())
    batches = {k: codec.obj_to_array(v) for k, v in obj["batches"].items()}
    # the forgery: every report of value 0 becomes a 1 (same size, still in the domain)
    (name,) = batches
    fake = batches[name].copy()
    assert (fake == 0).any()
    fake[fake == 0] = 1
    obj["batches"][name] = codec.array_to_obj(fake)
    put_blob(run, "analyzer", pub, codec.dumps(obj))
    # ... and the estimate the analyzer's own algorithm gives on the fake multiset
    cluster = tomllib.loads((run / "cluster.toml").read_text())
    proto = get_workload("grr", dict(cluster["run"]["params"])).protocol
    estimate = to_jsonable(proto.analyze_round(0, {name: fake}, {}))
    est = next(e for e in entries if e["dir"] == "publish" and e["ty"] == "estimate")
    put_blob(run, "analyzer", est, codec.dumps(estimate))
    resign_transcript(run, "analyzer", entries, keys_of(mpc_run))
    res = json.loads((run / "result.json").read_text())
    res["estimate"], res["estimate_sha256"] = estimate, est["dg"]
    (run / "result.json").write_text(json.dumps(res))

    out = sdp("verify", str(run), timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text
    # the forgery is self-consistent: only the tie to the servers' shares catches it
    assert re.search(r"recompute estimate\s*│\s*pass", text), text
    assert re.search(r"MPC output vs servers' shares\s*│\s*FAIL", text, re.I), text
    assert "NOT the multiset the servers output" in text, text


def test_honest_run_verifies(mpc_run):
    out = sdp("verify", str(mpc_run), timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"MPC output vs servers' shares\s*│\s*pass", out.stdout), out.stdout


# ------------------------------------------------------------------ malicious client, histogram


def _cfg() -> wire.MPCShufflerConfig:
    return wire.MPCShufflerConfig(
        servers=("s0", "s1", "s2"),
        analyzer="an",
        clients=("good", "evil"),
        mode="histogram",
        timeout=20.0,
    )


SPECS = [BatchSpec("x", 2, 4)]


EVIL_ROWS = np.array([[1, 2], [7, 0], [3, 3]], dtype=np.int64)  # row 1 is out of {0..3}


async def _histogram_run(monkeypatch, zero_first_mask: bool):
    cfg = _cfg()
    n_good = 5
    good = {"x": np.array([[0, 1], [2, 3], [1, 1], [0, 0], [3, 2]], dtype=np.int64)}
    if zero_first_mask:
        # force the old check's failure event: the servers' random masks of the first
        # repetition are all zero (probability 2^-31 per row with one repetition)
        orig = shamir.random_field_elements

        def masks(shape):
            out = orig(shape)
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            if len(shape) == 2 and shape == (n_good + 3, 2):
                out[...] = 0  # the old code's single mask (one check per row)
            elif len(shape) >= 3 and shape[-2:] == (n_good + 3, 2):
                out[0] = 0  # the first repetition (or a sharing's only coefficient, t = 1)
            return out

        monkeypatch.setattr(shamir, "random_field_elements", masks)
    # a malicious client: raw field elements outside the domain (no sentinel)
    clients = {"good": honest_client(cfg, SPECS, good), "evil": raw_client(cfg, "x", EVIL_ROWS)}
    return (await run_in_process(cfg, SPECS, clients, timeout=20))[2]


@pytest.mark.parametrize("zero_first_mask", [False, True])
async def test_malicious_clients_out_of_domain_row_is_caught(monkeypatch, zero_first_mask):
    out = await _histogram_run(monkeypatch, zero_first_mask)
    assert out.invalid["x"] == 1
    # counts over the 7 in-domain rows only (the bad row does not leak into them)
    good_rows = np.array([[0, 1], [2, 3], [1, 1], [0, 0], [3, 2], [1, 2], [3, 3]])
    want = np.stack([np.bincount(good_rows[:, c], minlength=4) for c in range(2)])
    np.testing.assert_array_equal(out.batches["x"], want)


def test_domain_check_soundness_bound_is_what_the_docs_state():
    bits = histogram_arith.domain_check_soundness_bits()
    assert histogram_arith.DOMAIN_CHECK_REPETITIONS == 3
    assert bits >= 92.9  # a bad row passes with probability (2^31 - 1)^-3 < 2^-92
    doc = (ROOT / "docs" / "security-mpc-txpub.md").read_text()
    stated = re.search(r"passes the domain check with probability\D*2\^-(\d+)", doc)
    assert stated, "docs/security-mpc-txpub.md must state the domain check's soundness bound"
    assert bits >= int(stated.group(1))
    assert "2^-92" in (histogram_arith.__doc__ or "")
