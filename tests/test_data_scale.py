"""10^7 rows through the streaming reader with bounded memory (slow: about a minute)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "scripts" / "bench_data.py"


@pytest.mark.slow
def test_ten_million_rows_in_bounded_memory(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("bench_data", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = 10_000_000
    path = Path("/tmp") / f"sdp-bench-{rows}.csv.gz"  # shared with scripts/bench_data.py
    if not path.exists():
        bench.generate(path, rows)
    schema = tmp_path_factory.mktemp("bench") / "schema.toml"
    schema.write_text(bench.SCHEMA)

    def child(limit: int) -> dict:
        out = subprocess.run(
            [sys.executable, str(BENCH), "--child", "stream", str(path), str(schema), str(limit)],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        return json.loads(out.stdout)

    tenth, full = child(rows // 10), child(0)
    assert full["rows"] == rows
    # planted: a missing value every 10,007 rows, an out-of-domain value every 100,003 rows
    assert full["excluded"] == len(range(5, rows, 10_007)) + len(range(7, rows, 100_003))
    assert full["kept"] + full["excluded"] == rows
    # ten times the rows, about the same peak: memory does not grow with the file
    assert full["peak_rss_mb"] - tenth["peak_rss_mb"] < 64, (tenth, full)
    assert full["peak_rss_mb"] < 400, full
