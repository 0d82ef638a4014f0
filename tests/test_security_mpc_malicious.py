"""Issue 25 items 1-3: the MPC shuffler is secure with abort against a malicious minority.

Attacks mounted on the real code path (``shuffler.server_run`` on in-process MPyC-compatible
runtimes, ``mpc.permute_reshare.outgoing_reshares`` replaced for ONE server):
* the review's attack: a deviating server adds an offset to a chosen client's row while it
  reshares; in semi-honest mode (the only mode on 27f5c45) the tagged value comes out exactly
  and the run completes; in malicious-abort mode every server aborts naming the MAC check and
  nothing reaches the analyzer;
* a server that duplicates a row (maps its shares by a non-permutation): the multiset check
  (and the MAC check) abort;
* a client whose sharing is not of degree <= t: refused, named, its rows counted as rejected.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _mpc_helpers import (
    grr_mpc_run,
    honest_client,
    raw_client,
    raw_outputs,
    run_in_process,
    sent_outputs,
)

from mpc import mac_check, shamir
from mpc import permute_reshare as perm_mod
from mpc.shamir import PRIME
from parties.mpc_shuffle import input_evidence, malicious, wire
from protocols.base import BatchSpec

SPECS = [BatchSpec("x", 1, 8)]
EVIL = 1  # the deviating server's MPyC pid
OFFSET = 1000  # moves the victim's value out of the domain, exactly x + 1000


def _cfg(security: str, multiset: bool = False) -> wire.MPCShufflerConfig:
    return wire.MPCShufflerConfig(
        servers=("s0", "s1", "s2"),
        analyzer="an",
        clients=("victim", "other"),
        security=security,
        multiset=multiset,
        timeout=20.0,
    )


VICTIM = {"x": np.array([[5]], dtype=np.int64)}
OTHER = {"x": np.array([[1], [2], [3], [1], [0]], dtype=np.int64)}


def _evil_reshares(monkeypatch, kind: str) -> list[int]:
    """Replace ``outgoing_reshares`` for server EVIL, first coalition it is in; returns a
    list that records the attacks mounted."""
    orig = perm_mod.outgoing_reshares
    mounted: list[int] = []

    def evil(arrays, pid, coalition, seed, m, t, run_label, **kw):
        if pid == EVIL and not mounted:
            arrays = {k: v.copy() for k, v in arrays.items()}
            a = arrays["x"]
            if kind == "offset":  # + OFFSET on the victim's row (row 0), value column only
                lam = int(
                    shamir.lagrange_coefficients([c + 1 for c in coalition])[coalition.index(pid)]
                )
                a[0, 0] = (int(a[0, 0]) + OFFSET * pow(lam, PRIME - 2, PRIME)) % PRIME
            else:  # duplicate: row 2 (values and tags) replaced by row 1
                a[2] = a[1]
            mounted.append(pid)
        return orig(arrays, pid, coalition, seed, m, t, run_label, **kw)

    monkeypatch.setattr(perm_mod, "outgoing_reshares", evil)
    return mounted


async def _run(cfg, clients: dict, *, raw: bool = False):
    results, net, out = await run_in_process(cfg, SPECS, clients, collect=not raw)
    sent = sent_outputs(net, cfg)
    if raw and not any(isinstance(r, BaseException) for r in results):
        out = await raw_outputs(net, cfg, "x")
    return results, sent, out


def _honest(cfg, data):
    return honest_client(cfg, SPECS, data)


async def test_offset_attack_reads_the_victim_in_semi_honest_mode(monkeypatch):
    """What the review showed on 27f5c45 (semi-honest only): the run completes and the
    victim's value comes out exactly, shifted by the attacker's offset."""
    cfg = _cfg("semi-honest")
    mounted = _evil_reshares(monkeypatch, "offset")
    clients = {"victim": _honest(cfg, VICTIM), "other": _honest(cfg, OTHER)}
    results, _, values = await _run(cfg, clients, raw=True)
    assert mounted == [EVIL]
    assert not any(isinstance(r, BaseException) for r in results)
    assert 5 + OFFSET in values.tolist()  # the tagged victim value: x = 5 read off


async def _every_server_aborts(cfg, mounted: list, evil: list, words: str) -> list:
    """Two honest clients against the deviation mounted by ``evil``: every server aborts
    naming ``words`` and no output share reaches the analyzer; the servers' exceptions."""
    clients = {"victim": _honest(cfg, VICTIM), "other": _honest(cfg, OTHER)}
    results, sent, _ = await _run(cfg, clients)
    assert mounted == evil
    for r in results:
        assert isinstance(r, malicious.MaliciousAbort), r
        assert words in str(r)
    assert sent == 0  # no output share reached the analyzer
    return results


