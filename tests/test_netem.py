"""WAN emulation in the transport (``parties.runtime.netem``): the delays and rate limits it
implies are lower bounds on wall time (asserted as >=, never as upper bounds)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from conftest import sdp

from parties.runtime.cluster import (
    Cluster,
    ClusterError,
    PartySpec,
    dump_cluster,
    load_cluster,
    new_session_id,
)
from parties.runtime.keys import make_party_dirs
from parties.runtime.netem import Netem, NetemError, Shaper, netem_from_cluster, parse_conditions
from parties.runtime.processes import free_ports


def test_parse_conditions_and_errors():
    c = parse_conditions("rtt=50ms,rate=100mbit")
    assert c.rtt_s == pytest.approx(0.05) and c.rate_bps == pytest.approx(1e8)
    assert parse_conditions("delay=10ms").rtt_s == pytest.approx(0.02)
    assert not parse_conditions("rtt=0ms").active
    for bad in ("rtt=fast", "rate=10", "jitter=5ms"):
        with pytest.raises(NetemError, match="--netem"):
            parse_conditions(bad)


def test_cluster_file_per_link_settings_round_trip(tmp_path):
    table = {
        "default": "rtt=20ms",
        "link": [{"a": "a", "b": "b", "conditions": "rtt=100ms,rate=10mbit"}],
    }
    cl = Cluster(
        new_session_id(),
        "grr",
        "trusted",
        [PartySpec("a", "client", "127.0.0.1", 7001), PartySpec("b", "analyzer", "h", 7002)],
        netem=table,
    )
    path = tmp_path / "c.toml"
    path.write_text(dump_cluster(cl))
    back = load_cluster(path)
    net = netem_from_cluster(back.netem)
    assert isinstance(net, Netem)
    assert net.link("b", "a").rtt_s == pytest.approx(0.1)
    assert net.link("a", "c").rtt_s == pytest.approx(0.02)
    path.write_text(dump_cluster(cl).replace('"rtt=20ms"', '"rtt=soon"'))
    with pytest.raises(ClusterError, match=r"\[netem\] default"):
        load_cluster(path)


def test_shaper_delays_keep_order_and_rate():
    async def go() -> list[tuple[float, bytes]]:
        loop = asyncio.get_running_loop()
        got: list[tuple[float, bytes]] = []
        sh = Shaper(
            loop, parse_conditions("rtt=100ms,rate=8mbit"), lambda d: got.append((loop.time(), d))
        )
        t0 = loop.time()
        for i in range(20):
            sh.write(bytes([i]) * 50_000)  # 1 MB at 1 MB/s
        await sh.wait(0)
        return [(t - t0, d) for t, d in got]

    got = asyncio.run(go())
    assert [d[0] for _, d in got] == list(range(20))  # order kept
    assert got[0][0] >= 0.05  # one-way delay = rtt / 2
    assert got[-1][0] >= 0.05 + (1_000_000 - 16384) / 1e6  # the bucket's rate


async def _two_nodes(tmp: Path, netem: str, round_trips: int, bulk: int) -> tuple[float, float]:
    from parties.runtime.transport import Node

    ports = free_ports(2)
    cluster = Cluster(
        new_session_id(),
        "bench",
        "trusted",
        [
            PartySpec("a", "client", "127.0.0.1", ports[0]),
            PartySpec("b", "analyzer", "127.0.0.1", ports[1]),
        ],
        phase_timeout=60.0,
        netem={"default": netem},
    )
    dirs = make_party_dirs(cluster, tmp / "keys")
    a = Node(cluster, "a", dirs["a"], tmp / "run")
    b = Node(cluster, "b", dirs["b"], tmp / "run")
    await asyncio.gather(a.start({"b"}), b.start({"a"}))

    async def ping() -> None:
        for _ in range(round_trips):
            await a.send("b", "ping", b"x")
            await a.recv("b", "pong")

    async def pong() -> None:
        for _ in range(round_trips):
            await b.recv("a", "ping")
            await b.send("a", "pong", b"y")

    t0 = time.perf_counter()
    await asyncio.gather(ping(), pong())
    t_rounds = time.perf_counter() - t0
    t0 = time.perf_counter()
    await asyncio.gather(a.send("b", "bulk", os.urandom(bulk)), b.recv("a", "bulk"))
    t_bulk = time.perf_counter() - t0
    await asyncio.gather(a.close(), b.close())
    return t_rounds, t_bulk


def test_wall_time_grows_by_round_trips_times_rtt_and_rate_stretches_bulk(tmp_path):
    rounds, bulk = 5, 1_000_000
    t_rounds, t_bulk = asyncio.run(_two_nodes(tmp_path, "rtt=80ms,rate=16mbit", rounds, bulk))
    assert t_rounds >= rounds * 0.080
    assert t_bulk >= 0.040 + (bulk - 16384) * 8 / 16e6  # one-way delay + serialisation
    opened = json.loads((tmp_path / "run" / "transcripts" / "a.jsonl").open().readline())
    assert opened["network"]["rtt_ms"] == pytest.approx(80.0)
    assert opened["network"]["rate_mbit"] == pytest.approx(16.0)


def test_bad_netem_option_is_one_line(tmp_path):
    proc = sdp("run", "grr", "--users", "100", "--netem", "rtt=soon", "--out", str(tmp_path / "r"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--netem: rtt" in proc.stderr


def test_mpyc_peer_connections_are_wrapped(monkeypatch):
    from types import SimpleNamespace

    from parties.runtime import netem

    async def go() -> tuple[int, list[bytes], bool]:
        written: list[bytes] = []
        closed = []
        inner = SimpleNamespace(
            write=written.append, close=lambda: closed.append(1), is_closing=lambda: False
        )
        me = SimpleNamespace(pid=0, protocol=None)
        peer = SimpleNamespace(pid=1, protocol=SimpleNamespace(transport=inner))
        rt = SimpleNamespace(pid=0, parties=[me, peer])
        monkeypatch.setattr(netem, "ACTIVE", netem.Netem(parse_conditions("rtt=40ms")))
        n = netem.shape_mpyc(rt)
        tr = peer.protocol.transport
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        tr.write(b"abc")
        tr.close()  # waits for the queue
        assert written == [] and not closed and not tr.is_closing()
        while not closed:
            await asyncio.sleep(0.005)
        return n, written, loop.time() - t0 >= 0.02

    n, written, delayed = asyncio.run(go())
    assert n == 1 and written == [b"abc"] and delayed


def test_sdp_run_under_emulation_verifies_and_states_its_network(tmp_path):
    out = tmp_path / "r"
    sdp(
        "run",
        "grr",
        "--users",
        "500",
        "--netem",
        "rtt=40ms,rate=50mbit",
        "--out",
        str(out),
        "--quiet",
        check=True,
        timeout=600,
    )
    assert json.loads((out / "result.json").read_text())["verified"]
    for t in (out / "transcripts").glob("*.jsonl"):
        net = json.loads(t.open().readline())["network"]
        assert net["rtt_ms"] == pytest.approx(40.0) and net["rate_mbit"] == pytest.approx(50.0)
    costs = json.loads(sdp("costs", str(out), "--json", check=True).stdout)
    assert costs["network"]["rtt_ms"] == pytest.approx(40.0)
    # every message crossed a 20 ms one-way delay: the chain of hops took at least that long
    assert costs["critical_path"]["network_s"] >= 0.020 * costs["critical_path"]["one_way_hops"]


def test_flight_counter_counts_runs_of_writes_between_receipts():
    from types import SimpleNamespace

    from parties.mpc_shuffle.mpyc_rounds import FlightCounter, count_mpyc_flights, mpyc_flights

    written: list[bytes] = []
    got: list[bytes] = []
    inner = SimpleNamespace(write=written.append, set_protocol=lambda p: None)
    proto = SimpleNamespace(transport=inner, data_received=got.append)
    rt = SimpleNamespace(
        pid=0, parties=[SimpleNamespace(pid=0), SimpleNamespace(pid=1, protocol=proto)]
    )
    assert count_mpyc_flights(rt) == 1 and isinstance(proto.transport, FlightCounter)
    tr = proto.transport
    tr.write(b"a")
    tr.write(b"b")  # same flight
    tr.data_received(b"x")
    tr.data_received(b"y")
    tr.write(b"c")  # a new flight after hearing from the peer
    assert written == [b"a", b"b", b"c"] and got == [b"x", b"y"]
    assert mpyc_flights(rt) == 2 and count_mpyc_flights(rt) == 0  # not wrapped twice


def test_mpc_rounds_on_the_mesh_are_counted_and_delayed(tmp_path):
    """MPyC's mesh does not pass through our transport: its rounds (flights) are counted in the
    ledger, enter the run's hops, and each one crosses the emulated one-way delay."""
    from parties.costs.model import run_facts

    out = tmp_path / "r"
    sdp("run", "grr", "--shuffler", "mpc", "--users", "300", "--netem", "rtt=100ms",
        "--out", str(out), "--quiet", check=True, timeout=600)  # fmt: skip
    costs = json.loads(sdp("costs", str(out), "--json", check=True).stdout)
    rows = [(p["party"], r) for p in costs["parties"] for r in p["rows"]]
    mesh = [(party, r) for party, r in rows if r.get("mpyc_flights")]
    assert {r["phase"] for _, r in mesh} == {"mpc-shuffle", "mpc-output"}
    for _, r in mesh:  # each flight waited for a 50 ms one-way delay before the next
        assert r["wall_s"] >= 0.05 * (r["mpyc_flights"] - 1)
    most = max(sum(r.get("mpyc_flights", 0) for pp, r in rows if pp == p) for p, _ in mesh)
    cp = costs["critical_path"]
    # the critical path walks MPyC's flights at their depth: the mesh adds at least the
    # busiest server's flights, between the clients' submissions and the output shares
    assert cp["mpyc_hops"] >= most > 0
    assert cp["one_way_hops"] == cp["transcript_hops"] + cp["mpyc_hops"]
    assert cp["transcript_hops"] >= 2  # client -> server, server -> analyzer
    assert run_facts(out).hops == cp["one_way_hops"]
    # per round: the hops add up, and each MPC server sent at every mesh level
    rounds = cp["rounds"]
    assert sum(r["hops"] for r in rounds.values()) == cp["one_way_hops"]
    for party in ("mpc-1", "mpc-2", "mpc-3"):
        assert rounds["0"]["flights"][party] >= cp["mpyc_hops"]
    text = sdp("costs", str(out), check=True).stdout
    assert f"{cp['mpyc_hops']} of them MPyC flights" in text
    assert "rtt 100 ms" in text


