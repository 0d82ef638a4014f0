"""Issue 37 item 2: the MAC-checked MPC shuffle with m = 5 and m = 7 servers (t = 2, 3), under
one deviating server, under t colluding deviating servers (the threshold), and under a server
colluding with a malicious client.

Mounted on the real code path (``shuffler.server_run`` on in-process runtimes, one
``mpc.permute_reshare.outgoing_reshares`` call replaced per deviating server, the client's real
``input_evidence.send_shares``). What must hold: every deviation that changes a value or a tag
makes every server abort on the MAC check with nothing opened; a colluding client's own value
may come out wrong, but no honest client's value is ever opened moved, and the run never
names an honest client.
"""

from __future__ import annotations

import numpy as np
import pytest
from _mpc_helpers import honest_client, run_in_process, sent_outputs

from mpc import input_commit, shamir
from mpc import permute_reshare as perm_mod
from mpc.shamir import PRIME
from parties.mpc_shuffle import input_evidence, malicious, wire
from protocols.base import BatchSpec

SPECS = [BatchSpec("x", 1, 8)]
VICTIM = {"x": np.array([[5]], dtype=np.int64)}
OTHER = {"x": np.array([[1], [2], [3], [1], [0]], dtype=np.int64)}
OFFSET = 1000
SHAPES = [(5, 2), (7, 3)]


def _cfg(m: int, t: int, clients=("victim", "other")) -> wire.MPCShufflerConfig:
    return wire.MPCShufflerConfig(
        servers=tuple(f"s{i}" for i in range(m)),
        analyzer="an",
        clients=clients,
        threshold=t,
        timeout=30.0,
    )


def _deviate(monkeypatch, evil: list[int], *, tag_guess: int | None, row: int = 0) -> list[int]:
    """Servers ``evil`` (colluding) deviate in the first coalition that holds them all: they
    share an offset of OFFSET on row ``row``'s value between them, and with ``tag_guess`` g
    add OFFSET * g to each of its tags (a guess of the MAC key). Returns who mounted it."""
    orig = perm_mod.outgoing_reshares
    mounted: list[int] = []

    def evil_round(arrays, pid, coalition, seed, m, t, run_label, **kw):
        if pid in evil and pid not in mounted and set(evil) <= set(coalition):
            arrays = {k: v.copy() for k, v in arrays.items()}
            a = arrays["x"]
            lam = int(
                shamir.lagrange_coefficients([c + 1 for c in coalition])[coalition.index(pid)]
            )
            inv = pow(lam, PRIME - 2, PRIME)
            part = OFFSET * pow(len(evil), PRIME - 2, PRIME) % PRIME  # the shares add up
            cols = [0] if tag_guess is None else list(range(a.shape[1]))
            for c in cols:
                delta = part if c == 0 else part * tag_guess % PRIME
                a[row, c] = (int(a[row, c]) + delta * inv) % PRIME
            mounted.append(pid)
        return orig(arrays, pid, coalition, seed, m, t, run_label, **kw)

    monkeypatch.setattr(perm_mod, "outgoing_reshares", evil_round)
    return mounted


def _clients(cfg):
    return {
        "victim": honest_client(cfg, SPECS, VICTIM),
        "other": honest_client(cfg, SPECS, OTHER),
    }


@pytest.mark.parametrize("m,t", SHAPES)
async def test_honest_run_with_more_servers(m, t):
    cfg = _cfg(m, t)
    results, _, out = await run_in_process(cfg, SPECS, _clients(cfg))
    assert not any(isinstance(r, BaseException) for r in results), results
    assert sorted(out.batches["x"][:, 0].tolist()) == [0, 1, 1, 2, 3, 5]
    assert out.rejected_clients == []


