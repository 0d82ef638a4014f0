"""Attacks on the runtime and the verifier (security issue, items 2, 8 and 10), mounted against
the real code path: each must now be refused or caught by ``sdp verify``.

* Item 2: a malicious analyzer behind a trusted shuffler re-signs its own transcript with
  fabricated received data and a matching fake estimate, and declares the shuffler failed in the
  unsigned ``result.json``. Failure is now derived from signed evidence only.
* Item 8: no private key in the run directory; party certificates are not CA certificates;
  ``sdp verify --trust`` catches certificates replaced (with every transcript re-signed) by
  whoever holds the run directory, and says when it had to trust the run directory's own.
* Item 10: a seeded run is marked as a simulation without privacy in ``result.json``, in the
  signed privacy statement and by ``sdp verify``; unseeded client randomness is CSPRNG-seeded.
"""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
from conftest import (
    copy_run,
    keys_of,
    publish_estimate_of,
    put_blob,
    resign_transcript,
    sdp,
    sdp_run_to,
    transcript,
)
from cryptography import x509

from parties.runtime import codec
from parties.runtime.cluster import Cluster, PartySpec
from parties.verify.run import load_trust, verify_run


@pytest.fixture
def trusted_run(trusted_grr_run: Path) -> Path:
    """GRR over the trusted shuffler, 4,000 users, domain 8 (the session's shared run)."""
    return trusted_grr_run


def _forge_analyzer(run: Path, keys: Path, detach: bool = True) -> dict:
    """The analyzer's forgery: fabricated shuffled input, the estimate it implies, re-signed.

    With ``detach`` the fabricated input gets a message number the shuffler never used and the
    analyzer closes its transcript as "aborted", so that the shuffler's real message is one
    an unfinished party never logged: on the old verifier (which took the set of failed parties
    from result.json) every mismatch became a warning and the forged run verified."""
    entries = transcript(run, "analyzer")
    recv = next(e for e in entries if e["dir"] == "recv" and e["ty"] == "shuffled")
    blob = run / "transcripts" / "analyzer.blobs" / recv["dg"]
    obj = codec.loads(blob.read_bytes())
    fake = {}
    for name, arr in obj["batches"].items():
        a = codec.obj_to_array(arr)
        fake[name] = np.zeros_like(a)  # every user "reported" value 0
        obj["batches"][name] = codec.array_to_obj(fake[name])
    put_blob(run, "analyzer", recv, codec.dumps(obj))
    if detach:
        recv["msg"] = 10**9
        next(e for e in entries if e["dir"] == "close")["status"] = "aborted"
    estimate, _ = publish_estimate_of(run, entries, fake)
    resign_transcript(run, "analyzer", entries, keys)
    res = json.loads((run / "result.json").read_text())
    res["estimate"] = estimate
    res["faults"] = {"shuffler": "died after delivering"}  # unsigned claim
    (run / "result.json").write_text(json.dumps(res))
    return estimate


def test_trusted_run_verifies_with_its_trust_anchor(trusted_run):
    trust = trusted_run.with_name(trusted_run.name + ".trust.json")
    proc = sdp("verify", str(trusted_run), "--trust", str(trust), "--json")
    rep = json.loads(proc.stdout)
    assert proc.returncode == 0 and rep["ok"] and rep["trust"] == "trust anchor", rep


@pytest.mark.parametrize("detach", [False, True], ids=["same-message", "detached"])
def test_item2_fabricated_input_with_declared_failure_is_caught(trusted_run, tmp_path, detach):
    run = copy_run(trusted_run, tmp_path)
    _forge_analyzer(run, keys_of(trusted_run), detach)
    rep = verify_run(run, progress=False)
    assert not rep.ok
    if detach:  # the analyzer published without closing cleanly; the shuffler did close
        assert rep.first_failure.startswith(("cross-party", "party status", "publication"))
        assert "analyzer" in rep.first_failure, rep.first_failure
    else:
        assert rep.first_failure.startswith("cross-party consistency"), rep.first_failure


def test_item2_deleting_the_senders_transcript_does_not_help(trusted_run, tmp_path):
    run = copy_run(trusted_run, tmp_path)
    _forge_analyzer(run, keys_of(trusted_run))
    (run / "transcripts" / "shuffler.jsonl").unlink()
    rep = verify_run(run, progress=False)
    assert not rep.ok and "shuffler" in rep.first_failure, rep.first_failure


def test_item2_publisher_that_did_not_close_cleanly_fails(trusted_run, tmp_path):
    run = copy_run(trusted_run, tmp_path)
    entries = transcript(run, "analyzer")
    close = next(i for i, e in enumerate(entries) if e["dir"] == "close")
    entries = entries[:close]  # re-signed without its close: it "crashed" but published
    entries.append(dict(entries[-1], dir="checkpoint"))
    entries[-1].pop("ty", None)
    entries[-1]["i"] = len(entries) - 1
    resign_transcript(
        run, "analyzer", [dict(e, i=i) for i, e in enumerate(entries)], keys_of(trusted_run)
    )
    rep = verify_run(run, progress=False)
    assert not rep.ok and "analyzer" in rep.first_failure, rep.first_failure


