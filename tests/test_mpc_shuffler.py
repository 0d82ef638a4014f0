"""MPC shuffler end to end in one process: clients -> servers (LocalRuntime) -> analyzer."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mpc import histogram_arith, shamir
from parties.mpc_shuffle import local_runtime as pr
from parties.mpc_shuffle import plan as mpc_run
from parties.mpc_shuffle import secure_ops as mpc_arith
from parties.mpc_shuffle import shuffler as ms
from parties.mpc_shuffle import wire as mpc_wire
from parties.runtime.memlink import MemoryNetwork
from protocols.base import BatchSpec

SPECS = [BatchSpec("a", 1, 5), BatchSpec("b", 2, 3)]


def _cfg(mode="open", m=3, t=1, clients=("c0", "c1")):
    return mpc_wire.MPCShufflerConfig(
        servers=tuple(f"s{i}" for i in range(m)),
        analyzer="an",
        clients=clients,
        threshold=t,
        mode=mode,
        timeout=20.0,
    )


async def _run(cfg, batches_per_client, tamper=None):
    net = MemoryNetwork(list(cfg.servers) + [cfg.analyzer] + list(cfg.clients), timeout=10)
    mpcnet = pr.LocalMPCNetwork(cfg.m, cfg.threshold)
    rts = mpcnet.runtimes()
    tasks = []
    for c, batches in zip(cfg.clients, batches_per_client, strict=True):
        if tamper and c in tamper:
            tasks.append(tamper[c](net.context(c)))
        else:
            tasks.append(ms.client_submit(net.context(c), cfg, SPECS, batches))
    tasks += [ms.server_run(net.context(s), rts[i], cfg, SPECS) for i, s in enumerate(cfg.servers)]
    tasks.append(ms.analyzer_collect(net.context(cfg.analyzer), cfg, SPECS))
    res = await asyncio.gather(*tasks)
    return res[-1], res[len(cfg.clients) : -1], mpcnet


def _data(rng, n):
    return {"a": rng.integers(0, 5, size=(n, 1)), "b": rng.integers(0, 3, size=(n, 2))}


def _multiset(a):
    return sorted(map(tuple, a.tolist()))


@pytest.mark.parametrize("m,t", [(3, 1), (5, 2)])
async def test_open_mode_returns_the_shuffled_multiset(m, t):
    rng = np.random.default_rng(0)
    d0, d1 = _data(rng, 40), _data(rng, 25)
    d1["a"][3, 0] = 9  # out of domain -> invalid, not a crash
    d1["b"][4, 1] = -1
    out, stats, _ = await _run(_cfg(m=m, t=t), [d0, d1])
    assert out.invalid == {"a": 1, "b": 1}
    for k in ("a", "b"):
        allrows = np.concatenate([d0[k], d1[k]])
        spec = {s.name: s for s in SPECS}[k]
        ok = ((allrows >= 0) & (allrows < spec.bound)).all(axis=1)
        assert _multiset(out.batches[k]) == _multiset(allrows[ok])
    # the order differs from submission order (probability of identity ~ 1/64!)
    assert not np.array_equal(out.batches["a"][:, 0], np.concatenate([d0["a"], d1["a"]])[:, 0][:64])
    assert all(s["accepted_clients"] == 2 for s in stats)


async def test_histogram_mode_opens_only_counts():
    rng = np.random.default_rng(1)
    d0, d1 = _data(rng, 30), _data(rng, 30)
    d0["a"][0, 0] = 7
    out, _, _ = await _run(_cfg("histogram"), [d0, d1])
    allrows = {k: np.concatenate([d0[k], d1[k]]) for k in ("a", "b")}
    good_a = allrows["a"][:, 0][allrows["a"][:, 0] < 5]
    np.testing.assert_array_equal(out.batches["a"][0], np.bincount(good_a, minlength=5))
    for c in range(2):
        np.testing.assert_array_equal(
            out.batches["b"][c], np.bincount(allrows["b"][:, c], minlength=3)
        )
    assert out.invalid == {"a": 1, "b": 0}


async def test_malformed_submission_is_rejected_by_all_servers():
    rng = np.random.default_rng(2)
    d0, d1 = _data(rng, 10), _data(rng, 12)
    cfg = _cfg()

    async def bad_client(ctx):
        # the real (signed) submission to servers 0 and 1, garbage to server 2

        class Garbling:
            name, signer, public_keys = ctx.name, ctx.signer, ctx.public_keys

            def phase(self, *args) -> None:
                ctx.phase(*args)

            async def send(self, peer, ty, payload, *, public=False) -> None:
                garbage = peer == cfg.servers[2]
                await ctx.send(peer, ty, b"\xff\x00garbage" if garbage else payload, public=public)

        await ms.client_submit(Garbling(), cfg, SPECS, d1, users=12)

    out, stats, _ = await _run(cfg, [d0, d1], tamper={"c1": bad_client})
    assert out.rejected_clients == ["c1"]
    assert out.invalid == {"a": 12, "b": 12}
    assert _multiset(out.batches["a"]) == _multiset(d0["a"])


async def test_secure_mul_and_powers_on_local_runtime():
    net = pr.LocalMPCNetwork(3, 1)
    x = np.arange(20).reshape(10, 2)
    sh = shamir.share(x, 3, 1)

    async def party(rt):
        return await mpc_arith.secure_powers(rt, sh[rt.pid], 4)

    res = await asyncio.gather(*(party(rt) for rt in net.runtimes()))
    for d in range(5):
        allsh = np.stack([res[i][d] for i in range(3)])
        assert shamir.consistent(allsh, 1).all()
        np.testing.assert_array_equal(shamir.reconstruct(allsh[:2], [0, 1]), x**d % shamir.PRIME)


def test_lagrange_basis_is_identity_on_domain():
    b = histogram_arith.lagrange_basis(6)
    for j in range(6):
        vals = [sum(int(b[i, d]) * j**d for d in range(6)) % shamir.PRIME for i in range(6)]
        assert vals == [1 if i == j else 0 for i in range(6)]


async def test_histogram_mode_rejects_large_domains_before_any_work():
    net = MemoryNetwork(["s0", "s1", "s2", "an"])
    cfg = _cfg("histogram", clients=())
    big = [BatchSpec("q", 1, 1000)]
    with pytest.raises(ValueError, match="max_domain"):
        await ms.server_run(net.context("s0"), pr.LocalMPCNetwork(3, 1).runtimes()[0], cfg, big)
    with pytest.raises(ValueError, match="max_domain"):
        await ms.analyzer_collect(net.context("an"), cfg, big)


def test_config_validation():
    with pytest.raises(ValueError, match="m >= 3"):
        mpc_wire.MPCShufflerConfig(servers=("a", "b"), analyzer="x", clients=())
    with pytest.raises(ValueError, match="mode"):
        _cfg(mode="bogus")
    with pytest.raises(ValueError, match="unknown batch"):
        mpc_wire.share_batches({"zz": np.zeros((1, 1), dtype=np.int64)}, SPECS, 3, 1)


async def test_client_may_submit_in_blocks():
    rng = np.random.default_rng(3)
    d0, d1 = _data(rng, 10), _data(rng, 8)
    cfg = _cfg()

    async def two_blocks(ctx):
        half = {k: v[:4] for k, v in d1.items()}
        rest = {k: v[4:] for k, v in d1.items()}
        await ms.client_submit(ctx, cfg, SPECS, half, last=False)
        await ms.client_submit(ctx, cfg, SPECS, rest, block=1)  # blocks are numbered (signed)

    out, _, _ = await _run(cfg, [d0, d1], tamper={"c1": two_blocks})
    assert out.rejected_clients == [] and out.invalid == {"a": 0, "b": 0}
    assert _multiset(out.batches["b"]) == _multiset(np.concatenate([d0["b"], d1["b"]]))


async def test_large_arrays_travel_in_chunks(monkeypatch):
    monkeypatch.setattr(mpc_wire, "CHUNK_ELEMENTS", 7)
    rng = np.random.default_rng(4)
    d0, d1 = _data(rng, 23), _data(rng, 5)
    out, _, _ = await _run(_cfg(), [d0, d1])
    assert _multiset(out.batches["b"]) == _multiset(np.concatenate([d0["b"], d1["b"]]))


class _Node:
    """MemoryContext plus the node extras the role functions use."""

    def __init__(self, ctx, run_dir):
        self._ctx, self.name, self.run_dir = ctx, ctx.name, run_dir
        self.signer, self.public_keys = ctx.signer, ctx.public_keys  # signed evidence
        self.published = {}

    def phase(self, name, round=0):
        self._ctx.phase(name, round)

    async def send(self, peer, msg_type, payload, *, public=False):
        await self._ctx.send(peer, msg_type, payload, public=public)

    async def recv(self, peer, msg_type):
        return await self._ctx.recv(peer, msg_type)

    def progress(self, *a):
        pass

    def busy(self, peers, what):
        return self._ctx.busy(peers, what)

    def publish(self, label, payload):
        self.published[label] = payload
        return "digest"


def _fake_serve_rounds(rts):
    """serve_rounds on LocalRuntime servers (no MPyC processes)."""

    async def fake(node, cfg, round_specs, n_rounds, pid, addresses, *, ssl_dir=None):
        return [
            await ms.server_run(node, rts[pid], cfg.for_round(r), await round_specs(r))
            for r in range(n_rounds)
        ]

    return fake


def _mpc_cluster(session: str, protocol: str, params: dict):  # noqa: ANN202
    """The launcher's MPC layout (3 servers, 2 client parties) as a cluster on made-up local
    ports, for role code run over a MemoryNetwork: (layout, cluster)."""
    from parties.runtime.cluster import Cluster, PartySpec

    layout = mpc_run.MpcPlan().layout({"servers": 3, "clients": 2})
    parties = [PartySpec(n, r, "127.0.0.1", 1000 + i) for i, (n, r) in enumerate(layout)]
    cluster = Cluster(
        session=session, protocol=protocol, shuffler="mpc", parties=parties, params=params
    )
    return layout, cluster


@pytest.mark.parametrize(
    "mode,security",
    [("open", "malicious-abort"), ("histogram", "malicious-abort"), ("open", "semi-honest")],
)
async def test_roles_run_grr_end_to_end(tmp_path, monkeypatch, mode, security):
    import json

    plan = mpc_run.MpcPlan()
    layout, cluster = _mpc_cluster(
        "ab" * 16,
        "grr",
        {
            "users": 3000,
            "domain": 5,
            "epsilon": 1.0,
            "seed": 1,
            "mpc_mode": mode,
            "security": security,
        },
    )
    assert plan.peers(cluster, "client-1") == {"mpc-1", "mpc-2", "mpc-3", "analyzer"}
    net = MemoryNetwork([n for n, _ in layout], timeout=20)
    rts = pr.LocalMPCNetwork(3, 1).runtimes()

    monkeypatch.setattr(mpc_run, "serve_rounds", _fake_serve_rounds(rts))
    monkeypatch.setattr(mpc_run, "mpc_addresses", lambda c: [("h", 1)] * 3)
    nodes = {n: _Node(net.context(n), tmp_path) for n, _ in layout}
    await asyncio.gather(*(plan.run(nodes[n], cluster) for n, _ in layout))
    res = json.loads((tmp_path / "result.json").read_text())
    assert res["messages"] == {"reports": 3000} and res["mpc"]["mode"] == mode
    assert res["mpc"]["security"] == security and security in res["mpc"]["trust"]
    assert res["privacy"]["shuffler_security"] == res["mpc"]["trust"]
    assert abs(sum(res["estimate"]["frequencies"]) - 1) < 1e-9
    from parties.clients.roles import load_batches

    published, meta = load_batches(nodes["analyzer"].published[mpc_run.PUBLISHED_INPUT])
    assert published["reports"].shape == (3000, 1) and meta["mode"] == mode
    monkeypatch.undo()
    with pytest.raises(ValueError, match="mpc_ports"):
        mpc_run.mpc_addresses(cluster)


class _TwoRounds(__import__("protocols.base", fromlist=["ShuffleProtocol"]).ShuffleProtocol):
    """Round 0: values in [0, 4); the analyzer publishes k = max + 2; round 1: values mod k."""

    name = "two-rounds"
    n_rounds = 2

    def batch_specs(self):
        return [BatchSpec("v", 1, 4)]

    def batch_specs_round(self, rnd, public):
        return self.batch_specs() if rnd == 0 else [BatchSpec("w", 1, int(public["k"]))]

    def encode(self, records, rng):
        return {"v": records.reshape(-1, 1) % 4}

    def encode_round(self, rnd, records, rng, public, local):
        if rnd == 0:
            local["seen"] = True
            return self.encode(records, rng)
        assert local["seen"]
        return {"w": records.reshape(-1, 1) % int(public["k"])}

    def analyze(self, shuffled):
        return {}

    def analyze_round(self, rnd, shuffled, public):
        if rnd == 0:
            return {"k": int(shuffled["v"].max()) + 2}
        return {"total": int(shuffled["w"].sum()), "k": public["k"]}

    def releases(self, rnd, counts):  # a test protocol: no noise, eps 0 by fiat
        from protocols.privacy.ledger import Release

        n = sum(v for k, v in counts.items() if not k.startswith("#"))
        return [Release(f"round {rnd}", "test", 0.0, 0.0, n, n, "test")]


async def test_roles_run_a_two_round_protocol(tmp_path, monkeypatch):
    import json

    from protocols.workloads import WORKLOADS, Workload

    records = np.arange(50)
    WORKLOADS["test-two-rounds"] = lambda params: Workload(_TwoRounds(), records)
    plan = mpc_run.MpcPlan()
    layout, cluster = _mpc_cluster("cd" * 16, "test-two-rounds", {"seed": 3})
    net = MemoryNetwork([n for n, _ in layout], timeout=20)
    monkeypatch.setattr(
        mpc_run, "serve_rounds", _fake_serve_rounds(pr.LocalMPCNetwork(3, 1).runtimes())
    )
    monkeypatch.setattr(mpc_run, "mpc_addresses", lambda c: [("h", 1)] * 3)
    nodes = {n: _Node(net.context(n), tmp_path) for n, _ in layout}
    try:
        await asyncio.gather(*(plan.run(nodes[n], cluster) for n, _ in layout))
    finally:
        del WORKLOADS["test-two-rounds"]
    res = json.loads((tmp_path / "result.json").read_text())
    assert res["estimate"] == {"total": int((records % 5).sum()), "k": 5}
    assert [r["round"] for r in res["mpc"]["rounds"]] == [0, 1]
