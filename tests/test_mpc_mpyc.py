"""The shuffle on MPyC's real runtime: 3 server processes on loopback (TLS and a killed server)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from mpc import shamir
from parties.mpc_shuffle import mpyc_runtime
from parties.mpc_shuffle import wire as mpc_wire

ROOT = Path(__file__).resolve().parents[1]


def _free_base_port(m: int) -> int:
    for _ in range(50):
        base = 20000 + int.from_bytes(os.urandom(2), "little") % 30000
        try:
            socks = []
            for i in range(m):
                s = socket.socket()
                s.bind(("127.0.0.1", base + i))
                socks.append(s)
            for s in socks:
                s.close()
            return base
        except OSError:
            for s in socks:
                s.close()
    raise RuntimeError("no free ports")


def _launch(tmp: Path, m=3, extra=(), timeout=60.0, per_party=None):
    base = _free_base_port(m)
    procs = []
    for i in range(m):
        cmd = [
            sys.executable,
            "-m",
            "parties.mpc_shuffle.selftest",
            "selftest",
            "--pid",
            str(i),
            "--m",
            str(m),
            "--base-port",
            str(base),
            "--out",
            str(tmp / f"out{i}.json"),
            *extra,
            *(per_party(i) if per_party else ()),
        ]
        procs.append(
            subprocess.Popen(
                cmd,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
        )
    deadline = time.monotonic() + timeout
    outs = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise AssertionError("MPC server processes hung") from None
        outs.append((p.returncode, e))
    return outs


def _results(tmp: Path, m: int):
    return [json.loads((tmp / f"out{i}.json").read_text()) for i in range(m)]


def test_three_processes_open_mode(tmp_path):
    outs = _launch(tmp_path, extra=["--n", "300", "--invalid", "2"])
    assert all(rc == 0 for rc, _ in outs), outs
    res = _results(tmp_path, 3)
    assert all(r["compat"] for r in res)  # our shares load into MPyC secure field arrays
    allsh = np.array([r["share"] for r in res])
    assert shamir.consistent(allsh, 1).all()
    y = shamir.reconstruct(allsh[:2], [0, 1])
    x = np.array(res[0]["data"])
    x = np.where(x >= 4, mpc_wire.SENTINEL, x)
    assert Counter(y.tolist()) == Counter(x.tolist())
    assert not np.array_equal(y, x)


def test_three_processes_tls_histogram_mode(tmp_path):
    mpyc_runtime.write_mpyc_tls_files(str(tmp_path), 3)
    outs = _launch(
        tmp_path,
        extra=["--n", "200", "--invalid", "3", "--mode", "histogram", "--ssl-dir", str(tmp_path)],
    )
    assert all(rc == 0 for rc, _ in outs), outs
    res = _results(tmp_path, 3)
    assert all(r["invalid"] == 3 for r in res)
    counts = shamir.reconstruct(np.array([r["counts_share"] for r in res])[:2], [0, 1])
    x = np.array(res[0]["data"])
    np.testing.assert_array_equal(counts[0], np.bincount(x[x < 4], minlength=4))


def test_per_party_tls_keys_in_separate_directories(tmp_path):
    # separate hosts: each party makes its own key and self-signed (non-CA) certificate; only
    # the certificates travel; each party's directory holds its own key and the bundle only
    from cryptography import x509

    dirs = [tmp_path / f"host{i}" for i in range(3)]
    certs = [mpyc_runtime.write_mpyc_party_tls(str(d), i) for i, d in enumerate(dirs)]
    for i, d in enumerate(dirs):
        mpyc_runtime.write_mpyc_trust_bundle(str(d), certs)
        keys = sorted(p.name for p in (d / ".config").glob("*.key"))
        assert keys == [f"party_{i}.key"]
        assert (d / ".config" / f"party_{i}.key").stat().st_mode & 0o777 == 0o600
        bc = x509.load_pem_x509_certificate(certs[i]).extensions.get_extension_for_class(
            x509.BasicConstraints
        )
        assert bc.value.ca is False
    with pytest.raises(ValueError, match="MPyC party 1"):
        mpyc_runtime.write_mpyc_trust_bundle(str(tmp_path / "bad"), [certs[0], certs[2]])
    outs = _launch(
        tmp_path,
        extra=["--n", "60", "--mode", "open"],
        per_party=lambda i: ["--ssl-dir", str(dirs[i])],
    )
    assert all(rc == 0 for rc, _ in outs), outs
    res = _results(tmp_path, 3)
    allsh = np.array([r["share"] for r in res])
    x = np.array(res[0]["data"])
    y = shamir.reconstruct(allsh[:2], [0, 1])
    assert Counter(y.tolist()) == Counter(np.where(x >= 4, mpc_wire.SENTINEL, x).tolist())


def test_killed_server_aborts_cleanly_naming_it(tmp_path):
    t0 = time.monotonic()
    outs = _launch(
        tmp_path, extra=["--n", "100", "--die-after-seeds", "--timeout", "20"], timeout=45
    )
    assert outs[2][0] == 3
    for rc, err in outs[:2]:
        assert rc == 2, err
        assert "server2 (MPyC party 2)" in err and "Traceback" not in err
    assert time.monotonic() - t0 < 40


@pytest.mark.slow
def test_five_processes_threshold_two(tmp_path):
    outs = _launch(tmp_path, m=5, extra=["--n", "500", "--invalid", "1"], timeout=120)
    assert all(rc == 0 for rc, _ in outs), outs
    res = _results(tmp_path, 5)
    allsh = np.array([r["share"] for r in res])
    assert shamir.consistent(allsh, 2).all()
    y = shamir.reconstruct(allsh[:3], [0, 1, 2])
    x = np.array(res[0]["data"])
    assert Counter(y.tolist()) == Counter(np.where(x >= 4, mpc_wire.SENTINEL, x).tolist())
