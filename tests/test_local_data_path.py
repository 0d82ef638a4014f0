"""A client's records file stays in that client's own directory (issue 30 item 9): on 27f5c45
every party's public ``cluster.toml`` (and the published run directory's) named each client's
local data path."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import sdp

DATA = Path(__file__).parent / "data"


def test_cluster_init_keeps_each_path_in_its_client_directory(tmp_path):
    a, b = tmp_path / "secret-a.csv.gz", tmp_path / "secret-b.csv.gz"
    a.write_bytes((DATA / "survey.csv.gz").read_bytes())
    b.write_bytes((DATA / "survey.csv.gz").read_bytes())
    out = tmp_path / "parties"
    sdp(
        "cluster", "init", "psrr-ss", "--schema", str(DATA / "survey.toml"),
        "--client-data", f"client-1={a}:100", "--client-data", f"client-2={b}:100",
        "--out", str(out),
        check=True,
    )  # fmt: skip
    for d in out.iterdir():
        if d.is_dir():
            text = (d / "cluster.toml").read_text()
            assert "secret-a" not in text and "secret-b" not in text, d.name
            assert "users = 100" in text or d.name not in ("client-1", "client-2")
    assert "secret-a" in (out / "client-1" / "local.toml").read_text()
    assert "secret-b" in (out / "client-2" / "local.toml").read_text()
    assert not (out / "client-1" / "local.toml").read_text().count("secret-b")
    assert not (out / "analyzer" / "local.toml").exists()


def test_sdp_run_publishes_no_local_path(tmp_path):
    out = tmp_path / "run"
    sdp("run", "psrr-ss", "--data", str(DATA / "survey.csv.gz"), "--schema",
        str(DATA / "survey.toml"), "--out", str(out), "--quiet", check=True)  # fmt: skip
    result = json.loads((out / "result.json").read_text())
    assert result.get("verified") is True
    for f in out.rglob("*"):
        if f.is_file() and f.suffix in (".toml", ".json", ".jsonl"):
            assert "part.csv" not in f.read_text() and "sdp-keys" not in f.read_text(), f
