"""The verifiable mix-net through the launcher: real processes, DKG, mixing, threshold
decryption, the public record tied to the wire, and the dead-server policy."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import check_names, keys_of, resign_transcript, result_of, sdp_run_to, verify_json

from parties.launcher import evaluation_path
from parties.runtime import codec
from parties.verify.run import verify_run


@pytest.fixture(scope="module")
def mixnet_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("mix") / "run"
    args = ("--shuffler", "mixnet", "--mix-servers", "3", "--threshold", "2", "--seed", "1")
    sdp_run_to(out, "grr", *args, "--users", "400", keys=True)
    return out


def test_mixnet_run_verifies_every_proof(mixnet_run):
    res = result_of(mixnet_run)
    assert res["verified"] and res["messages"]["reports"] == 400
    names = check_names(verify_json(mixnet_run))
    assert "mix-net record matches the wire" in names
    assert any(n.startswith("mix-net: mixes") for n in names)
    assert any(n.startswith("mix-net: decryption") for n in names)
    assert "recompute estimate" in names


def _forge_record(run, mutate, keys):
    """Rewrite the publisher's record and re-sign its whole transcript with its own key."""
    _forge_round_record(run, 0, mutate, keys)


def _swap_outputs(rec):
    out = rec["mixes"][-1]["batches"]["reports"]["output"]
    for comp in ("a", "b"):
        col = out[comp][0]
        out[comp][0] = col[32:64] + col[:32] + col[64:]


def _change_share(rec):
    batch = rec["decryption"]["reports"]
    j = next(iter(batch))
    d = batch[j]["d"][0]
    batch[j]["d"][0] = d[32:64] + d[:32] + d[64:]


def _drop_plaintext(rec):
    rec["plaintexts"]["reports"][0] = None


@pytest.mark.parametrize(
    "mutate,step",
    [
        (_swap_outputs, "mix-net record matches the wire: mix step"),
        # the publisher's own shares never travel: its DLEQ proof catches the change
        (_change_share, "mix-net: decryption reports: server 1: decryption-share proof"),
        (
            _drop_plaintext,
            "mix-net record matches the wire: batch 'reports': the analyzer's plaintexts",
        ),
    ],
    ids=["swap-two-outputs", "decryption-share", "plaintext"],
)
def test_forged_record_is_caught_and_named(mixnet_run, tmp_path, mutate, step):
    run = tmp_path / "run"
    shutil.copytree(mixnet_run, run)
    _forge_record(run, mutate, keys_of(mixnet_run))
    report = verify_run(run, progress=False)
    assert not report.ok
    assert report.first_failure.startswith(step), report.first_failure


def _run_killing(tmp_path, kill: str, phase_timeout: int):
    """``sdp run grr`` over the mix-net (200 users) with ``SDP_FAULT_KILL=kill``."""
    out = tmp_path / "run"
    args = ("--shuffler", "mixnet", "--users", "200", "--phase-timeout", str(phase_timeout))
    proc = sdp_run_to(out, "grr", *args, env={"SDP_FAULT_KILL": kill}, check=False)
    return out, proc


@pytest.mark.parametrize(
    "kill,dead",
    [
        # slow: test_mixnet_protocol's dead-server tests mix without a dead server in process;
        # the launcher's "tolerated" path is the combiner case's
        pytest.param("mix-3:mix.shuffle", "mix-3", marks=pytest.mark.slow),
        ("mix-1:mix.decrypt", "mix-1"),
    ],
    ids=["server-dies-mixing", "combiner-dies-decrypting"],
)
def test_one_dead_mix_server_is_tolerated(tmp_path, kill, dead):
    """A server dying while mixing is skipped; the combiner of decryption set {1, 2} dying
    when decryption starts is replaced (set {2, 3})."""
    out, proc = _run_killing(tmp_path, kill, phase_timeout=20)
    assert proc.returncode == 0, proc.stderr
    res = result_of(out)
    assert dead in res["faults"] and res["verified"]
    assert "tolerated" in proc.stderr


@pytest.mark.slow  # fast: test_mixnet_protocol's in-process twin; the launcher's abort path:
# test_mpc_launcher's killed MPC server, test_runtime_faults' killed shuffler
def test_too_many_dead_servers_abort_cleanly(tmp_path):
    out, proc = _run_killing(tmp_path, "mix-2:mix.shuffle,mix-3:mix.shuffle", phase_timeout=15)
    assert proc.returncode != 0
    assert not (out / "result.json").exists()
    aborted = json.loads((out / "ABORTED.json").read_text())
    assert {"mix-2", "mix-3"} <= set(aborted["failed_parties"])
    assert "Traceback" not in proc.stderr


def test_main_job_defaults_to_psrr_ss_on_adult_over_the_mixnet(tmp_path):
    """Plain ``sdp run`` (here on a 1,000-user subset of the bundled Adult data)."""
    out = tmp_path / "run"
    sdp_run_to(out, "--users", "1000", "--bound", "tight")
    res = result_of(out)
    assert (res["protocol"], res["shuffler"], res["params"]["dataset"]) == (
        "psrr-ss",
        "mixnet",
        "adult",
    )
    assert res["verified"] and res["privacy"]["eps_c"] == 1.0
    ev = json.loads(evaluation_path(out).read_text())["evaluation"]
    assert ev["sse_total"] < 5 * ev["expected_sse"]


def test_splitmix_sum_over_the_mixnet(tmp_path):
    out = tmp_path / "run"
    sdp_run_to(out, "splitmix-sum", "--shuffler", "mixnet", "--users", "200")
    res = result_of(out)
    assert res["verified"]
    shares = res["privacy"]["shares"]
    assert res["messages"]["shares"] == 200 * shares  # s shares per user, all through the mix


def test_multi_round_gfim_over_the_mixnet(gfim_mixnet_run, tmp_path):
    """GFIM's two rounds run one mix-net each; both records verify, a dropped round fails."""
    out = gfim_mixnet_run
    res = result_of(out)
    assert res["verified"] and res["mixnet"]["rounds"] == 2
    names = check_names(verify_json(out))
    for rnd in (0, 1):
        assert f"mix-net round {rnd} record matches the wire" in names
        assert any(n.startswith(f"mix-net round {rnd}: mixes") for n in names)
    assert "recompute estimate" in names

    # the second round's record relabelled as round 0: verification names it
    def drop_round(rec):
        rec["round"] = 0  # two records now claim round 0

    run = tmp_path / "forged"
    shutil.copytree(out, run)
    _forge_round_record(run, 1, drop_round, keys_of(out))
    rep = verify_run(run, progress=False)
    assert not rep.ok and "records per round" in rep.first_failure, rep.first_failure


def _forge_round_record(run, rnd, mutate, keys):
    """Like ``_forge_record`` for the record of round ``rnd``."""
    import hashlib

    for path in (run / "transcripts").glob("mix-*.jsonl"):
        entries = [json.loads(x) for x in path.read_text().splitlines()]
        party = path.stem
        blobs = run / "transcripts" / f"{party}.blobs"
        pubs = [e for e in entries if e["dir"] == "publish" and e["ty"] == "mixnet.record"]
        target = [
            e for e in pubs if codec.loads((blobs / e["dg"]).read_bytes()).get("round") == rnd
        ]
        if target:
            break
    rec = codec.loads((blobs / target[0]["dg"]).read_bytes())
    mutate(rec)
    data = codec.dumps(rec)
    dg = hashlib.sha256(data).hexdigest()
    (blobs / dg).write_bytes(data)
    target[0]["dg"], target[0]["len"] = dg, len(data)
    resign_transcript(run, party, entries, keys)
