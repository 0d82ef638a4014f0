"""The cost ledger: rows per (phase, protocol round, step), busy/waiting split, per-peer matrix,
and agreement with the transcripts (sum of ``len`` per peer and round)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import sdp

from parties.costs.check import check_ledger
from parties.runtime.cost_ledger import CostLedger


def test_step_phases_keep_the_protocol_round():
    led = CostLedger("p")
    led.enter("encode", 1)
    led.enter("dkg", 3)  # step 3 of protocol round 1
    led.sent("dkg", 3, 100, 1, 1, peer="q", kind="payload", writes=1)
    led.enter("mix.shuffle", 2)
    led.received("mix.shuffle", 2, 50, 1, 1, peer="q")
    led.received("mix.shuffle", 2, 70, 1, 1, pr=0, peer="q")  # a late frame of round 0
    led.enter("publish", 0)  # the analyzer's estimate after the last round
    led.sent("publish", 0, 10, 1, 1, peer="q", kind="payload")
    rows = {(r["phase"], r["round"], r["step"]): r for r in led.to_json()["rows"]}
    assert rows[("publish", 1, 0)]["payload_sent"] == 10
    assert rows[("dkg", 1, 3)]["payload_sent"] == 100
    assert rows[("dkg", 1, 3)]["peers"]["q"]["msgs_sent"] == 1
    assert rows[("dkg", 1, 3)]["tls_overhead_sent_est"] == 22
    assert rows[("mix.shuffle", 1, 2)]["payload_recv"] == 50
    assert rows[("mix.shuffle", 0, 2)]["payload_recv"] == 70


def test_overlapping_waits_count_once_and_start_end_are_ordered():
    led = CostLedger("p")
    led.enter("submit", 0)
    led.begin("wait_s")
    led.begin("wait_s")  # a gather over two peers
    time.sleep(0.05)
    led.end("wait_s")
    led.end("wait_s")
    led.enter("deliver", 0)
    rows = {r["phase"]: r for r in led.to_json()["rows"]}
    sub = rows["submit"]
    assert 0.04 <= sub["wait_s"] <= sub["wall_s"] + 1e-6
    assert sub["start"] <= sub["end"] <= rows["deliver"]["start"]
    assert sub["spans"][0] == [pytest.approx(sub["start"]), pytest.approx(sub["end"])]


@pytest.fixture(scope="module")
def gfim_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gfim") / "run"
    sdp(
        "run",
        "gfim",
        "--shuffler",
        "mixnet",
        "--users",
        "600",
        "--out",
        str(out),
        "--quiet",
        check=True,
        timeout=900,
    )
    return out


def test_ledger_matches_the_transcripts(gfim_run):
    assert check_ledger(gfim_run) == []


def test_two_round_gfim_costs_are_split_by_protocol_round(gfim_run):
    costs = json.loads(sdp("costs", str(gfim_run), "--json", check=True).stdout)
    rounds = {r["round"]: r for r in costs["rounds"]}
    assert set(rounds) == {0, 1}
    for rnd, r in rounds.items():
        steps = {(s["phase"], s["step"]) for s in r["steps"]}
        # each protocol round runs its own DKG (steps 1-4) and three shuffle hops
        assert {("dkg", k) for k in (1, 2, 3, 4)} <= steps, rnd
        assert {("mix.shuffle", k) for k in (1, 2, 3)} <= steps, rnd
        assert r["start"] < r["end"] and r["bytes_sent"] > 0
        for s in r["steps"]:
            for p in s["parties"].values():
                assert p["wait_s"] <= p["wall_s"] + 0.05
        # the matrix: what mix-1 sent mix-2 this round equals what mix-2 received from it
        m2 = next(p for p in costs["parties"] if p["party"] == "mix-2")
        recv = sum(
            row["peers"].get("mix-1", {}).get("bytes_recv", 0)
            for row in m2["rows"]
            if row["round"] == rnd
        )
        assert r["matrix"]["mix-1"]["mix-2"]["bytes"] == recv > 0
    # round 1's mixing starts after round 0's last shuffle hop ended
    hop = {(r, s["phase"], s["step"]): s for r in rounds for s in rounds[r]["steps"]}
    assert hop[(0, "mix.shuffle", 3)]["end"] <= hop[(1, "mix.shuffle", 1)]["start"]
    assert rounds[0]["end"] <= rounds[1]["end"]
    # payload + framing + sealing is every byte of the transport
    for p in costs["parties"]:
        for row in p["rows"]:
            parts = sum(row[f"{k}_sent"] for k in ("payload", "framing", "sealing", "mpyc"))
            assert parts == row["bytes_sent"]


def test_by_round_table_and_plot(gfim_run, tmp_path):
    png, svg = tmp_path / "t.png", tmp_path / "t.svg"
    proc = sdp("costs", str(gfim_run), "--by-round", "--plot", str(png), check=True)
    assert "round 1" in proc.stdout and "mix.shuffle" in proc.stdout
    assert png.read_bytes()[:4] == b"\x89PNG"
    sdp("costs", str(gfim_run), "--plot", str(svg), check=True)
    assert b"<svg" in svg.read_bytes()[:400]


def test_tls_overhead_is_measured_from_the_kernels_tcp_counts(gfim_run):
    """Every link's bytes on the wire (TCP_INFO at close) cover what the ledger handed to TLS,
    plus record overhead (at least the ledger's own lower estimate) and the handshake."""
    tls = json.loads(sdp("costs", str(gfim_run), "--json", check=True).stdout)["tls_measured"]
    assert tls["links"] and tls["links_unmeasured"] == 0
    for link in tls["links"]:
        assert link["tcp_bytes"] > link["ledger_bytes"], link
    costs = json.loads((gfim_run / "costs.json").read_text())
    records = sum(r["tls_overhead_sent_est"] for p in costs["parties"] for r in p["rows"])
    assert tls["overhead_bytes"] >= records
    # a TLS 1.3 handshake with our certificates is kilobytes, not megabytes
    assert tls["overhead_bytes"] < records + 4000 * len(tls["links"])