async def test_offset_attack_aborts_on_the_mac_check_and_opens_nothing(monkeypatch):
    cfg = _cfg("malicious-abort")
    mounted = _evil_reshares(monkeypatch, "offset")
    # every server, honest ones included, aborts naming the MAC check
    results = await _every_server_aborts(cfg, mounted, [EVIL], "MAC check on batch 'x'")
    assert all("nothing is opened" in str(r) for r in results)


@pytest.mark.parametrize("multiset", [False, True])
async def test_duplicated_row_aborts_on_the_mac_and_multiset_checks(monkeypatch, multiset):
    """A non-permutation (row 2 replaced by row 1 in one server's additive share): an
    additive error on values and tags that is not alpha-consistent, so the MAC check alone
    catches it (the default); with ``mpc_multiset`` the multiset check fails too."""
    cfg = _cfg("malicious-abort", multiset)
    mounted = _evil_reshares(monkeypatch, "duplicate")
    results = await _every_server_aborts(cfg, mounted, [EVIL], "MAC check on batch 'x'")
    assert all(("multiset check on batch 'x'" in str(r)) == multiset for r in results)


def _inconsistent_client(cfg):
    async def submit(ctx):
        sh = shamir.share(VICTIM["x"], cfg.m, cfg.threshold)
        sh[2, 0, 0] = (sh[2, 0, 0] + 1) % PRIME  # server 2's share is off the degree-1 line
        per_server = [{"x": sh[i]} for i in range(cfg.m)]  # signed as they are
        await input_evidence.send_shares(ctx, cfg, per_server, {"users": 1}, last=True, block=0)

    return submit


async def test_inconsistent_client_sharing_is_refused_and_named(caplog):
    cfg = _cfg("malicious-abort")
    clients = {"victim": _inconsistent_client(cfg), "other": _honest(cfg, OTHER)}
    results, _, out = await _run(cfg, clients)
    assert all(r["inconsistent_clients"] == ["victim"] for r in results)
    assert out.rejected_clients == ["victim"] and out.invalid == {"x": 1}
    assert sorted(out.batches["x"][:, 0].tolist()) == sorted(OTHER["x"][:, 0].tolist())
    assert "refusing victim: victim's signed openings of block 0 are not of degree <= 1" in (
        caplog.text
    )


async def test_inconsistent_client_sharing_was_used_in_semi_honest_mode():
    cfg = _cfg("semi-honest")
    clients = {"victim": _inconsistent_client(cfg), "other": _honest(cfg, OTHER)}
    _, _, out = await _run(cfg, clients)
    assert out.rejected_clients == []  # accepted: its value depends on who reshared it


async def test_honest_malicious_run_records_its_check_shares():
    cfg = _cfg("malicious-abort", multiset=True)
    clients = {"victim": _honest(cfg, VICTIM), "other": _honest(cfg, OTHER)}
    _, net, _ = await run_in_process(cfg, SPECS, clients, collect=False)
    metas = []
    for s in cfg.servers:
        _, meta = await wire.recv_chunked(net.context(cfg.analyzer), s, wire.MSG_OUTPUT, s)
        metas.append(meta)
    assert {m["security"] for m in metas} == {"malicious-abort"}
    for key in ("mac", "multiset"):
        stack = np.array([m["checks"][key]["x"] for m in metas], dtype=np.int64)
        assert stack.shape == (3, mac_check.MAC_KEYS if key == "mac" else 1)
        assert shamir.consistent(stack, 1).all()
        assert (shamir.reconstruct(stack[:2], [0, 1]) == 0).all()


def test_tags_stack_and_split_back():
    x = np.arange(12, dtype=np.int64).reshape(4, 3)
    tags = np.arange(36, dtype=np.int64).reshape(3, 4, 3) + 100
    v, t = mac_check.split_tags(mac_check.stack_tags(x, tags), 3)
    np.testing.assert_array_equal(v, x)
    np.testing.assert_array_equal(t, tags)


def test_soundness_bounds():
    assert mac_check.mac_soundness_bits() > 89.99  # (2/p)^3 ~ 2^-90 with three keys
    assert mac_check.INPUT_CHECK_REPETITIONS * np.log2(PRIME) > 92


def test_unknown_security_mode_is_refused():
    with pytest.raises(ValueError, match="security must be one of"):
        _cfg("paranoid")


# ------------------------------------------------------------- sdp run / sdp verify (item 2, 3)


def _run_dir(tmp_path_factory, security: str):
    run = tmp_path_factory.mktemp(f"mpc-{security}") / "run"
    return grr_mpc_run(run, "--param", f"security={security}")


@pytest.fixture
def malicious_run(mpc_grr_run):
    """A run in the default mode, malicious-abort (the session's shared GRR run over MPC)."""
    return mpc_grr_run


