"""Seed 001 secure GS: site A and site B over memlink equal the centralized reference."""

import asyncio

import numpy as np
import pytest

from parties.runtime.memlink import MemoryNetwork
from parties.txpub.gs_sites import run_gs_two_sites, site_a, site_b
from protocols.txpub.data import load_fimi
from protocols.txpub.metrics import iteration_costs
from protocols.txpub.model import TxData, theta
from protocols.txpub.plaintext import gs_plain, reference_counts


def _small(seed=7, n=60, m=6):
    rng = np.random.default_rng(seed)
    return TxData(rng.random((n, m)) < rng.uniform(0.1, 0.5, m), m // 2)


def test_secure_gs_equals_reference_and_plain():
    d = _small()
    eps, delta = np.log(1.4), 0.5
    ref = reference_counts(d, eps, delta)
    sec = run_gs_two_sites(d, eps, delta, key_bits=512)
    plain = gs_plain(d, eps, delta)
    assert sec["lm"]["converged"]
    assert np.abs(sec["counts_real"] - ref).max() <= 1e-6 * ref.max()
    assert np.abs(sec["counts_real"] - plain["counts_real"]).max() <= 1e-6 * ref.max()
    assert sec["feasible"]["ok"]
    costs = iteration_costs(sec["history"])
    assert costs["bytes_median"] > 0 and costs["gram_protocol_calls_median"] == 1
    assert any(k.startswith("B:lm:") for k in sec["ledger"])
    assert sec["protocol_A"]["encryptions"] > 0 and sec["protocol_B"]["exponentiations"] > 0


def test_secure_paper_mode_runs_and_x_form():
    d = _small(3, 60, 4)
    sec = run_gs_two_sites(d, np.log(1.4), 0.5, key_bits=512, mode="fb", form="x")
    ref = reference_counts(d, np.log(1.4), 0.5)
    assert np.abs(sec["counts_real"] - ref).max() <= 1e-6 * ref.max()
    pap = run_gs_two_sites(d, np.log(1.4), 0.5, key_bits=512, mode="paper", max_iter=8)
    assert pap["lm"]["mode"] == "paper"


def test_mismatched_transactions_are_rejected():
    net = MemoryNetwork(["A", "B"], timeout=1)

    async def go():
        return await asyncio.gather(
            site_a(
                net.context("A"),
                np.ones((10, 2), bool),
                theta(0.3, 0.5),
                key_bits=512,
            ),
            site_b(net.context("B"), np.ones((11, 2), bool)),
            return_exceptions=True,
        )

    ra, _ = asyncio.run(go())
    assert isinstance(ra, ValueError) and "transactions" in str(ra)


@pytest.mark.slow
def test_secure_gs_fimi_2000x20_equals_reference():
    d = load_fimi(n=2000, m=20)
    eps, delta = 0.336, 0.5
    ref = reference_counts(d, eps, delta)
    sec = run_gs_two_sites(d, eps, delta, key_bits=2048, workers=2)
    assert sec["lm"]["converged"]
    assert np.abs(sec["counts_real"] - ref).max() <= 1e-6 * ref.max()


def test_publication_sample_matches_counts_and_ls_sites():
    from parties.txpub.publish import ls_site_a, ls_site_b

    d = _small(5, 50, 4)
    sec = run_gs_two_sites(d, np.log(2.0), 0.8, key_bits=512)
    pub = sec["published"]
    assert (pub["table"].sum(axis=0) == sec["counts"]).all()
    assert (np.diff(pub["ids"]) > 0).all()
    net = MemoryNetwork(["A", "B"], timeout=10)

    async def go():
        return await asyncio.gather(
            ls_site_a(net.context("A"), d.site("A"), np.log(2.0), 0.8, d.ids, seed=1),
            ls_site_b(net.context("B"), d.site("B"), np.log(2.0), 0.8, d.ids, seed=1),
        )

    ra, rb = asyncio.run(go())
    assert (
        ra.published["table"].sum(axis=0) == np.concatenate([ra.counts_floor, rb.counts_floor])
    ).all()


def test_party_main_roles_over_memlink():
    from parties.txpub.entry import PARTY_DEFAULTS, party_main
    from protocols.txpub.data import load_dataset

    params = {
        "dataset": "synthetic",
        "transactions": 150,
        "items": 6,
        "epsilon": 0.336,
        "delta": 0.5,
        "key_bits": 512,
    }
    net = MemoryNetwork(["A", "B"], timeout=30)

    async def go():
        return await asyncio.gather(
            party_main(net.context("A"), "A", params), party_main(net.context("B"), "B", params)
        )

    ra, rb = asyncio.run(go())
    d = load_dataset({**PARTY_DEFAULTS, **params})
    ref = np.floor(reference_counts(d, 0.336, 0.5) + 1e-9)
    assert np.abs(np.array(ra["counts"]) - ref).max() <= 1
    assert ra["feasible"]["ok"] and ra["counts"][3:] == rb["counts_own"]
    with pytest.raises(ValueError, match="unknown parameters"):
        asyncio.run(party_main(net.context("A"), "A", {"bogus": 1}))
