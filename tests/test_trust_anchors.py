"""Trust anchors (issue 31, item 5): what ``sdp verify --trust`` can and cannot rule out.

* One-process anchor (``sdp run``, ``sdp cluster init`` without ``--certs``): one process made
  every key, so whoever ran it can re-sign a consistent forgery of several parties'
  transcripts. Mounted here: the operator fabricates the shuffled input and the estimate it
  implies, re-signing the shuffler's and the analyzer's transcripts. No check can catch that,
  so ``sdp verify`` says which anchor it has and what it cannot rule out (on 27f5c45 it
  reported the forged run as verified against "the trust anchor", without a word).
* Per-host anchor: each host makes its own key (``sdp keygen``; the key never leaves it), the
  operator pins the certificates the hosts sent (``sdp cluster init --certs``) and holds no
  key; run end to end, verified with ``--trust``, reported as per-host keys.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import (
    ROOT,
    copy_run,
    gather_hosts,
    keys_of,
    publish_estimate_of,
    put_blob,
    resign_transcript,
    sdp,
    transcript,
)

from parties.runtime import codec
from parties.verify.run import verify_run

NAMES = ["analyzer", "shuffler", "client-1", "client-2"]


def _forge_shuffle(run: Path, keys: Path) -> dict:
    """Whoever holds every key: every user 'reported' 0; shuffler and analyzer agree."""
    shuffler, analyzer = transcript(run, "shuffler"), transcript(run, "analyzer")
    send = next(e for e in shuffler if e["dir"] == "send" and e["ty"] == "shuffled")
    recv = next(e for e in analyzer if e["dir"] == "recv" and e["ty"] == "shuffled")
    obj = codec.loads((run / "transcripts" / "analyzer.blobs" / recv["dg"]).read_bytes())
    fake = {}
    for name, arr in obj["batches"].items():
        fake[name] = np.zeros_like(codec.obj_to_array(arr))
        obj["batches"][name] = codec.array_to_obj(fake[name])
    payload = codec.dumps(obj)
    put_blob(run, "shuffler", send, payload)
    put_blob(run, "analyzer", recv, payload)
    estimate, pub = publish_estimate_of(run, analyzer, fake)
    resign_transcript(run, "shuffler", shuffler, keys)
    resign_transcript(run, "analyzer", analyzer, keys)
    res = json.loads((run / "result.json").read_text())
    res["estimate"] = estimate
    res["estimate_sha256"] = pub["dg"]  # a forger with every key keeps result.json consistent
    (run / "result.json").write_text(json.dumps(res))
    return estimate


def test_forgery_under_a_one_process_anchor_is_flagged(trusted_grr_run, tmp_path):
    run = copy_run(trusted_grr_run, tmp_path)
    trust = trusted_grr_run.with_name(trusted_grr_run.name + ".trust.json")
    assert json.loads(trust.read_text())["anchor"] == "one-process"
    estimate = _forge_shuffle(run, keys_of(trusted_grr_run))
    assert estimate["frequencies"][0] > 0.9  # fabricated: every user reported value 0
    report = verify_run(run, progress=False, trust=json.loads(trust.read_text()))
    # the forgery is consistent and signed with the parties' own keys: nothing catches it...
    assert report.ok, report.first_failure
    # ...and the verifier says so: the anchor is one process's, which could forge all of this
    assert report.anchor == "one-process"
    assert any("whoever ran cluster init could forge every transcript" in w
               for w in report.warnings)  # fmt: skip
    proc = sdp("verify", str(run), "--trust", str(trust), "--json")
    out = json.loads(proc.stdout)
    assert out["anchor"] == "one-process"
    assert "ONE-PROCESS ANCHOR" in out["checks"][0]["detail"]
    text = sdp("verify", str(run), "--trust", str(trust)).stdout
    assert "one-process anchor" in " ".join(text.split())


def _free_port_base(n: int) -> int:
    """A base port with ``n`` consecutive free ports (other runs share this machine)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n > 65000:
            continue
        try:
            socks = []
            for p in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    pytest.skip("no free run of ports")


def test_per_host_keys_end_to_end(tmp_path):
    hosts = tmp_path / "hosts"  # each party's own host directory
    collected = tmp_path / "collected"  # what the operator receives: certificates only
    collected.mkdir()
    printed = {}
    for name in NAMES:
        proc = sdp("keygen", name, "--dir", str(hosts / name), "--host", "127.0.0.1", check=True)
        printed[name] = re.search(r"([0-9a-f]{64})", proc.stdout).group(1)
        assert (hosts / name / f"{name}.key").stat().st_mode & 0o077 == 0
        shutil.copy(hosts / name / "certs" / f"{name}.crt", collected)
    # a key is made once
    again = sdp("keygen", "client-1", "--dir", str(hosts / "client-1"))
    assert again.returncode == 2 and "made once" in again.stderr
    init = tmp_path / "init"
    base = _free_port_base(len(NAMES))
    proc = sdp("cluster", "init", "grr", "--users", "2000", "--clients", "2", "--certs",
               str(collected), "--port-base", str(base), "--out", str(init), check=True)  # fmt: skip
    assert "per-host keys" in proc.stdout
    assert not list(init.rglob("*.key")), "the operator made no key"
    trust = json.loads((init / "trust.json").read_text())
    assert trust["anchor"] == "per-host" and trust["fingerprints"] == printed
    for name in NAMES:  # each host merges what the operator sent into its own directory
        shutil.copytree(init / name, hosts / name, dirs_exist_ok=True)
    procs = {  # fmt: skip
        name: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "parties.cli",
                "party",
                "--dir",
                str(hosts / name),
                "--out",
                str(tmp_path / "out" / name),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in NAMES
    }
    gathered = gather_hosts(procs, tmp_path / "out", tmp_path / "gathered")
    proc = sdp("verify", str(gathered), "--trust", str(init / "trust.json"), "--json")
    rep = json.loads(proc.stdout)
    assert proc.returncode == 0 and rep["ok"], rep
    assert rep["anchor"] == "per-host"
    assert "trust anchor: per-host keys (4 parties)" in rep["checks"][0]["detail"]
    assert not any("one-process" in w for w in rep["warnings"])


def test_cluster_init_with_a_missing_certificate_is_one_line(tmp_path):
    collected = tmp_path / "collected"
    sdp("keygen", "analyzer", "--dir", str(tmp_path / "a"), check=True)
    collected.mkdir()
    shutil.copy(tmp_path / "a" / "certs" / "analyzer.crt", collected)
    proc = sdp("cluster", "init", "grr", "--certs", str(collected), "--out", str(tmp_path / "i"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "no certificate shuffler.crt" in proc.stderr
    assert not (tmp_path / "i" / "trust.json").exists()
