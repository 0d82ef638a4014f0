"""Adversarial tests of the mix-net servers and the public verifier (issue 16, items 1, 5, 6, 7).

Each test mounts the attack against the real code path and asserts that it fails: refused by
the honest servers, or caught and named by the verifier, and nothing is published.
"""

from __future__ import annotations

import asyncio
import copy

import numpy as np
import pytest

from mpc import ristretto as R
from mpc.elgamal import reencrypt
from mpc.mixnet.record_verifier import verify_record
from mpc.mixnet.schema import Ciphertexts, MixnetShapeError
from parties.mixnet.analyzer import receive_result
from parties.mixnet.client import run_clients
from parties.mixnet.record import public_record
from parties.mixnet.server import run_mix_server
from parties.mixnet.state import MixnetConfig, ServerState
from parties.runtime.memlink import MemoryNetwork
from protocols.base import BatchSpec

SERVERS = ["mix1", "mix2", "mix3"]


def _cfg(session: str, specs=None, **kw) -> MixnetConfig:
    kw.setdefault("mix_patience", 4)
    return MixnetConfig(session, SERVERS, specs or [BatchSpec("attr0", 1, 8)], **kw)


async def _run(cfg: MixnetConfig, batches, tamper=None, timeout: float = 5.0):
    net = MemoryNetwork(cfg.servers + [cfg.clients, cfg.analyzer], timeout=timeout)
    tasks = [run_mix_server(net.context(s), cfg, i) for i, s in enumerate(cfg.servers, 1)]
    tasks.append(run_clients(net.context(cfg.clients), cfg, batches, tamper=tamper))
    tasks.append(_batches_of(receive_result(net.context(cfg.analyzer), cfg)))
    return await asyncio.gather(*tasks, return_exceptions=True)


async def _batches_of(result):
    """The analyzer's shuffled batches (``receive_result`` also returns the user count)."""
    return (await result)[0]


def _ms(a) -> list:
    return sorted(map(tuple, np.asarray(a).tolist()))


# ---------------------------------------------------------------- finding 1


def test_first_mixer_copying_one_client_is_refused_by_honest_servers(monkeypatch) -> None:
    """Server 1 outputs re-randomised copies of client u0's ciphertext (a valid-looking list
    whose plaintexts would reveal u0's message n times) with a proof for another input. The
    honest servers 2 and 3 verify the chain before they decrypt: they never produce a share of
    a list built on server 1's output, skip its step and decrypt the honest list."""
    import mpc.mixnet.mixing as mixing
    import parties.mixnet.decrypt as dec

    real = mixing.shuffle_and_prove
    evil_outputs: list[bytes] = []

    def copying_mixer(sess, step, batch, pk, ct, gens, *args, **kw):
        out, proof = real(sess, step, batch, pk, ct, gens, *args, **kw)
        if step == 1:  # n re-randomisations of ciphertext 0, published with the honest proof
            rs = [[R.random_scalar() for _ in range(ct.n)] for _ in range(ct.w)]
            out = reencrypt(
                pk, Ciphertexts([[c[0]] * ct.n for c in ct.a], [[c[0]] * ct.n for c in ct.b]), rs
            )
            evil_outputs.append(out.digest())
        return out, proof

    decrypted: dict[int, list[bytes]] = {}
    real_shares = dec.share_message

    def spy(sess, me, x, current, *args, **kw):
        decrypted.setdefault(me, []).append(current["attr0"].digest())
        return real_shares(sess, me, x, current, *args, **kw)

    monkeypatch.setattr(mixing, "shuffle_and_prove", copying_mixer)
    monkeypatch.setattr(dec, "share_message", spy)
    cfg = _cfg("attack-copy-first-mixer")
    rows = np.array([[7]] + [[v % 7] for v in range(11)])  # u0 sends 7, nobody else does
    res = asyncio.run(_run(cfg, {"attr0": rows}))
    honest = [res[1], res[2]]
    assert all(isinstance(st, ServerState) for st in honest), honest
    assert evil_outputs
    for me in (2, 3):  # no honest share of anything built on the copied list
        assert decrypted.get(me), f"server {me} never decrypted"
    honest_mixes = [[m["server"] for m in st.mixes] for st in honest]
    assert honest_mixes == [[2, 3], [2, 3]]
    assert all(any("server 1 mix rejected" in f for f in st.faults) for st in honest)
    assert _ms(res[-1]["attr0"]) == _ms(rows)  # the analyzer sees u0's 7 exactly once
    done = [st for st in honest if st.delegated is None]
    rec = public_record(done[0])
    assert rec["decryption_set"] == [2, 3] and verify_record(rec).ok


