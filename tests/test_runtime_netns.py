"""Separate-host operation: each party in its own Linux network namespace (its own IP address,
veth pairs into a bridge), started with ``sdp party``; then ``sdp verify``. Needs root."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, sdp

from parties.runtime.cluster import Cluster, PartySpec, dump_cluster, new_session_id

pytestmark = pytest.mark.netns


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def namespaces():
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    if shutil.which("ip") is None:
        pytest.skip("iproute2 ('ip') is not installed")
    tag = secrets.token_hex(2)
    switch = f"sdpsw{tag}"
    created: list[str] = []
    hosts: dict[str, str] = {}
    try:
        _ip("netns", "add", switch)
        created.append(switch)
        _ip("-n", switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", switch, "link", "set", "br0", "up")
        for i, party in enumerate(["analyzer", "shuffler", "client-1"]):
            ns = f"sdp{tag}p{i}"
            _ip("netns", "add", ns)
            created.append(ns)
            a, b = f"sv{tag}{i}a", f"sv{tag}{i}b"
            _ip("link", "add", a, "type", "veth", "peer", "name", b)
            _ip("link", "set", a, "netns", ns)
            _ip("link", "set", b, "netns", switch)
            _ip("-n", switch, "link", "set", b, "master", "br0")
            _ip("-n", switch, "link", "set", b, "up")
            addr = f"10.250.{int(tag, 16) % 200}.{i + 1}"
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", a)
            _ip("-n", ns, "link", "set", a, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            hosts[party] = (ns, addr)
    except subprocess.CalledProcessError as exc:
        for ns in created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        pytest.skip(f"cannot create network namespaces here: {exc.stderr.strip()}")
    yield hosts
    for ns in created:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_parties_in_separate_network_namespaces(namespaces, tmp_path):
    parties = [
        PartySpec(name, role, addr, 7400 + i)
        for i, (name, role) in enumerate(
            [("analyzer", "analyzer"), ("shuffler", "shuffler"), ("client-1", "client")]
        )
        for addr in [namespaces[name][1]]
    ]
    cluster = Cluster(
        new_session_id(),
        "grr",
        "trusted",
        parties,
        params={"users": 3000, "domain": 8, "epsilon": 1.0},
        phase_timeout=30,
    )
    ctoml = tmp_path / "cluster.toml"
    ctoml.write_text(dump_cluster(cluster))
    sdp("cluster", "init", str(ctoml), "--out", str(tmp_path / "parties"), check=True)
    run_dir = tmp_path / "run"
    procs = {}
    for p in parties:
        ns = namespaces[p.name][0]
        procs[p.name] = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                ns,
                sys.executable,
                "-m",
                "parties.cli",
                "party",
                "--dir",
                str(tmp_path / "parties" / p.name),
                "--out",
                str(run_dir),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    outs = {n: p.communicate(timeout=120) for n, p in procs.items()}
    for n, p in procs.items():
        assert p.returncode == 0, f"{n}: {outs[n][1]}"
    # the analyzer really talked to a different address than its own
    ledger = json.loads((run_dir / "costs" / "analyzer.json").read_text())
    assert any(ph["totals"]["bytes_recv"] > 3000 * 8 for ph in ledger["phases"])
    # loopback in the analyzer's namespace cannot reach the shuffler's address space
    probe = subprocess.run(
        ["ip", "netns", "exec", namespaces["analyzer"][0], "ip", "-o", "addr"],
        capture_output=True,
        text=True,
    )
    assert namespaces["shuffler"][1] not in probe.stdout
    assert not list(run_dir.rglob("*.key")), "a private key reached the run directory"
    proc = sdp(
        "verify", str(run_dir), "--trust", str(tmp_path / "parties" / "trust.json"), "--json"
    )
    assert proc.returncode == 0, proc.stdout
