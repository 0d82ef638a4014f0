"""Issue 37 item 1: an MPC server that refuses a client's sharing must name the culprit from
signed data, never blame an honest client (spec V-31).

Mounted on the real code path (``shuffler.server_run`` on in-process runtimes; the client's
real ``input_evidence.send_shares``): a server perturbs its input-check value of an honest
client (``SDP_FAULT_MPC_INPUT``, here set through ``fault_hooks``): on main 9879a8a every
server refused the client ("its sharing is not of degree <= 1") and the run was published
without it; now every server aborts naming that server, and the signed reports it sends the
analyzer convict it when re-judged as ``sdp verify`` does. A client whose sharing really is
inconsistent, or which signs an opening its shares do not give, or two different statements,
is refused and named, and the evidence convicts it. A server that forges a complaint or a
client's statement is named. End to end: ``sdp run`` with the fault, ``sdp verify`` names the
server.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from _mpc_helpers import SERVERS, honest_client, run_in_process
from conftest import NEEDS_NODE, sdp

from mpc import input_commit, shamir
from mpc.shamir import PRIME
from parties.mpc_shuffle import input_evidence, wire
from parties.runtime import codec, fault_hooks
from parties.verify import mpc_inputs
from protocols.base import BatchSpec

SPECS = [BatchSpec("x", 1, 8)]
VICTIM = {"x": np.array([[5], [2]], dtype=np.int64)}
OTHER = {"x": np.array([[1], [2], [3], [1], [0]], dtype=np.int64)}


def _cfg(m: int = 3, t: int = 1) -> wire.MPCShufflerConfig:
    return wire.MPCShufflerConfig(
        servers=tuple(f"s{i}" for i in range(m)),
        analyzer="an",
        clients=("victim", "other"),
        threshold=t,
        timeout=20.0,
    )


async def _metas(net, cfg) -> list[dict]:
    out = []
    for s in cfg.servers:
        _, meta = await wire.recv_chunked(net.context(cfg.analyzer), s, wire.MSG_OUTPUT, s)
        out.append(meta)
    return out


def _clients(cfg, victim=None):
    return {
        "victim": victim or honest_client(cfg, SPECS, VICTIM),
        "other": honest_client(cfg, SPECS, OTHER),
    }


@pytest.mark.parametrize("m,t", [(3, 1), (5, 2)])
async def test_a_server_perturbing_a_clients_input_check_value_is_named_not_the_client(
    monkeypatch, m, t
):
    cfg = _cfg(m, t)
    evil = cfg.servers[1]
    monkeypatch.setattr(fault_hooks, "_INPUT", [evil, "victim", "1"])
    results, net, _ = await run_in_process(cfg, SPECS, _clients(cfg), collect=False)
    for r in results:  # every server, the deviating one too, aborts naming it
        assert isinstance(r, input_evidence.InputAbort), r
        assert r.culprit == evil and f"{evil} complained falsely against victim" in str(r)
        assert "refusing victim" not in str(r)
    for meta in await _metas(net, cfg):  # no output share; the signed reports, re-judged
        assert meta["culprit"] == evil and "abort" in meta
        clients, guilty = mpc_inputs.check_evidence(
            net.public_keys, cfg.label, cfg.servers, t, meta["input_evidence"]
        )
        assert set(guilty) == {evil} and clients == {}
        ok, why = mpc_inputs.abort_verdicts(net.public_keys, cfg.label, cfg.servers, t, meta)
        assert ok and f"server {evil} deviated" in why


def _inconsistent(cfg, where: int = 2):
    async def submit(ctx):
        sh = shamir.share(VICTIM["x"], cfg.m, cfg.threshold)
        sh[where, 0, 0] = (sh[where, 0, 0] + 1) % PRIME  # off the degree-t polynomial
        per_server = [{"x": sh[i]} for i in range(cfg.m)]  # signed as they are
        await input_evidence.send_shares(ctx, cfg, per_server, {"users": 2}, last=True, block=0)

    return submit


async def _refused_and_convicted(cfg, clients, why: str) -> None:
    results, net, _ = await run_in_process(cfg, SPECS, clients, collect=False)
    assert all(r["inconsistent_clients"] == ["victim"] for r in results), results
    metas = await _metas(net, cfg)
    for meta in metas:
        assert set(meta["input_faults"]) == {"victim"} and why in meta["input_faults"]["victim"]
        assert meta["rejected_clients"] == ["victim"]
    assert (
        mpc_inputs.check_round_evidence(
            net.public_keys, cfg.label, cfg.servers, cfg.threshold, metas
        )
        == 1
    )
    clients_out, guilty = mpc_inputs.check_evidence(
        net.public_keys, cfg.label, cfg.servers, cfg.threshold, metas[0]["input_evidence"]
    )
    assert set(clients_out) == {"victim"} and guilty == {}


@pytest.mark.parametrize("m,t", [(3, 1), (5, 2)])
async def test_a_client_whose_sharing_is_inconsistent_is_named(m, t):
    cfg = _cfg(m, t)
    await _refused_and_convicted(
        cfg, _clients(cfg, _inconsistent(cfg)), "signed openings of block 0 are not of degree"
    )


async def test_a_client_signing_an_opening_its_shares_do_not_give_is_named(monkeypatch):
    cfg = _cfg()
    real = input_commit.commit_block

    def lying(label, client, block, servers, t, per_server):
        salts, masks, digests, opened = real(label, client, block, servers, t, per_server)
        if client == "victim":  # a consistent opening vector, but not what s2's shares give
            shift = shamir.share(np.array([7, 7, 7]), len(servers), t)
            opened = [[(o + int(d)) % PRIME for o, d in zip(op, shift[j])]
                      for j, op in enumerate(opened)]  # fmt: skip
        return salts, masks, digests, opened

    monkeypatch.setattr(input_commit, "commit_block", lying)
    await _refused_and_convicted(cfg, _clients(cfg), "that its own shares to s0 do not give")


async def test_a_client_signing_two_different_statements_is_named():
    cfg = _cfg()

    async def equivocating(ctx):
        sh = shamir.share(VICTIM["x"], cfg.m, cfg.threshold)
        per_server = [{"x": sh[i]} for i in range(cfg.m)]
        for j, server in enumerate(cfg.servers):  # a fresh commitment (salts) per server
            salts, masks, digests, opened = input_commit.commit_block(
                cfg.label, ctx.name, 0, cfg.servers, cfg.threshold, per_server
            )
            body = {"client": ctx.name, "block": 0, "last": True, "digests": digests,
                    "open": opened}  # fmt: skip
            st = {"body": body, "sig": input_evidence._sign(
                ctx, mpc_inputs.STATEMENT_KIND, cfg.label.decode(), body)}  # fmt: skip
            ev = {"statement": st, "salt": salts[j], "mask": masks[j]}
            await wire.send_chunked(
                ctx, server, wire.MSG_SHARES, per_server[j], {"users": 2, "evidence": ev}
            )

    await _refused_and_convicted(cfg, _clients(cfg, equivocating), "two different statements")


@pytest.mark.parametrize("forgery", ["shares", "statement"])
async def test_a_server_forging_a_complaint_or_a_statement_is_named(monkeypatch, forgery):
    cfg = _cfg()
    real = input_evidence._entry

    def forged(ctx, cfg_, client, blocks):
        e = real(ctx, cfg_, client, blocks)
        if ctx.name != "s2" or client != "victim":
            return e
        arrays, meta = blocks[0]
        if forgery == "shares":  # reveals shares it never received
            e["complaint"] = {
                "block": 0,
                "salt": meta["evidence"]["salt"],
                "mask": meta["evidence"]["mask"],
                "batches": {"x": {"shape": [2, 1], "data": shamir.to_wire(arrays["x"] ^ 1)}},
            }
        else:  # a statement the client never signed
            e["statements"] = [dict(e["statements"][0], sig=bytes(64))]
        return e

    monkeypatch.setattr(input_evidence, "_entry", forged)
    results, net, _ = await run_in_process(cfg, SPECS, _clients(cfg), collect=False)
    for r in results:
        assert isinstance(r, input_evidence.InputAbort) and r.culprit == "s2", r
    meta = (await _metas(net, cfg))[0]
    _, guilty = mpc_inputs.check_evidence(
        net.public_keys, cfg.label, cfg.servers, 1, meta["input_evidence"]
    )
    assert set(guilty) == {"s2"}


async def test_evidence_altered_after_the_run_proves_nothing():
    cfg = _cfg()
    results, net, _ = await run_in_process(cfg, SPECS, _clients(cfg, _inconsistent(cfg)),
                                           collect=False)  # fmt: skip
    meta = (await _metas(net, cfg))[0]
    ev = codec.loads(codec.dumps(meta["input_evidence"]))
    ev["reports"][0]["report"]["clients"]["victim"]["complaint"] = {"block": 0}  # unsigned
    with pytest.raises(ValueError, match="not signed by them"):
        mpc_inputs.check_evidence(net.public_keys, cfg.label, cfg.servers, 1, ev)
    metas = [dict(meta, input_evidence={}) for _ in cfg.servers]
    with pytest.raises(ValueError, match="refused without signed evidence"):
        mpc_inputs.check_round_evidence(net.public_keys, cfg.label, cfg.servers, 1, metas)


async def test_honest_run_has_no_input_faults():
    cfg = _cfg()
    results, net, out = await run_in_process(cfg, SPECS, _clients(cfg))
    assert out is not None and out.rejected_clients == []
    assert all(r["inconsistent_clients"] == [] for r in results)


@pytest.fixture(scope="module")
def deviating_server_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """``sdp run`` in which server mpc-1 perturbs its input check of honest client-2."""
    run = tmp_path_factory.mktemp("deviating") / "run"
    proc = sdp(
        "run", "grr", "--shuffler", "mpc", "--users", "300", "--out", str(run), "--quiet",
        env={"SDP_FAULT_MPC_INPUT": "mpc-1:client-2:1"},
        timeout=300,
    )  # fmt: skip
    return run, proc


@pytest.fixture(scope="module")
def inconsistent_client_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """``sdp run`` in which client-2 deals an inconsistent sharing."""
    run = tmp_path_factory.mktemp("inconsistent") / "run"
    proc = sdp(
        "run", "grr", "--shuffler", "mpc", "--users", "600", "--param", "max_epsilon=3",
        "--out", str(run), "--quiet", env={"SDP_FAULT_MPC_CLIENT": "client-2"},
        timeout=300,
    )  # fmt: skip
    return run, proc


def test_a_deviating_server_in_the_input_check_is_named_by_sdp_run_and_verify(
    deviating_server_run,
):
    run, proc = deviating_server_run
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0, text
    assert "mpc-1 complained falsely against client-2" in text, text
    assert "refusing client-2" not in text and "traceback" not in text.lower(), text
    assert not (run / "result.json").exists()
    failed = json.loads((run / "ABORTED.json").read_text())["failed_parties"]
    for s in SERVERS:
        assert "mpc-1 complained falsely against client-2" in failed.get(s, ""), failed
    out = sdp("verify", str(run), "--json", timeout=300)
    report = json.loads(out.stdout)
    assert out.returncode != 0 and not report["ok"]
    evidence = [c for c in report["checks"] if c["name"] == "MPC input evidence"]
    assert evidence and all(c["ok"] for c in evidence), report["checks"]
    assert all("server mpc-1 deviated" in c["detail"] for c in evidence), evidence
    blame = ("client-2 signed an opening", "client-2 signed two", "client-2's signed openings")
    assert not any(b in c["detail"] for b in blame for c in evidence)


def test_an_inconsistent_client_is_named_by_sdp_run_and_verify(inconsistent_client_run):
    run, proc = inconsistent_client_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = json.loads((run / "result.json").read_text())
    assert res["mpc"]["rounds"][0]["rejected_clients"] == ["client-2"], res["mpc"]  # 300 of 600
    out = sdp("verify", str(run), "--json", timeout=300)
    report = json.loads(out.stdout)
    assert out.returncode == 0 and report["ok"], report
    (ev,) = [c for c in report["checks"] if c["name"] == "MPC input evidence"]
    assert ev["ok"] and ev["count"] == 1 and "1 client part" in ev["detail"], ev


def _js_v31_says(run: Path, words: str) -> None:
    """The JavaScript verifier's V-31 checks on ``run`` pass and each says ``words``."""
    verifier = Path(__file__).resolve().parents[1] / "verifier"
    js = subprocess.run(
        [shutil.which("node"), str(verifier / "verify.mjs"), str(run), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    v31 = [c for c in json.loads(js.stdout)["checks"] if c["id"] == "V-31"]
    assert v31 and all(c["ok"] and words in c["detail"] for c in v31), v31


class TestTheJavaScriptVerifierNamesTheSameParty:
    """V-31 in JS on the same two runs (node and the verifier's modules: ``NEEDS_NODE``)."""

    pytestmark = NEEDS_NODE

    def test_the_deviating_server(self, deviating_server_run):
        _js_v31_says(deviating_server_run[0], "server mpc-1 deviated")

    def test_the_inconsistent_client(self, inconsistent_client_run):
        _js_v31_says(inconsistent_client_run[0], "client-2 refused")