def test_no_switch_turns_chain_verification_off() -> None:
    with pytest.raises(TypeError):
        MixnetConfig("s", SERVERS, [BatchSpec("a", 1, 2)], verify_mixes=False)  # type: ignore[call-arg]


# ---------------------------------------------------------------- finding 5


@pytest.fixture(scope="module")
def honest_run() -> tuple[dict, list[ServerState]]:
    cfg = _cfg("labels-run")
    rows = np.random.default_rng(3).integers(0, 8, (6, 1))
    res = asyncio.run(_run(cfg, {"attr0": rows}))
    assert all(isinstance(r, ServerState) for r in res[:3]), res
    rec = public_record(res[0])
    assert verify_record(rec).ok
    return rec, list(res[:3])


def _forge(run: tuple[dict, list[ServerState]], labels: list) -> dict:
    """A record whose mix steps carry ``labels``: every step is really proven under its label
    (as colluding servers can do) and the list is really decrypted by the decryption set, so
    only the labels can give it away."""
    from mpc.mixnet.decryption import check_share_message, combine, digest_all, share_message
    from mpc.mixnet.mixing import ShuffleGenerators, accepted_inputs, mix_step, step_outputs

    rec, states = run
    st = states[0]
    bad = copy.deepcopy(rec)
    current = accepted_inputs(rec["submissions"], rec["accepted"], {"attr0": 1})
    gens, steps = ShuffleGenerators(st.sess), []
    for lab in labels:
        step = mix_step(st.sess, lab, st.dkg.pk, current, gens)
        steps.append(step)
        current = step_outputs(step)
    dset = rec["decryption_set"]
    msgs = {
        j: share_message(st.sess, j, states[j - 1].dkg.x, current, dset, digest_all(current))
        for j in dset
    }
    valid = {
        j: check_share_message(st.sess, st.dkg.vks, current, j, msgs[j], dset)[0] for j in dset
    }
    rows, ok = combine(current, dset, valid, {"attr0": (1, 8)})["attr0"]
    bad["mixes"] = steps
    bad["decryption"] = {"attr0": {j: msgs[j]["batches"]["attr0"] for j in dset}}
    bad["plaintexts"] = {"attr0": [r.tolist() if v else None for r, v in zip(rows, ok)]}
    return bad


def test_forged_records_verify_apart_from_the_labels(honest_run) -> None:
    rep = verify_record(_forge(honest_run, [1, 2, 3]))
    assert rep.ok, rep.first_failure


@pytest.mark.parametrize(
    "labels,words",
    [
        ([1, 1, 3], "distinct and increasing"),
        ([0, 2, 3], "servers 1..3"),
        ([1, 2, 7], "servers 1..3"),
        ([3, 2, 1], "distinct and increasing"),
        ([1], "did not mix"),
        ([1, 1, 1], "distinct and increasing"),
    ],
    ids=["repeated", "zero", "7-of-3", "decreasing", "single-mixer", "one-server-thrice"],
)
def test_verifier_checks_who_mixed(honest_run, labels, words) -> None:
    rep = verify_record(_forge(honest_run, labels))
    assert not rep.ok
    assert rep.first_failure.startswith("mixers:") and words in rep.first_failure, rep.first_failure


def test_a_bool_label_is_not_a_server(honest_run) -> None:
    bad = copy.deepcopy(honest_run[0])
    bad["mixes"][0]["server"] = True
    rep = verify_record(bad)
    assert not rep.ok and "servers 1..3" in rep.first_failure, rep.first_failure


def test_verifier_refuses_decryption_by_a_server_that_did_not_mix(honest_run) -> None:
    bad = copy.deepcopy(honest_run[0])
    bad["mixes"] = [m for m in bad["mixes"] if m["server"] != bad["decryption_set"][1]]
    rep = verify_record(bad)
    assert not rep.ok and "did not mix" in rep.first_failure, rep.first_failure


