"""Issue 25 item 4 (review N1): a client party cannot occupy another party's client ids.

Client party ``client-1`` (listed first) submits messages under the ids ``client-2`` uses for
its users. On 27f5c45 the servers accepted them first and then rejected ``client-2``'s genuine
messages as a "replayed message index", so the attacker's rows replaced the victim's. Now every
id is namespaced by the submitting party (the TLS peer a server received it from): the proof is
checked for, and replays keyed on, ``party/id``, so the attacker's rows are its own and the
victim's are accepted; the public verifier recomputes the same from the record.

The trusted and MPC shufflers have no per-message ids: each server keys what it receives by the
authenticated peer (``node.recv(client, ...)``), so there is no id to occupy.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mpc.elgamal import encode_rows, encrypt_points
from mpc.mixnet import schema
from mpc.mixnet.proofs.client_pok import client_prove
from mpc.mixnet.record_verifier import verify_record
from parties.mixnet.analyzer import receive_result
from parties.mixnet.client import run_clients
from parties.mixnet.record import public_record
from parties.mixnet.server import run_mix_server
from parties.mixnet.state import MixnetConfig, ServerState
from parties.runtime.memlink import MemoryNetwork
from protocols.base import BatchSpec

SERVERS = ["mix1", "mix2", "mix3"]
CLIENTS = ["client-1", "client-2"]
# the strongest binding the attacker can produce on its own channel (27f5c45: the raw id)
_bind = getattr(schema, "bound_client_id", lambda party, cid: cid)


def _run_two_parties(cfg, batches, owners, attack):
    net = MemoryNetwork(cfg.servers + CLIENTS + [cfg.analyzer], timeout=5.0)

    async def main():
        tasks = [run_mix_server(net.context(s), cfg, i) for i, s in enumerate(cfg.servers, 1)]
        tasks.append(run_clients(net.context("client-1"), cfg, batches[0], owners[0], attack))
        tasks.append(run_clients(net.context("client-2"), cfg, batches[1], owners[1]))
        tasks.append(receive_result(net.context(cfg.analyzer), cfg))
        return await asyncio.gather(*tasks, return_exceptions=True)

    return asyncio.run(main())


@pytest.mark.parametrize("style", ["old-plan ids", "local ids"])
def test_a_party_submitting_under_anothers_ids_does_not_replace_the_victim(style: str) -> None:
    victim_ids = [f"client-2/u{i}" if style == "old-plan ids" else f"u{i}" for i in range(3)]
    victim_rows = np.array([[5], [6], [7]])

    def occupy(subs, sess, pk):  # client-1's rows all sent under client-2's ids, index 0
        forged = []
        for cid in victim_ids:
            ct, rs = encrypt_points(pk, encode_rows(np.array([[0]]), 8))
            a, b = ct.row(0)
            proof = client_prove(sess, _bind("client-1", cid), "attr0", 0, a, b, [rs[0][0]])
            forged.append(
                {
                    "client": cid,
                    "batch": "attr0",
                    "index": 0,
                    "ct": {"a": a, "b": b},
                    "proof": proof,
                }
            )
        return forged

    cfg = MixnetConfig(
        f"occupy-{style}",
        SERVERS,
        [BatchSpec("attr0", 1, 8)],
        clients="client-1",
        client_parties=CLIENTS,
        mix_patience=4,
    )
    res = _run_two_parties(
        cfg,
        [{"attr0": np.array([[1]])}, {"attr0": victim_rows}],
        [None, {"attr0": victim_ids}],
        occupy,
    )
    states = [r for r in res[:3] if isinstance(r, ServerState)]
    assert len(states) == 3, res
    rec = public_record(next(st for st in states if st.delegated is None))
    assert [p["party"] for p in rec["inputs"]] == CLIENTS
    victims = [r for r in rec["rejected"] if r["index"] >= rec["inputs"][0]["count"]]
    assert not victims, f"client-2's genuine messages were rejected: {victims}"
    assert verify_record(rec).ok
    shuffled, users = res[-1]
    got = sorted(shuffled["attr0"][:, 0].tolist())
    assert [5, 6, 7] == [v for v in got if v >= 5]  # the victim's rows reached the analyzer
    assert got.count(0) == 3  # the attacker's rows count as its own ids, once each