def test_mpyc_links_get_their_own_per_link_conditions(monkeypatch):
    """A ``[[netem.link]]`` between two MPC servers applies to their MPyC connection only."""
    from types import SimpleNamespace

    from parties.runtime import netem

    def peer(pid: int) -> SimpleNamespace:
        inner = SimpleNamespace(write=lambda b: None, close=lambda: None, is_closing=lambda: False)
        return SimpleNamespace(pid=pid, protocol=SimpleNamespace(transport=inner))

    async def go() -> tuple[int, dict[int, float]]:
        rt = SimpleNamespace(
            pid=0, parties=[SimpleNamespace(pid=0, protocol=None), peer(1), peer(2)]
        )
        far = parse_conditions("rtt=80ms", "[[netem.link]]")
        monkeypatch.setattr(
            netem, "ACTIVE", netem.Netem(parse_conditions(""), (("mpc-1", "mpc-3", far),))
        )
        n = netem.shape_mpyc(rt, ["mpc-1", "mpc-2", "mpc-3"])
        delays = {
            p.pid: p.protocol.transport._shaper.delay
            for p in rt.parties[1:]
            if isinstance(p.protocol.transport, netem.ShapedTransport)
        }
        return n, delays

    n, delays = asyncio.run(go())
    assert n == 1 and delays == {2: pytest.approx(0.04)}
