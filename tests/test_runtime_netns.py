"""Separate-host operation, as a user does it: ``sdp cluster init`` writes one directory per
party, each party runs ``sdp party --dir`` in its own Linux network namespace (its own IP
address, veth pairs into a bridge) with only its own key and its own run directory; the run
directories are gathered and verified against the trust anchor. Every shuffler: trusted, the
mix-net with several client parties, MPC with a per-server MPyC TLS key. The published estimate
equals that of ``sdp run`` with the same seed. Needs root (else skipped)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, gather_hosts, sdp

pytestmark = pytest.mark.netns

LAYOUTS = {
    "trusted": ["analyzer", "shuffler", "client-1", "client-2"],
    "mixnet": ["analyzer", "mix-1", "mix-2", "mix-3", "client-1", "client-2"],
    "mpc": ["analyzer", "mpc-1", "mpc-2", "mpc-3", "client-1", "client-2"],
}
RUN = ["grr", "--users", "3000", "--domain", "8", "--epsilon", "1.0", "--seed", "11",
       "--clients", "2"]  # fmt: skip


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def namespaces(request):
    """{party: (namespace, address)} for the parties of the run being tested."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    if shutil.which("ip") is None:
        pytest.skip("iproute2 ('ip') is not installed")
    parties = LAYOUTS[request.param]
    tag = secrets.token_hex(2)
    switch = f"sdpsw{tag}"
    created: list[str] = []
    hosts: dict[str, tuple[str, str]] = {}
    try:
        _ip("netns", "add", switch)
        created.append(switch)
        _ip("-n", switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", switch, "link", "set", "br0", "up")
        for i, party in enumerate(parties):
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
    yield request.param, hosts
    for ns in created:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.mark.parametrize("namespaces", list(LAYOUTS), indirect=True)
def test_every_shuffler_across_network_namespaces(namespaces, tmp_path):
    shuffler, hosts = namespaces
    init = tmp_path / "parties"
    host_args = [a for p, (_, addr) in hosts.items() for a in ("--host", f"{p}={addr}")]
    sdp("cluster", "init", *RUN, "--shuffler", shuffler, *host_args, "--port-base", "7400",
        "--phase-timeout", "60", "--out", str(init), check=True)  # fmt: skip
    for d in (p for p in init.iterdir() if p.is_dir()):
        assert [k.stem for k in d.glob("*.key")] == [d.name], "a party holds only its own key"
        if shuffler == "mpc" and d.name.startswith("mpc-"):  # MPyC: its own TLS key only
            assert len(list((d / "mpyc" / ".config").glob("party_*.key"))) == 1
    procs = {}
    for name, (ns, _) in hosts.items():
        procs[name] = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-m", "parties.cli", "party",
             "--dir", str(init / name), "--out", str(tmp_path / "hosts" / name)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    # gather the hosts' run directories (no private key in any of them) and verify
    gathered = gather_hosts(procs, tmp_path / "hosts", tmp_path / "gathered")
    assert not [p for p in gathered.rglob("*") if p.suffix == ".key"]
    proc = sdp("verify", str(gathered), "--trust", str(init / "trust.json"), "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["ok"] and report["trust"] == "trust anchor", report
    # a party's own namespace cannot see another's address: the traffic crossed the bridge
    probe = subprocess.run(
        ["ip", "netns", "exec", hosts["analyzer"][0], "ip", "-o", "addr"],
        capture_output=True,
        text=True,
    )
    assert hosts["client-1"][1] not in probe.stdout
    # the same published estimate as sdp run with the same seed on one box
    res = json.loads((gathered / "result.json").read_text())
    local = tmp_path / "local"
    one_box = json.loads(
        sdp(
            "run",
            *RUN,
            "--shuffler",
            shuffler,
            "--out",
            str(local),
            "--quiet",
            "--json",
            check=True,
        ).stdout  # fmt: skip
    )
    assert res["estimate"] == one_box["estimate"]
    assert res["privacy"]["releases"] == one_box["privacy"]["releases"]
