"""Issue 42: the load a run was measured under, the figure's palette and formats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import sdp

from parties.costs.load import FOREIGN_CORES_LIMIT, load_verdict
from parties.costs.plot import FAMILIES, OKABE_ITO, check_format, family


def _party(name: str, cpu: float, samples: list[tuple[float, float]]) -> dict:
    return {
        "party": name,
        "host": {"name": "h", "cores": 2,
                 "samples": [{"t": t, "load1": 1.0, "busy_s": b} for t, b in samples]},
        "rows": [{"cpu_s": cpu}],
    }  # fmt: skip


def test_load_verdict_counts_other_processes_cpu_only():
    # 10 s of run; the host was busy 12 CPU s of which the run's parties took 11.5: quiet
    quiet = [_party("a", 6.0, [(0.0, 100.0), (10.0, 112.0)]),
             _party("b", 5.5, [(1.0, 101.0), (9.0, 111.0)])]  # fmt: skip
    v = load_verdict(quiet)
    assert v["under_load"] is False and v["hosts"][0]["foreign_cores"] == pytest.approx(0.05)
    # the same run beside a process burning one core: 10 CPU s more on the host
    busy = [_party("a", 6.0, [(0.0, 100.0), (10.0, 122.0)]),
            _party("b", 5.5, [(1.0, 101.0), (9.0, 121.0)])]  # fmt: skip
    v = load_verdict(busy)
    assert v["under_load"] is True and v["hosts"][0]["foreign_cores"] == pytest.approx(1.05)
    assert v["hosts"][0]["foreign_cores"] >= FOREIGN_CORES_LIMIT
    assert load_verdict([{"party": "old", "rows": []}])["under_load"] is None


def test_every_row_records_the_hosts_load_and_the_partys_cpu_share():
    from parties.runtime.cost_ledger import CostLedger

    led = CostLedger("p")
    led.enter("encode", 0)
    sum(i * i for i in range(200_000))  # some CPU in the row
    led.enter("publish", 0)
    out = led.to_json()
    assert out["host"]["cores"] >= 1 and len(out["host"]["samples"]) >= 3
    rows = {r["phase"]: r for r in out["rows"]}
    start_load, _ = rows["encode"]["load"]["start"]
    end_load, share = rows["encode"]["load"]["end"]
    assert start_load is not None and end_load is not None
    assert 0.0 < share <= 1.5  # its own CPU over the row's last interval


def test_at_most_eight_colour_blind_safe_phase_families():
    assert len(FAMILIES) <= 8 and len(set(OKABE_ITO)) == 8
    for phase in ("setup", "dkg", "mix.submit", "mpc-shuffle", "mix.decrypt", "analyze", "lm"):
        assert family(phase) in dict(FAMILIES)
    assert family("no-such-phase") == FAMILIES[-1][0]
    with pytest.raises(ValueError, match="unknown figure format"):
        check_format(Path("x.bmp"))
    assert check_format(Path("x.PDF")) == "pdf" and check_format(Path("x.jpeg")) == "jpg"


def test_a_run_beside_a_cpu_burner_is_marked_under_load_and_the_model_warns(tmp_path):
    out = tmp_path / "r"
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)
    ]
    try:
        sdp("run", "grr", "--shuffler", "trusted", "--users", "200", "--out", str(out),
            "--quiet", "--no-verify", check=True, timeout=600)  # fmt: skip
    finally:
        for b in burners:
            b.kill()
            b.wait()
    costs = json.loads(sdp("costs", str(out), "--json", check=True).stdout)
    assert costs["load"]["under_load"] is True, costs["load"]
    assert costs["load"]["hosts"][0]["foreign_cores"] >= FOREIGN_CORES_LIMIT
    text = sdp("costs", str(out), check=True).stdout
    assert "MEASURED UNDER LOAD" in text
    model = sdp("costs", "--model", str(out), "--predict", "n=1000")
    assert model.returncode == 0
    assert f"WARNING: fitted on {out.name}, measured under load" in model.stderr