@pytest.mark.parametrize("m,t", SHAPES)
@pytest.mark.parametrize("who", ["one", "threshold"])
@pytest.mark.parametrize("tag_guess", [None, 1])
async def test_deviating_servers_abort_on_the_mac_check(monkeypatch, m, t, who, tag_guess):
    cfg = _cfg(m, t)
    evil = [1] if who == "one" else list(range(1, t + 1))  # t colluding servers
    mounted = _deviate(monkeypatch, evil, tag_guess=tag_guess)
    results, net, _ = await run_in_process(cfg, SPECS, _clients(cfg), collect=False)
    assert sorted(mounted) == evil
    for r in results:  # every server, honest or not, aborts naming the MAC check
        assert isinstance(r, malicious.MaliciousAbort), r
        assert "MAC check on batch 'x'" in str(r) and "nothing is opened" in str(r)
    assert sent_outputs(net, cfg) == 0


def _colluding_client(cfg, accomplice: int):
    """A malicious client that sends ``accomplice`` a share off the polynomial but signs the
    openings of the consistent sharing (so that the opening vector passes); the accomplice
    does not complain."""

    async def submit(ctx):
        sh = shamir.share(np.array([[3]], dtype=np.int64), cfg.m, cfg.threshold)
        honest = [{"x": sh[i].copy()} for i in range(cfg.m)]
        sent = [{"x": sh[i].copy()} for i in range(cfg.m)]
        sent[accomplice]["x"][0, 0] = (sent[accomplice]["x"][0, 0] + OFFSET) % PRIME
        salts, masks, digests, _ = input_commit.commit_block(
            cfg.label, ctx.name, 0, cfg.servers, cfg.threshold, sent
        )
        seed = input_commit.coin_seed(cfg.label, ctx.name, 0, digests)
        opened = [input_commit.openings(honest[j], masks[j], seed) for j in range(cfg.m)]
        body = {"client": ctx.name, "block": 0, "last": True, "digests": digests, "open": opened}
        sig = input_evidence._sign(ctx, "mpc-input", cfg.label.decode(), body)
        for j, server in enumerate(cfg.servers):
            ev = {"statement": {"body": body, "sig": sig}, "salt": salts[j], "mask": masks[j]}
            await wire.send_chunked(
                ctx, server, wire.MSG_SHARES, sent[j], {"users": 1, "evidence": ev}
            )

    return submit


@pytest.mark.parametrize("m,t", [(3, 1), *SHAPES])
@pytest.mark.parametrize("attack", ["inconsistent-share", "offset-own-row", "offset-victim"])
async def test_a_server_colluding_with_a_malicious_client(monkeypatch, m, t, attack):
    """The client's own value may come out wrong; no honest client's value is opened moved,
    and no honest client is named."""
    cfg = _cfg(m, t, clients=("victim", "other", "evil"))
    accomplice = 1
    real_entry = input_evidence._entry

    def silent(ctx, cfg_, client, blocks):  # the accomplice never complains about "evil"
        e = real_entry(ctx, cfg_, client, blocks)
        if ctx.name == cfg.servers[accomplice] and client == "evil":
            e["complaint"] = None
        return e

    monkeypatch.setattr(input_evidence, "_entry", silent)
    clients = _clients(cfg)
    if attack == "inconsistent-share":
        clients["evil"] = _colluding_client(cfg, accomplice)
    else:  # the accomplice moves a row in the first round (input order: it knows whose it is)
        clients["evil"] = honest_client(cfg, SPECS, {"x": np.array([[3]], dtype=np.int64)})
        row = 6 if attack == "offset-own-row" else 0  # rows: victim 0, other 1..5, evil 6
        _deviate(monkeypatch, [accomplice], tag_guess=1, row=row)
    results, net, out = await run_in_process(cfg, SPECS, clients)
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:  # aborted: nothing opened, and the abort names no honest client
        assert len(failed) == len(results) and out is None
        assert all(isinstance(r, malicious.MaliciousAbort) for r in failed), failed
        assert sent_outputs(net, cfg) == 0
        assert not any("victim" in str(r) or "other" in str(r) for r in failed)
        return
    values = sorted(out.batches["x"][:, 0].tolist())
    assert "victim" not in out.rejected_clients and "other" not in out.rejected_clients
    honest = [0, 1, 1, 2, 3, 5]
    for v in honest:  # every honest value comes out unmoved
        values.remove(v)
    assert len(values) <= 1  # at most the malicious client's own row, whatever it became
