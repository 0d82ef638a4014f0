"""The verifier cannot be fooled by incarnations, crashed transcripts or duplicate keys, and a
finished run survives its parties' commands being run again (issue 31, items 1, 2, 3 and 7).

Each attack is mounted against the real code path: a finished run's transcripts re-signed with
the attacking party's own key (``conftest.resign_transcript``), and, for the full attack of
item 1, a GFIM run whose analyzer process is modified to send the clients a different round
state from the one it logs. Each verified on 27f5c45 and fails now.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, copy_run, keys_of, resign_transcript, sdp, transcript

from parties.verify.run import load_trust, verify_run


@pytest.fixture(scope="module")
def trusted_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("inc") / "run"
    sdp(
        "run", "grr", "--users", "600", "--domain", "4", "--clients", "2", "--out", str(out),
        "--keep-keys", str(keys_of(out)), "--quiet", check=True,
    )  # fmt: skip
    return out


def _trust(run: Path) -> dict:
    return load_trust(run.with_name(run.name + ".trust.json"))


def _claim_incarnation(run: Path, party: str, keys: Path, inc: int, peer_inc: int | None) -> None:
    """``party`` re-signs its transcript claiming incarnation ``inc``, with (``peer_inc``) a
    ``rejoin`` entry giving every peer it talked to that incarnation."""
    entries = transcript(run, party)
    entries[0]["inc"] = inc
    peers = sorted({e["peer"] for e in entries if e["dir"] in ("send", "recv")})
    if peer_inc is not None:
        entries[1:1] = [{**entries[0], "dir": "rejoin", "peer": p, "inc": peer_inc} for p in peers]
        for e in entries[1 : 1 + len(peers)]:
            for k in ("session", "cluster"):
                e.pop(k, None)
    for i, e in enumerate(entries):
        e["i"] = i
    resign_transcript(run, party, entries, keys)


def _forge_crashed(run: Path, party: str, keys: Path, signer: str | None = None) -> Path:
    """A crashed incarnation 0 of ``party``: its open entry and a checkpoint, chained and
    signed (with ``signer``'s key, default the party's own), renamed ``PARTY.crashed-0``."""
    entries = transcript(run, party)[:1]
    entries[0].pop("inc", None)
    entries.append({"i": 1, "t": entries[0]["t"], "party": party, "dir": "checkpoint"})
    tmp = run / "transcripts" / f"{party}.jsonl"
    keep = tmp.read_bytes()
    if signer is None:
        resign_transcript(run, party, entries, keys)
    else:  # chained under this party's name, signed with another party's key
        from parties.runtime.keys import load_private_key
        from parties.runtime.signing import Signer
        from parties.runtime.transcript import CHECKPOINT_DOMAIN, entry_hash

        sign = Signer(load_private_key(keys / signer, signer)).sign
        prev = entries[0]["prev"]
        for e in entries:
            e["prev"] = prev
            e["hash"] = prev = entry_hash(e)
            if e["dir"] == "checkpoint":
                e["sig"] = sign(CHECKPOINT_DOMAIN + bytes.fromhex(e["hash"])).hex()
        tmp.write_text("".join(json.dumps(e) + "\n" for e in entries))
    path = run / "transcripts" / f"{party}.crashed-0.jsonl"
    tmp.rename(path)
    tmp.write_bytes(keep)
    return path


# -- item 1: self-declared incarnations -------------------------------------------------------
@pytest.mark.parametrize(
    "peer_inc", [-1, None, 5], ids=["peers-at-minus-1", "no-rejoin", "peers-at-5"]
)
def test_item1_an_incarnation_without_crashed_transcripts_fails(trusted_run, tmp_path, peer_inc):
    run = copy_run(trusted_run, tmp_path)
    _claim_incarnation(run, "analyzer", keys_of(trusted_run), 1, peer_inc)
    rep = verify_run(run, progress=False, trust=_trust(trusted_run))
    assert not rep.ok
    assert "analyzer entry 0: incarnation 1 is not backed" in rep.first_failure, rep.first_failure


@pytest.mark.parametrize("peer_inc", [-1, 1, 0])
def test_item1_rejoin_entries_must_name_incarnations_the_peer_proves(
    trusted_run, tmp_path, peer_inc
):
    """The analyzer backs its own incarnation 1 with a crashed transcript signed with its own
    key; its claims about its peers' incarnations are checked against their transcripts."""
    run = copy_run(trusted_run, tmp_path)
    keys = keys_of(trusted_run)
    _forge_crashed(run, "analyzer", keys)
    _claim_incarnation(run, "analyzer", keys, 1, peer_inc)
    rep = verify_run(run, progress=False, trust=_trust(trusted_run))
    assert not rep.ok
    assert "cross-party consistency" in rep.first_failure, rep.first_failure
    assert "rejoin of" in rep.first_failure and "own transcripts prove" in rep.first_failure


