"""The cost model recovers linear per-user costs, the n*k term, hops x RTT, and the threshold."""

from __future__ import annotations

import pytest

from parties.costs.model import CostModel, RunFacts, parse_config


def _run(n: int, k: int, rtt: float = 0.0, t: int = 2) -> RunFacts:
    per = {
        ("client", "mix.submit"): {
            "cpu_s": 0.5 + 1e-3 * n,
            "bytes_sent": 300.0 * n,
            "msgs_sent": k,
        },
        ("mix-server", "mix.shuffle"): {
            "cpu_s": 0.1 + 2e-3 * n * k,
            "bytes_sent": 200.0 * n * k,
            "msgs_sent": 2.0,
        },
        ("mix-server", "mix.decrypt"): {"cpu_s": 1e-4 * n, "bytes_sent": 0.0, "msgs_sent": 1.0},
    }
    cpu = 2 * per[("client", "mix.submit")]["cpu_s"] + k * (
        per[("mix-server", "mix.shuffle")]["cpu_s"] + per[("mix-server", "mix.decrypt")]["cpu_s"]
    )
    hops = 10 + 2 * k
    return RunFacts(
        f"r{n}-{k}",
        "grr",
        "mixnet",
        n,
        k,
        t,
        rtt,
        {"client": 2, "mix-server": k},
        per,
        cpu,
        0.0,
        0.0,
        2.0 + cpu / 2 + hops * rtt / 2,  # on 2 cores
        hops,
        cores=2,
    )


def test_model_recovers_linear_costs_and_extrapolates():
    model = CostModel([_run(200, 3), _run(800, 3), _run(400, 5), _run(1600, 3)])
    truth = _run(10**6, 7, rtt=0.1)
    p = model.predict(10**6, 7, 2, 0.1)
    assert p["cpu_s"] == pytest.approx(truth.cpu, rel=1e-6)
    assert p["one_way_hops"] == pytest.approx(24.0)
    assert p["wall_s"] == pytest.approx(truth.wall, rel=1e-6)
    assert p["messages"] == pytest.approx(2 * 7 + 7 * 3.0)
    more = model.predict(10**6, 7, 4, 0.1)  # the threshold doubles the decryption work
    assert more["cpu_s"] - p["cpu_s"] == pytest.approx(7 * 1e-4 * 10**6, rel=1e-6)


def test_model_refuses_mixed_protocols_and_parses_configs():
    other = _run(200, 3)
    other.shuffler = "mpc"
    with pytest.raises(ValueError, match="different protocols"):
        CostModel([_run(200, 3), other])
    assert parse_config("n=1e6,k=5,t=3,rtt=50ms") == {"n": 10**6, "k": 5, "t": 3, "rtt": 0.05}
    with pytest.raises(ValueError, match="unknown key"):
        parse_config("n=10,x=1")
