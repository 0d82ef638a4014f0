"""Bounded fan-out and ports (issue 43 items 2 and 5): more client parties than records, or more
parties than one host takes, are refused in one line before any process starts; two parties of
a cluster on one host:port are refused at ``sdp cluster init`` and when a party loads its
cluster file."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, sdp

from parties.runtime.cluster import ClusterError, load_cluster

DATA = ROOT / "tests" / "data"


def test_more_client_parties_than_records_is_refused_in_one_line(tmp_path):
    lines = gzip.decompress((DATA / "survey.csv.gz").read_bytes()).splitlines(keepends=True)
    small = tmp_path / "small.csv.gz"
    small.write_bytes(gzip.compress(b"".join(lines[:206])))  # header + 205 records
    out = tmp_path / "run"
    res = sdp(
        "run", "psrr-ss", "--data", str(small), "--schema", str(DATA / "survey.toml"),
        "--shuffler", "trusted", "--clients", "500", "--out", str(out), "--quiet",
    )  # fmt: skip
    assert res.returncode == 2
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert "--clients 500 is more than the 205 users" in err, err
    assert not out.exists()  # refused before anything was written or started


def test_more_parties_than_one_host_takes_is_refused(tmp_path):
    res = sdp("run", "grr", "--shuffler", "trusted", "--users", "100000", "--clients", "500",
              "--out", str(tmp_path / "run"), "--quiet")  # fmt: skip
    assert res.returncode == 2
    assert re.search(r"would start 502 party processes on this host \(at most 64", res.stderr)


def test_two_parties_on_one_host_port_are_refused(tmp_path):
    out = tmp_path / "parties"
    sdp("cluster", "init", "grr", "--shuffler", "trusted", "--users", "100",
        "--out", str(out), "--port-base", "30700", check=True)  # fmt: skip
    text = (out / "analyzer" / "cluster.toml").read_text()
    clash = re.sub(r"port = 30701\b", "port = 30700", text)
    assert clash != text
    bad = tmp_path / "clash.toml"
    bad.write_text(clash)
    with pytest.raises(ClusterError, match="both use 127.0.0.1:30700"):
        load_cluster(bad)
    res = sdp("cluster", "init", str(bad), "--out", str(tmp_path / "p2"))
    assert res.returncode != 0 and "both use 127.0.0.1:30700" in res.stderr, res.stderr


def test_a_party_refuses_a_cluster_file_with_a_port_clash(tmp_path):
    out = tmp_path / "parties"
    sdp("cluster", "init", "grr", "--shuffler", "trusted", "--users", "100",
        "--out", str(out), "--port-base", "30800", check=True)  # fmt: skip
    f: Path = out / "client-1" / "cluster.toml"
    f.write_text(re.sub(r"port = 30801\b", "port = 30800", f.read_text()))
    res = sdp("party", "--dir", str(out / "client-1"), "--out", str(tmp_path / "run"))
    assert res.returncode == 2 and "both use 127.0.0.1:30800" in res.stderr, res.stderr
    assert not (tmp_path / "run").exists()


def test_a_run_that_cannot_fit_is_refused_before_any_party_starts(tmp_path):
    """PUCM at its smallest n under an 8 GB address-space limit (issue 43 item 2)."""
    out = tmp_path / "run"
    res = subprocess.run(
        ["prlimit", "--as=8000000000", sys.executable, "-m", "parties.cli", "run", "pucm",
         "--shuffler", "trusted", "--users", "50000", "--out", str(out), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert "refused before any party started: 50000 users send" in res.stderr, res.stderr
    assert "8 GB: the address-space limit" in res.stderr
    assert not out.exists()


def test_the_memory_estimate_grows_with_the_share_of_n():
    from parties.runtime.memory import BASE_BYTES, BYTES_PER_MESSAGE, predict

    class P:
        def messages_per_user(self) -> float:
            return 3.0

    small, large = predict(P(), 1000, 2, 200_000), predict(P(), 100_000, 2, 200_000)
    assert small["collector"] == BASE_BYTES + 1000 * 3 * BYTES_PER_MESSAGE
    assert large["client"] - BASE_BYTES == 100 * (small["client"] - BASE_BYTES)