def test_item1_a_forged_crash_of_the_analyzer_leaves_its_messages_unmatched(trusted_run, tmp_path):
    """With a crashed incarnation of its own and no claim about its peers, what the shuffler
    sent to (and the clients received from) the analyzer's incarnation 0 is no longer in the
    analyzer's signed transcript: the shuffler closed cleanly, so this fails."""
    run = copy_run(trusted_run, tmp_path)
    keys = keys_of(trusted_run)
    _forge_crashed(run, "analyzer", keys)
    _claim_incarnation(run, "analyzer", keys, 1, None)
    rep = verify_run(run, progress=False, trust=_trust(trusted_run))
    assert not rep.ok and rep.first_failure.startswith("cross-party consistency"), rep.first_failure


# -- items 1 and 3: crashed transcripts are verified ----------------------------------------
def _rejoined(run: Path, party: str, keys: Path) -> None:
    """Re-sign the run as if ``party`` had crashed at start-up and rejoined as incarnation 1:
    its transcript opens with ``inc: 1`` and each peer it talked to logs its rejoin first.
    The verifier of 27f5c45 accepts this whatever ``PARTY.crashed-0.jsonl`` holds."""
    _claim_incarnation(run, party, keys, 1, None)
    peers = sorted({e["peer"] for e in transcript(run, party) if e["dir"] in ("send", "recv")})
    for peer in peers:
        entries = transcript(run, peer)
        entries.insert(1, {"t": entries[0]["t"], "party": peer, "dir": "rejoin", "peer": party})
        entries[1]["inc"] = 1
        for i, e in enumerate(entries):
            e["i"] = i
        resign_transcript(run, peer, entries, keys)


def _crashed_from(run: Path, party: str, keys: Path, entries: list[dict]) -> None:
    live = run / "transcripts" / f"{party}.jsonl"
    keep = live.read_bytes()
    for i, e in enumerate(entries):
        e["i"] = i
    resign_transcript(run, party, entries, keys)
    live.rename(run / "transcripts" / f"{party}.crashed-0.jsonl")
    live.write_bytes(keep)


@pytest.mark.parametrize(
    "kind", ["valid", "garbage", "other-key", "other-session", "spoke", "closed", "misnumbered"]
)
def test_item3_a_forged_crashed_transcript_fails(trusted_run, tmp_path, kind):
    """client-1 rejoined as incarnation 1 (every transcript re-signed with its own party's key,
    as an honest rejoin would have written them): its crashed transcript is verified, and
    only a real one passes."""
    run = copy_run(trusted_run, tmp_path)
    keys = keys_of(trusted_run)
    _rejoined(run, "client-1", keys)
    opening = transcript(run, "client-1")[0]
    opening.pop("inc")
    end = {"t": opening["t"], "party": "client-1", "dir": "checkpoint"}
    if kind == "garbage":
        (run / "transcripts" / "client-1.crashed-0.jsonl").write_bytes(b'{"i": 0}\nnot json\n')
    elif kind == "other-key":
        _forge_crashed(run, "client-1", keys, signer="client-2")
    elif kind == "other-session":
        _crashed_from(run, "client-1", keys, [dict(opening, session="00" * 16), end])
    elif kind == "spoke":  # it sent its submission, then "crashed"
        sent = [e for e in transcript(run, "client-1") if e["dir"] in ("speak", "send")]
        _crashed_from(run, "client-1", keys, [opening, *sent, end])
    elif kind == "closed":
        close = {"t": opening["t"], "party": "client-1", "dir": "close", "status": "aborted"}
        _crashed_from(run, "client-1", keys, [opening, close, end])
    else:
        _crashed_from(run, "client-1", keys, [opening, end])
        if kind == "misnumbered":
            (run / "transcripts" / "client-1.crashed-0.jsonl").rename(
                run / "transcripts" / "client-1.crashed-1.jsonl"
            )
    rep = verify_run(run, progress=False, trust=_trust(trusted_run))
    if kind == "valid":
        assert rep.ok, rep.first_failure
        said = [w for w in rep.warnings if "client-1 was restarted 1 time(s)" in w]
        assert said and "client-1.crashed-0.jsonl (incarnation 0): 2 signed entries" in said[0]
        return
    assert not rep.ok
    want = {
        "garbage": "client-1.crashed-0 entry 0 (line 1): missing fields",
        "other-key": "client-1.crashed-0 entry 1 (line 2): invalid signature",
        "other-session": "client-1.crashed-0 entry 0 (line 1): first entry must open session",
        "spoke": "incarnation 0 sent 'submit' to shuffler and yet client-1 was restarted",
        "closed": "a closed transcript is not a crash",
        "misnumbered": "not incarnations 0..0",
    }[kind]
    assert want in rep.first_failure, rep.first_failure


