"""Public parameters never move with one record (issue 21 item 3): neighbouring datasets at each
boundary (a quantile edge, an item present once, a set size at the 90th percentile) give
identical public parameters. On the old code each of these moved."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from protocols.datasets import categorical as C
from protocols.gfim.setvalued_data import fimi_sets, from_lists, load_set_dataset
from protocols.gfim.workload import build_protocol

DATA = Path(C.default_data_dir())


@pytest.mark.skipif(not (DATA / "adult").is_dir(), reason="raw Adult not available")
def test_adult_quantile_edge_and_rare_category() -> None:
    rows = C._adult_rows(DATA / "adult")
    base = C.discretize_adult(rows)
    edges = C.frozen_schema()["adult"]["quantile_edges"]["fnlwgt"]
    # neighbour 1: the record at the 5th fnlwgt edge moves just across it
    i = int(np.argmin([abs(float(r[2]) - edges[5]) for r in rows]))
    nb = [list(r) for r in rows]
    nb[i][2] = str(float(edges[5]) + 1e-3)
    # neighbour 2: drop the only record of the rarest native country (a value present once)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[13]] = counts.get(r[13], 0) + 1
    rare = min(counts, key=counts.get)
    nb2 = [r for r in rows if r[13] != rare][: len(rows) - 1] if counts[rare] == 1 else None
    for other in (nb, nb2):
        if other is None:
            continue
        ds = C.discretize_adult(other)
        assert ds.domain_sizes == base.domain_sizes  # no domain moves
    assert C.frozen_schema()["adult"]["quantile_edges"]["fnlwgt"] == edges


def test_fimi_universe_does_not_move_with_an_item_present_once() -> None:
    txs = [[0, 5, 9], [5, 9], [9, 17]]  # item 17 present once
    a = fimi_sets("t10i4d100k", txs, "toy")
    b = fimi_sets("t10i4d100k", txs[:2] + [[9]], "toy")  # neighbour without item 17
    assert a.d == b.d == 1000 and a.labels == b.labels
    with pytest.raises(ValueError, match="universe"):
        fimi_sets("t10i4d100k", [[1000]], "toy")


def test_gfim_ell_is_not_read_from_the_private_sizes() -> None:
    """The thesis' ell = 90th percentile of set sizes moved from 14 to 15 with one user."""
    data = load_set_dataset("laplace-50k", n=2000, seed=1)
    sizes = [14] * 1800 + [15] * 200
    rng = np.random.default_rng(0)
    sets = [list(rng.choice(1000, s, replace=False)) for s in sizes]
    nb = [list(s) for s in sets]
    nb[0] = list(rng.choice(1000, 15, replace=False))  # one user at the 90th percentile
    from dataclasses import replace

    d1 = replace(data, records=from_lists(sets), public_ell=None)
    d2 = replace(data, records=from_lists(nb), public_ell=None)
    assert d1.ell(0.9) != d2.ell(0.9)  # what the thesis' rule would have published
    for d in (d1, d2):  # without a public ell the run refuses to read one from the data
        with pytest.raises(ValueError, match="public padding length"):
            build_protocol({"k": 3}, d, "gfim")
    p1 = build_protocol({"k": 3, "ell": 12}, d1, "gfim")
    p2 = build_protocol({"k": 3, "ell": 12}, d2, "gfim")
    assert (p1.ell, p1.d, p1.k_max) == (p2.ell, p2.d, p2.k_max)
