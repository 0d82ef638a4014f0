"""``sdp reproduce seed000``: report structure on a small configuration; the quick run is slow."""

from __future__ import annotations

import json

import pytest

from parties.reproduce.seed000 import reproduce
from parties.reproduce.seed000 import runs as seed000


def test_bits_per_user_table_4():
    adult = (16, 7, 20, 16, 16, 7, 14, 6, 5, 2, 20, 20, 20, 41, 2)
    assert [
        round(seed000.bits_per_user(m, adult)[0], 2) for m in ("srr-ms", "arr-ss", "psrr-ss")
    ] == [3.40, 7.40, 10.00]
    kos = (2,) * 8
    assert [seed000.bits_per_user(m, kos)[0] for m in ("srr-ms", "arr-ss", "psrr-ss")] == [
        1.0,
        4.0,
        4.0,
    ]
    with pytest.raises(ValueError):
        seed000.bits_per_user("x", kos)


def test_small_run_writes_report(tmp_path):
    rc = reproduce.main(
        ["--out", str(tmp_path), "--reps", "2", "--datasets", "adult", "--eps", "0.4,0.5,1.0"]
    )
    assert rc == 0
    md = (tmp_path / "report.md").read_text()
    assert "All values match the spec to 3 decimals" in md
    assert (
        "Public parameters derived from the data, as in the paper, not private" in md
        and "fnlwgt" in md
    )
    assert "At eps_c = 0.5 the tight bound lowers PSRR-SS's SSE by" in md
    assert (tmp_path / "sse_adult_paper.png").stat().st_size > 1000
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["table_12_1_matches"] is True
    assert summary["curves_paper"]["adult"]["psrr-ss"]["1.0"]["mean"] > 0
    assert "PSRR-SS on Adult at eps_c = 1.0: mean SSE" in md
    assert set(summary["curves_paper"]["adult"]["psrr-ss"]) == {"0.4", "0.5", "1.0"}


def test_bad_eps_option(tmp_path):
    for bad in ("abc", "1.5"):
        with pytest.raises(SystemExit):
            reproduce.main(["--out", str(tmp_path), "--eps", bad])


@pytest.mark.slow
def test_quick_full_datasets(tmp_path):
    assert reproduce.main(["--quick", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "report.md").read_text()
    for name in ("kosarak-synthetic", "kosarak", "adult", "census-income"):
        assert f"sse_{name}_tight.png" in md