# -- item 2: duplicate keys ---------------------------------------------------------------
def test_item2_an_entry_with_a_duplicate_key_fails(trusted_run, tmp_path):
    """A line naming ``ty`` twice: json.loads keeps the last (hashed and signed) value, so the
    chain still verifies with a reader that takes the last; another reader would see the
    first. No re-signing is needed, which is why such a line must be refused outright."""
    run = copy_run(trusted_run, tmp_path)
    path = run / "transcripts" / "analyzer.jsonl"
    lines = path.read_text().splitlines()
    i = next(k for k, x in enumerate(lines) if '"dir":"recv"' in x)
    lines[i] = lines[i].replace("{", '{"ty":"estimate",', 1)
    path.write_text("\n".join(lines) + "\n")
    rep = verify_run(run, progress=False, trust=_trust(trusted_run))
    assert not rep.ok
    assert f"analyzer entry {i} (line {i + 1}): duplicate key 'ty'" in rep.first_failure


# -- item 7: a finished run's parties do not start again ------------------------------------
def _snapshot(run: Path) -> dict[str, tuple[int, int, str]]:
    return {
        str(p.relative_to(run)): (
            p.stat().st_size,
            p.stat().st_mtime_ns,
            hashlib.sha256(p.read_bytes()).hexdigest(),
        )
        for p in sorted(run.rglob("*"))
        if p.is_file()
    }


