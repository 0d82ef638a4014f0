"""``sdp party`` says what it does (issue 30 item 9): one line per phase and a final line by
default, nothing with ``--quiet`` (on 27f5c45 it printed nothing unless asked)."""

from __future__ import annotations

import os

from conftest import sdp, start_parties


def test_sdp_party_prints_its_phases_and_a_final_line(tmp_path):
    out = tmp_path / "parties"
    sdp(
        "cluster", "init", "grr", "--users", "2000", "--out", str(out),
        "--port-base", str(23000 + os.getpid() % 20000),
        check=True,
    )  # fmt: skip
    run = tmp_path / "run"
    procs = start_parties(out, run, extra={"client-2": ["--quiet"]})
    outs = {n: p.communicate(timeout=300) for n, p in procs.items()}
    assert all(p.returncode == 0 for p in procs.values()), outs
    assert outs["client-2"][0] == ""  # --quiet
    for name in ("analyzer", "client-1", "shuffler"):
        lines = outs[name][0].splitlines()
        assert lines[0].startswith(f"[{name}] ") and "grr run over the trusted shuffler" in lines[0]
        assert any(line.startswith(f"[{name}] phase ") for line in lines), lines
        assert "finished" in lines[-1] and "transcript" in lines[-1]
    assert "result published in" in outs["analyzer"][0].splitlines()[-1]