def test_item8_no_private_key_in_the_run_directory(trusted_run):
    assert not [p for p in trusted_run.rglob("*") if p.suffix == ".key"]
    assert not (trusted_run / "keys").exists()
    for crt in (trusted_run / "certs").glob("*.crt"):
        cert = x509.load_pem_x509_certificate(crt.read_bytes())
        assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False


def test_item8_kept_keys_are_private_and_one_per_party_directory(trusted_run):
    keys = keys_of(trusted_run)
    for d in keys.iterdir():
        if not d.is_dir():
            continue
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
        own = list(d.glob("*.key"))
        assert [k.stem for k in own] == [d.name], "a party directory holds only its own key"
        assert stat.S_IMODE(own[0].stat().st_mode) == 0o600


def test_item8_sdp_run_leaves_no_key_anywhere_by_default(tmp_path):
    # a temporary directory of its own, so that other runs on the machine do not interfere
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "r"
    sdp(
        "run", "grr", "--users", "500", "--out", str(out), "--quiet", "--no-verify",
        check=True, env={"TMPDIR": str(tmp)},
    )  # fmt: skip
    assert not list(tmp.rglob("*.key")) and not list(tmp.glob("sdp-keys-*"))
    assert not list(out.rglob("*.key"))


def test_item8_replaced_certificates_are_caught_only_with_a_trust_anchor(trusted_run, tmp_path):
    """Whoever holds the run directory replaces every certificate with its own and re-signs
    every transcript: the run's own certificates then agree, the trust anchor does not."""
    from parties.runtime.keys import make_party_key

    run = copy_run(trusted_run, tmp_path)
    forged = tmp_path / "forged-keys"
    for crt in (run / "certs").glob("*.crt"):
        name = crt.stem
        (forged / name).mkdir(parents=True)
        crt.write_bytes(make_party_key(name, "127.0.0.1", forged / name))
        (forged / name / "certs").mkdir()
        shutil.copy(crt, forged / name / "certs" / crt.name)
    for crt in (run / "certs").glob("*.crt"):
        resign_transcript(run, crt.stem, transcript(run, crt.stem), forged)
    own = verify_run(run, progress=False)
    assert own.ok and own.trust.startswith("run directory")
    assert any("taken from the run directory" in w for w in own.warnings)
    anchored = verify_run(
        run, progress=False, trust=load_trust(trusted_run.with_name("run.trust.json"))
    )
    assert not anchored.ok and "fingerprint" in anchored.first_failure


def test_item8_edited_cluster_file_is_caught(trusted_run, tmp_path):
    run = copy_run(trusted_run, tmp_path)
    text = (run / "cluster.toml").read_text().replace("domain = 8", "domain = 9")
    (run / "cluster.toml").write_text(text)
    rep = verify_run(run, progress=False)
    assert not rep.ok and "cluster.toml was changed" in rep.first_failure


def test_item10_seeded_run_is_marked_as_a_simulation(tmp_path):
    out = tmp_path / "seeded"
    proc = sdp_run_to(out, "grr", "--users", "500", "--seed", "3", "--json")
    res = json.loads(proc.stdout)
    assert res["privacy"]["simulation"] is True and "WITHOUT PRIVACY" in res["privacy"]["warning"]
    rep = json.loads(sdp("verify", str(out), "--json").stdout)
    priv = next(c for c in rep["checks"] if c["name"] == "privacy")
    assert "SIMULATION WITHOUT PRIVACY" in priv["detail"]
    # the marking is signed: removing it from result.json is caught
    res["privacy"].pop("warning")
    (out / "result.json").write_text(json.dumps(res))
    assert not verify_run(out, progress=False).ok


def test_item10_unseeded_client_randomness_is_csprng_seeded(monkeypatch):
    from parties.clients import roles

    c = Cluster("00" * 16, "grr", "trusted", [PartySpec("client-1", "client", "h", 1)])
    draws = [roles.client_rng(c, 0).integers(0, 2**62, 4).tolist() for _ in range(2)]
    assert draws[0] != draws[1]
    import protocols.rng as prng

    calls = []
    real = prng.secrets.token_bytes
    monkeypatch.setattr(prng.secrets, "token_bytes", lambda k: calls.append(k) or real(k))
    roles.client_rng(c, 0)
    assert calls == [32]  # 256 bits from the OS CSPRNG (protocols.rng.secure_rng)
    seeded = Cluster("00" * 16, "grr", "trusted", [], params={"seed": 5})
    assert (
        roles.client_rng(seeded, 0).integers(0, 2**62, 4).tolist()
        == roles.client_rng(seeded, 0).integers(0, 2**62, 4).tolist()
    )