def test_item7_rerunning_any_party_after_a_finished_run_changes_nothing(trusted_run):
    keys = keys_of(trusted_run)
    before = _snapshot(trusted_run)
    for d in sorted(p for p in keys.iterdir() if p.is_dir()):
        proc = subprocess.run(
            [sys.executable, "-m", "parties.cli", "party", "--dir", str(d), "--out", str(trusted_run)],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert proc.returncode != 0, (d.name, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "already took part" in lines[0], proc.stderr
        assert _snapshot(trusted_run) == before, d.name
    assert not list((trusted_run / "transcripts").glob("*.crashed-*"))
    rep = verify_run(trusted_run, progress=False, trust=_trust(trusted_run))
    assert rep.ok, rep.first_failure


# -- item 1, the full attack: a modified analyzer on a two-round GFIM run ---------------------
ANALYZER = r"""
import hashlib, sys
import numpy as np
from parties.runtime import codec
from parties.runtime.transcript import TranscriptWriter
from parties.runtime.transport import Node

send, log = Node.send, TranscriptWriter.append_message

def forged(payload):
    # the clients get candidates the analyzer never logs: the rarest items of round 0
    obj = codec.loads(bytes(payload))
    n = len(obj["candidates"])
    obj["candidates"] = [int(i) for i in np.argsort(obj["f1"])[:n]]
    return codec.dumps(obj)

async def lying_send(self, peer, ty, payload, *, public=False):
    if ty != "state" or not peer.startswith("client"):
        return await send(self, peer, ty, payload, public=public)
    self.transcript.logged = bytes(payload)
    try:
        return await send(self, peer, ty, forged(payload), public=public)
    finally:
        self.transcript.logged = None

def lying_log(self, d, peer, ph, rd, ty, msg, n, dg, pub, public_payload=None, **kw):
    real = getattr(self, "logged", None)
    if d == "send" and real is not None:
        n, dg, public_payload = len(real), hashlib.sha256(real).hexdigest(), real
    return log(self, d, peer, ph, rd, ty, msg, n, dg, pub, public_payload, **kw)

Node.send, TranscriptWriter.append_message = lying_send, lying_log
from parties.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _lying_gfim_run(tmp: Path, shuffler: str) -> tuple[Path, Path]:
    out, run = tmp / "parties", tmp / "run"
    sdp(
        "cluster", "init", "gfim", "--shuffler", shuffler, "--users", "600", "--param", "k=3",
        "--clients", "2", "--out", str(out), "--phase-timeout", "120",
        "--port-base", str(22000 + (os.getpid() * 7 + len(shuffler)) % 20000), check=True,
    )  # fmt: skip
    procs = []
    for d in sorted(p for p in out.iterdir() if p.is_dir()):
        pre = ["-c", ANALYZER] if d.name == "analyzer" else ["-m", "parties.cli"]
        cmd = [sys.executable, *pre, "party", "--dir", str(d), "--out", str(run)]
        procs.append(subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True))
    for p in procs:
        assert p.wait(timeout=400) == 0, p.stderr.read()[-2000:]
    return run, out / "trust.json"


def _states_disagree(run: Path, shuffler: str) -> None:
    import tomllib

    from parties.verify.mixnet import check_mixnet_run
    from parties.verify.shuffle import check_mpc_run
    from parties.verify.transcripts import Report, check_transcript, public_key

    cluster = tomllib.loads((run / "cluster.toml").read_text())
    session = bytes.fromhex(cluster["run"]["session"])
    ts = {}
    for p in cluster["party"]:
        key = public_key(run / "certs" / f"{p['name']}.crt", p["name"])
        ts[p["name"]], err = check_transcript(run, p["name"], session, key)
        assert err is None, err
    report = Report()
    (check_mpc_run if shuffler == "mpc" else check_mixnet_run)(run, cluster, ts, report)
    state = [c for c in report.checks if c.name == "recompute round state"]
    assert state and not state[0].ok and "2 different states" in state[0].detail, report.checks


@pytest.mark.parametrize("shuffler", ["mpc", pytest.param("mixnet", marks=pytest.mark.slow)])
def test_item1_lying_analyzer_with_forged_incarnations_is_rejected(tmp_path, shuffler):
    """The attack of the review: the analyzer sends the clients a different round state from
    the one it logs (so the two-round estimate rests on candidates nobody checked), then
    re-signs its transcript claiming incarnation 1 and every peer at incarnation -1, so that
    on 27f5c45 every cross-party mismatch was a warning and ``sdp verify --trust`` passed."""
    run, trust = _lying_gfim_run(tmp_path, shuffler)
    got = {
        e["dg"]
        for c in ("client-1", "client-2")
        for e in transcript(run, c)
        if e["dir"] == "recv" and e["ty"] == "state"
    }
    logged = {
        e["dg"] for e in transcript(run, "analyzer") if e["dir"] == "send" and e["ty"] == "state"
    }
    assert got and logged and not got & logged  # the attack was mounted
    keys = run.parent / "parties"
    # the protocol check on its own (consistency aside) reads the state the clients signed
    _states_disagree(run, shuffler)
    plain = json.loads(sdp("verify", str(run), "--trust", str(trust), "--json").stdout)
    assert not plain["ok"] and "dg differ" in plain["first_failure"], plain["first_failure"]
    forged = run.with_name("forged")
    shutil.copytree(run, forged)
    _claim_incarnation(forged, "analyzer", keys, 1, -1)
    v = sdp("verify", str(forged), "--trust", str(trust), "--json")
    rep = json.loads(v.stdout)
    assert v.returncode == 1 and not rep["ok"]
    assert "incarnation 1 is not backed" in rep["first_failure"], rep["first_failure"]
    # backed by a crashed transcript it signs itself, with or without claims on its peers
    for peer_inc in (-1, None):
        again = run.with_name(f"forged{peer_inc}")
        shutil.copytree(run, again)
        _forge_crashed(again, "analyzer", keys)
        _claim_incarnation(again, "analyzer", keys, 1, peer_inc)
        rep = json.loads(sdp("verify", str(again), "--trust", str(trust), "--json").stdout)
        assert not rep["ok"] and rep["first_failure"].startswith("cross-party"), rep