def test_malicious_run_names_its_mode_and_verify_rechecks_the_opened_values(malicious_run):
    import json
    import re

    from conftest import sdp

    res = json.loads((malicious_run / "result.json").read_text())
    assert res["mpc"]["security"] == "malicious-abort"
    assert "malicious-abort" in res["privacy"]["shuffler_security"]
    out = sdp("verify", str(malicious_run), timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"MPC abort checks\s*│\s*pass", out.stdout), out.stdout
    assert "honest majority" in out.stdout + out.stderr


def test_semi_honest_is_an_explicit_option(tmp_path_factory):
    import json

    from conftest import sdp

    run = _run_dir(tmp_path_factory, "semi-honest")
    res = json.loads((run / "result.json").read_text())
    assert res["mpc"]["security"] == "semi-honest"
    assert "semi-honest" in res["privacy"]["shuffler_security"]
    out = sdp("verify", str(run), timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no checks (semi-honest mode" in out.stdout


def _metas_of(run) -> list[dict]:
    import json

    import tomllib

    from parties.verify.mpc_outputs import server_outputs
    from parties.verify.transcripts import Transcript

    cluster = tomllib.loads((run / "cluster.toml").read_text())
    servers = [p["name"] for p in cluster["party"] if p["role"] == "mpc-server"]
    metas = []
    for s in servers:
        lines = (run / "transcripts" / f"{s}.jsonl").read_text().splitlines()
        tr = Transcript(s, [json.loads(x) for x in lines])
        metas.append(server_outputs(run, tr, "analyzer")[0][1])
    return metas, servers


def test_verifier_refuses_a_nonzero_mac_check_value(malicious_run):
    import copy

    from parties.verify.mpc_outputs import OutputMismatch, check_abort_checks

    metas, servers = _metas_of(malicious_run)
    assert check_abort_checks(0, metas, servers, 1, "malicious-abort") > 0
    # a run whose MAC check opened a non-zero value must not have been published: shift
    # every server's share by the same amount (still consistent, opens to 5)
    forged = copy.deepcopy(metas)
    for m in forged:
        m["checks"]["mac"]["reports"][0] = (m["checks"]["mac"]["reports"][0] + 5) % PRIME
    with pytest.raises(OutputMismatch, match="MAC check of batch 'reports' opens to a non-zero"):
        check_abort_checks(0, forged, servers, 1, "malicious-abort")
    # one server's share off the polynomial
    forged = copy.deepcopy(metas)
    forged[2]["checks"]["mac"]["reports"][0] += 1
    with pytest.raises(OutputMismatch, match="MAC check of batch 'reports' do not lie"):
        check_abort_checks(0, forged, servers, 1, "malicious-abort")
    # a run asked for the multiset check (mpc_multiset) but recorded none
    with pytest.raises(OutputMismatch, match="no multiset check values"):
        check_abort_checks(0, metas, servers, 1, "malicious-abort", multiset=True)
    # the servers ran semi-honest while the cluster asked for malicious-abort
    forged = copy.deepcopy(metas)
    for m in forged:
        m["security"] = "semi-honest"
    with pytest.raises(OutputMismatch, match="ran security 'semi-honest'"):
        check_abort_checks(0, forged, servers, 1, "malicious-abort")


async def test_deviation_in_the_histogram_counting_aborts(monkeypatch):
    """A server that adds an error to its share of a power's product (value only) while the
    histogram counts are computed: the counting's MAC check aborts before anything is opened."""
    from parties.mpc_shuffle import secure_ops

    orig = secure_ops.secure_mul
    mounted = []

    async def evil_mul(rt, a, b):
        if rt.pid == EVIL and a.ndim == 4 and not mounted:  # the powers' products (k, 1+K, n, w)
            a = a.copy()
            a[:, 0, 0, 0] = (a[:, 0, 0, 0] + 1) % PRIME
            mounted.append(rt.pid)
        return await orig(rt, a, b)

    monkeypatch.setattr(secure_ops, "secure_mul", evil_mul)
    cfg = wire.MPCShufflerConfig(
        servers=("s0", "s1", "s2"),
        analyzer="an",
        clients=("victim", "other"),
        mode="histogram",
        timeout=20.0,
    )
    await _every_server_aborts(cfg, mounted, [EVIL], "histogram counting on batch 'x'")


async def test_out_of_domain_rows_are_never_opened_in_open_mode():
    """A malicious client submits raw out-of-domain field elements: in malicious-abort mode
    the servers find them on shares (pass/fail only) and leave them out of the output."""
    cfg = _cfg("malicious-abort")

    rows = np.array([[4], [123456], [7]], dtype=np.int64)  # 123456 is out of [0, 8)
    clients = {"victim": raw_client(cfg, "x", rows), "other": _honest(cfg, OTHER)}
    _, net, _ = await run_in_process(cfg, SPECS, clients, collect=False)
    values = await raw_outputs(net, cfg, "x")  # everything the servers sent
    assert 123456 not in values.tolist() and len(values) == 7
    assert sorted(values.tolist()) == sorted([4, 7, *OTHER["x"][:, 0].tolist()])


BIG = [BatchSpec("x", 1, 1000)]  # a bound above max_domain (64): no affordable domain check


async def test_out_of_domain_value_with_a_large_bound_is_only_a_clients_own():
    """Item 2 for bounds > max_domain, where no affordable domain check on shares exists: the
    batch is opened as it is, but only after the shuffle's MAC check, so the one out-of-domain
    value that comes out is the malicious client's own submission (counted invalid by the
    analyzer), never an honest user's value moved by a server."""
    rows = np.array([[4], [123456], [7]], dtype=np.int64)  # 123456 is out of [0, 1000)
    cfg = _cfg("malicious-abort")  # the client party named "victim" is the liar here
    clients = {"victim": raw_client(cfg, "x", rows), "other": honest_client(cfg, BIG, OTHER)}
    results, net, out = await run_in_process(cfg, BIG, clients)
    assert not any(isinstance(r, BaseException) for r in results), results
    assert out is not None and out.invalid["x"] == 1  # the liar's own value, counted invalid


async def test_offset_attack_on_a_large_bound_batch_aborts_before_opening(monkeypatch):
    """The review's offset attack on a batch with a bound above max_domain: the MAC check
    catches it before anything is opened, so the victim's value never comes out."""
    cfg = _cfg("malicious-abort")
    mounted = _evil_reshares(monkeypatch, "offset")
    clients = {"victim": honest_client(cfg, BIG, VICTIM), "other": honest_client(cfg, BIG, OTHER)}
    results, net, _ = await run_in_process(cfg, BIG, clients, collect=False)
    assert mounted == [EVIL]
    for r in results:
        assert isinstance(r, malicious.MaliciousAbort), r
        assert "MAC check on batch 'x'" in str(r)
    assert sent_outputs(net, cfg) == 0


def test_large_bound_in_malicious_open_mode_runs_and_verifies(tmp_path):
    from conftest import sdp

    out = tmp_path / "run"
    sdp("run", "splitmix-sum", "--shuffler", "mpc", "--users", "50", "--out", str(out),
        "--quiet", check=True)  # fmt: skip
    res = json.loads((out / "result.json").read_text())
    assert res["verified"] and res["privacy"]["total"]
    assert res["messages"]["shares"] == 50 * res["privacy"]["shares"]  # all through the MPC


@pytest.mark.parametrize("who", ["member", "outside"])
async def test_deviation_in_the_tag_terms_aborts(monkeypatch, who):
    """The tags' GRR98 terms (``malicious.tag_batches``): a member of the first coalition adds
    an error to the term it adds in the shuffle's first round, or the server outside it to
    the term it reshares: an additive error on a tag, caught by the MAC check."""
    mounted: list[int] = []
    if who == "member":  # server 1, in the first coalition (0, 1)
        orig = perm_mod.outgoing_reshares

        def evil(arrays, pid, coalition, seed, m, t, run_label, **kw):
            if pid == EVIL and kw.get("addend") is not None and not mounted:
                kw["addend"] = {k: v.copy() for k, v in kw["addend"].items()}
                kw["addend"]["x"][0, 1] = (int(kw["addend"]["x"][0, 1]) + 1) % PRIME
                mounted.append(pid)
            return orig(arrays, pid, coalition, seed, m, t, run_label, **kw)

        monkeypatch.setattr(perm_mod, "outgoing_reshares", evil)
    else:  # server 2, outside it
        orig_share = malicious.share_from

        async def evil_share(rt, senders, value, shape):
            if rt.pid == 2 and value is not None and shape[0] == mac_check.MAC_KEYS:
                value = value.copy()
                value[0, 0] = (value[0, 0] + 1) % PRIME
                mounted.append(rt.pid)
            return await orig_share(rt, senders, value, shape)

        monkeypatch.setattr(malicious, "share_from", evil_share)
    cfg = _cfg("malicious-abort")
    evil = [EVIL if who == "member" else 2]
    await _every_server_aborts(cfg, mounted, evil, "MAC check on batch 'x'")


def test_the_multiset_check_is_an_option_that_verify_rechecks(tmp_path):
    import json

    from conftest import sdp

    run = grr_mpc_run(tmp_path / "run", "--param", "mpc_multiset=on")
    res = json.loads((run / "result.json").read_text())
    assert "and a multiset check" in res["mpc"]["trust"]
    out = sdp("verify", str(run), "--json", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert checks["MPC abort checks"]["ok"]
    assert "the MAC and multiset checks open to 0" in checks["MPC abort checks"]["detail"]
