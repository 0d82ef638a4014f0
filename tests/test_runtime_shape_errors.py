"""Degenerate shufflers are refused at launch: one clear line, exit code 2, no party started
(security issue, item 5: a single mix server, a threshold of 1, or switching off the servers'
verification would remove the guarantee the run states)."""

from __future__ import annotations

import pytest
from conftest import sdp


@pytest.mark.parametrize(
    "args, message",
    [
        (["--shuffler", "mixnet", "--mix-servers", "1"], "at least 2 mix servers"),
        (["--shuffler", "mixnet", "--threshold", "1"], "threshold must lie in 2..3"),
        (["--shuffler", "mixnet", "--param", "threshold=1"], "threshold must lie in 2..3"),
        (["--shuffler", "mixnet", "--param", "verify_mixes=false"], "verify_mixes"),
        (["--shuffler", "mpc", "--servers", "1"], "--servers must be >= 3"),
        (["--shuffler", "mpc", "--servers", "2"], "--servers must be >= 3"),
    ],
)
def test_degenerate_shuffler_is_refused_with_one_line(tmp_path, args, message):
    out = tmp_path / "run"
    proc = sdp("run", "grr", "--users", "200", *args, "--out", str(out), "--quiet")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr
    assert not out.exists() or not any(out.iterdir())
