"""``sdp cluster init`` validates the whole cluster file before writing anything (issue 30 item
8): unknown keys, shufflers, roles, protocols and parameters are refused in one line with "did
you mean", so a typo never silently becomes another run or surfaces only on a host later."""

from __future__ import annotations

import subprocess
import sys

import pytest

from parties.runtime.cluster import ClusterError, load_cluster

GOOD = """
[run]
protocol = "grr"
shuffler = "mixnet"
phase_timeout = 60.0

[run.params]
users = 2000
epsilon = 1.0

[[party]]
name = "analyzer"
role = "analyzer"
host = "127.0.0.1"
port = 41001

[[party]]
name = "client-1"
role = "client"
host = "127.0.0.1"
port = 41002

[[party]]
name = "mix-1"
role = "mix-server"
host = "127.0.0.1"
port = 41003

[[party]]
name = "mix-2"
role = "mix-server"
host = "127.0.0.1"
port = 41004
"""


def _init(tmp_path, text: str) -> subprocess.CompletedProcess:
    src = tmp_path / "c.toml"
    src.write_text(text)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "parties.cli",
            "cluster",
            "init",
            str(src),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_good_hand_written_cluster_is_accepted(tmp_path):
    proc = _init(tmp_path, GOOD)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "analyzer").is_dir()


@pytest.mark.parametrize(
    "old,new,words",
    [
        (
            'shuffler = "mixnet"',
            'shufler = "mixnet"',
            "unknown key 'shufler'; did you mean 'shuffler'",
        ),
        ('shuffler = "mixnet"', 'shuffler = "mixnett"', "did you mean 'mixnet'"),
        (
            'role = "mix-server"',
            'role = "mix-sever"',
            "role 'mix-sever' is not a role of a mixnet run; did you mean 'mix-server'",
        ),
        ("port = 41002", "prot = 41002", "unknown key 'prot'; did you mean 'port'"),
        ('protocol = "grr"', 'protocol = "grrr"', "protocol 'grrr' is unknown; did you mean 'grr'"),
        ("epsilon = 1.0", "epsilonn = 1.0", "unknown parameter 'epsilonn'; did you mean epsilon"),
        ("epsilon = 1.0", "epsilon = -1.0", "epsilon must be a number > 0"),
        ("[run.params]", "[run.parms]", "unknown key 'parms'; did you mean 'params'"),
    ],
)
def test_typos_are_refused_at_init_in_one_line(tmp_path, old, new, words):
    assert old in GOOD
    proc = _init(tmp_path, GOOD.replace(old, new, 1))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert words in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()  # nothing written


def test_a_party_host_loading_a_typo_refuses_too(tmp_path):
    src = tmp_path / "c.toml"
    src.write_text(GOOD.replace('shuffler = "mixnet"', 'shufler = "mixnet"'))
    with pytest.raises(ClusterError, match="did you mean 'shuffler'"):
        load_cluster(src, session_optional=True)