@pytest.mark.parametrize("k,t", [(3, 1), (1, 1), (2, 3), (3, 0)], ids=["t=1", "k=1", "t>k", "t=0"])
def test_verifier_refuses_degenerate_shapes(honest_run, k, t) -> None:
    bad = copy.deepcopy(honest_run[0])
    bad["params"]["k"], bad["params"]["t"] = k, t
    bad["params"]["servers"] = bad["params"]["servers"][:k]
    rep = verify_record(bad)
    assert not rep.ok and rep.first_failure.startswith("record: malformed params"), (
        rep.first_failure
    )


@pytest.mark.parametrize(
    "k,t", [(3, 1), (1, 1), (1, 2), (2, 3)], ids=["t=1", "k=1", "k=1,t=2", "t>k"]
)
def test_config_and_plan_refuse_degenerate_shapes(k: int, t: int) -> None:
    from parties.mixnet.plan import MixnetPlan

    with pytest.raises(MixnetShapeError, match="mix-net"):
        MixnetConfig("s", [f"m{i}" for i in range(k)], [BatchSpec("a", 1, 2)], t=t)
    with pytest.raises(ValueError, match="mix-net"):
        MixnetPlan().layout({"mix_servers": k, "threshold": t})


# ---------------------------------------------------------------- finding 6


def test_copying_a_victims_a_component_does_not_censor_the_victim() -> None:
    """The attacker sees the victim's ciphertext first and submits, under its own id and
    before the victim, a ciphertext with the victim's ``a`` and its own ``b`` (with a valid
    proof). The victim must still be accepted."""
    from mpc.elgamal import encode_rows, encrypt_points
    from mpc.mixnet.proofs.client_pok import client_prove

    def attack(subs, sess, pk):
        victim = subs[0]
        ct, rs = encrypt_points(pk, encode_rows(np.array([[1]]), 8))
        a, b = list(victim["ct"]["a"]), [ct.b[0][0]]
        proof = client_prove(sess, "mallory", "attr0", 0, a, b, [rs[0][0]])
        copy_a = {
            "client": "mallory",
            "batch": "attr0",
            "index": 0,
            "ct": {"a": a, "b": b},
            "proof": proof,
        }
        return [copy_a] + list(subs)

    cfg = _cfg("attack-copy-a")
    rows = np.array([[5], [1], [2], [3]])
    res = asyncio.run(_run(cfg, {"attr0": rows}, tamper=attack))
    st = next(r for r in res[:3] if isinstance(r, ServerState) and r.delegated is None)
    rec = public_record(st)
    victim = next(i for i, s in enumerate(rec["submissions"]) if s["client"] == "u0")
    assert victim in rec["accepted"]["attr0"], rec["rejected"]
    assert not [r for r in rec["rejected"] if r["client"] == "u0"]
    assert verify_record(rec).ok
    # the victim's message reached the analyzer; the copy decrypts to no valid row
    assert _ms(res[-1]["attr0"]) == _ms(rows)


# ---------------------------------------------------------------- finding 7


def test_a_batch_with_no_accepted_submission_completes_and_verifies() -> None:
    """Every submission of batch ``attr1`` is dropped (e.g. all rejected): decryption, the
    record and the public verifier skip the empty batch instead of crashing."""
    specs = [BatchSpec("attr0", 1, 8), BatchSpec("attr1", 2, 5)]
    cfg = _cfg("empty-batch", specs)
    rng = np.random.default_rng(1)
    batches = {"attr0": rng.integers(0, 8, (5, 1)), "attr1": rng.integers(0, 5, (4, 2))}

    def drop_attr1(subs, sess, pk):
        return [s for s in subs if s["batch"] != "attr1"]

    res = asyncio.run(_run(cfg, batches, tamper=drop_attr1))
    for r in res:
        assert not isinstance(r, BaseException), r
    assert _ms(res[-1]["attr0"]) == _ms(batches["attr0"])
    assert res[-1]["attr1"].shape[0] == 0
    rec = public_record(next(r for r in res[:3] if r.delegated is None))
    assert rec["decryption"]["attr1"] == {} and rec["plaintexts"]["attr1"] == []
    rep = verify_record(rec)
    assert rep.ok, rep.first_failure
    bad = copy.deepcopy(rec)
    bad["plaintexts"]["attr1"] = [[1, 1]]
    rep = verify_record(bad)
    assert not rep.ok and "empty batch" in rep.first_failure
