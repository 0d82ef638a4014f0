"""Neighbouring files on the own-data path (issue 36 item 2): a row present, excluded (a missing
answer) or malformed at the start, middle or end of a client party's block changes nothing
public and nothing about any other user.

Everything runs through the real code path, in-process: the launcher's count and split
(``parties.runtime.own_data``), each client party's workload built from its own part
(``parties.clients.roles.load_workload``) and its population (``ClientPopulation``: the global
user indices it encodes under). For every protocol the registry runs on own data
(``protocols.params.OWN_DATA``) the two files give the same cluster digest (public parameters
and per-client counts) and, for every other user, the same global index, the same record and,
where the protocol groups users (``ShuffleProtocol.public_grouping``), the same group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import binom

from parties.clients.roles import ClientPopulation, grouping_seed_of, load_workload
from parties.runtime.cluster import Cluster, PartySpec, cluster_digest
from parties.runtime.own_data import count_rows, split_for_clients
from protocols.datasets.schema import parse_schema
from protocols.params import OWN_DATA

SCHEMAS = {
    "categorical": """
kind = "categorical"
[[attribute]]
name = "a"
values = ["x", "y", "z"]
[[attribute]]
name = "b"
range = [1, 4]
[[attribute]]
name = "c"
values = ["p", "q"]
""",
    "setvalued": """
kind = "setvalued"
[items]
range = [1, 20]
""",
    "numeric": """
kind = "numeric"
[value]
name = "v"
low = 0
high = 100
""",
}
HEADER = {"categorical": "a,b,c\n", "setvalued": "", "numeric": "v\n"}
# the row at the chosen place: present, excluded as missing, malformed
ROW = {
    "categorical": {"present": "y,3,q", "excluded": ",3,q", "malformed": "y,3"},
    "setvalued": {"present": "4 7 9", "excluded": "", "malformed": "4 99"},
    "numeric": {"present": "42", "excluded": "NA", "malformed": "4x2"},
}
PARAMS: dict[str, dict[str, Any]] = {
    "categorical": {"epsilon": 8.0},
    "setvalued": {"epsilon": 8.0, "ell": 3, "k": 2},
    "numeric": {"epsilon": 4.0},
}
CLIENTS = 2
N = 120  # rows: client c holds rows [c * 60, (c + 1) * 60)
PLACES = {"start of client 0": 0, "start of client 1": 60, "middle": 90, "end": N - 1}


def _rows(kind: str, n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    if kind == "categorical":
        out = []
        for i in range(n):
            row = f"{'xyz'[rng.integers(3)]},{rng.integers(1, 5)},{'pq'[rng.integers(2)]}"
            out.append(row if i % 17 != 5 else ",2,p")  # other excluded rows, in both files
        return out
    if kind == "setvalued":
        return [
            " ".join(str(x) for x in sorted(rng.choice(20, rng.integers(1, 5), replace=False) + 1))
            for _ in range(n)
        ]
    return [str(int(rng.integers(0, 101))) if i % 13 != 4 else "NA" for i in range(n)]


def _write(path: Path, kind: str, rows: list[str]) -> Path:
    path.write_text(HEADER[kind] + "".join(r + "\n" for r in rows))
    return path


def populations(protocol: str, kind: str, path: Path, tmp: Path) -> tuple[str, list[int], list]:
    """(cluster digest, per-client user counts, per client: (global ids, records, groups))."""
    text = SCHEMAS[kind]
    schema = parse_schema(text, "test schema")
    users, _ = count_rows(path, schema)
    clients = [f"client{i}" for i in range(CLIENTS)]
    dest = {c: tmp / c / "records.txt" for c in clients}
    counts, _ = split_for_clients(path, schema, clients, dest)
    params = {"schema": text, "users": users, "seed": 5, **PARAMS[kind]}
    parties = [PartySpec("analyzer", "analyzer", "127.0.0.1", 1)] + [
        PartySpec(c, "client", "127.0.0.1", 2 + i, users=counts[c]) for i, c in enumerate(clients)
    ]
    cluster = Cluster(
        "ab" * 16, protocol, "trusted", parties, params, local_data={c: str(dest[c]) for c in dest}
    )
    out = []
    for c in clients:
        pop = ClientPopulation(cluster, c, load_workload(cluster, c))
        ids = np.concatenate([loc["user_ids"] for loc in pop.local])
        recs = [tuple(np.atleast_1d(r)[np.atleast_1d(r) >= 0].tolist()) for r in pop.records]
        if kind == "numeric":
            recs = [tuple(np.atleast_1d(r).tolist()) for r in pop.records]
        groups = pop.protocol.public_grouping(ids, grouping_seed_of(cluster))
        out.append((ids, recs, groups))
    return cluster_digest(cluster), [counts[c] for c in clients], out


def _own_data_cases() -> list[tuple[str, str]]:
    return sorted(OWN_DATA.items())


def test_registry_lists_own_data_protocols():
    assert {"psrr-ss", "srr-ms", "gfim", "splitmix-sum"} <= set(OWN_DATA)
    assert set(OWN_DATA.values()) <= set(SCHEMAS)


@pytest.mark.parametrize("protocol,kind", _own_data_cases())
def test_neighbouring_files_change_nothing_public(tmp_path, protocol, kind):
    base = _rows(kind, N)
    grouped = False
    for place, row in PLACES.items():
        results = {}
        for variant, line in ROW[kind].items():
            rows = list(base)
            rows[row] = line
            path = _write(tmp_path / f"{variant}-{row}.txt", kind, rows)
            results[variant] = populations(protocol, kind, path, tmp_path / f"{variant}-{row}")
        ref_digest, ref_counts, ref_pops = results["present"]
        for variant, (digest, counts, pops) in results.items():
            where = f"{protocol}: row {row} ({place}) {variant}"
            assert digest == ref_digest, f"{where}: public parameters differ"
            assert counts == ref_counts == [N // CLIENTS] * CLIENTS, where
            for (ids, recs, groups), (ids0, recs0, groups0) in zip(pops, ref_pops, strict=True):
                assert np.array_equal(ids, ids0), where
                other = ids != row
                assert [r for r, o in zip(recs, other) if o] == [
                    r for r, o in zip(recs0, other) if o
                ], f"{where}: another user's record moved"
                assert (groups is None) == (groups0 is None)
                if groups is not None:
                    grouped = True
                    assert np.array_equal(groups[other], groups0[other]), (
                        f"{where}: another user's group changed"
                    )
    if protocol in ("srr-ms", "sue-ms", "gfim"):  # the user-grouping protocols (issue 36)
        assert grouped, f"{protocol} groups its users but exposes no public_grouping"


def _hockey_stick(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    m = max(p.size, q.size)
    p, q = np.pad(p, (0, m - p.size)), np.pad(q, (0, m - q.size))
    return float(
        max(np.maximum(p - np.exp(eps) * q, 0).sum(), np.maximum(q - np.exp(eps) * p, 0).sum())
    )


def _count_pmf(a: int, m: int, pv: float, qv: float) -> np.ndarray:
    """pmf of the number of reports of value v in a group of m users, a of whom hold v."""
    return np.convolve(
        binom.pmf(np.arange(a + 1), a, pv), binom.pmf(np.arange(m - a + 1), m - a, qv)
    )


def test_srr_ms_exact_lower_bound_on_neighbouring_files(tmp_path):
    """The issue's own check: the two files' group compositions, the exact distribution of the
    count of every value in every group's batch (a function of what the shuffler outputs), and
    its hockey-stick divergence at the stated epsilon: never above the stated delta (on the old
    path an excluded row moved every later user: delta >= 0.27 at n = 2,000)."""
    n = 2000
    rng = np.random.default_rng(3)
    rows = [
        f"{'xyz'[rng.integers(3)]},{rng.integers(1, 5)},{'pq'[rng.integers(2)]}" for _ in range(n)
    ]
    worst = 0.0
    for row in (3, 1000, 1500):
        comps = []
        for line in (rows[row], "," + rows[row].split(",", 1)[1]):
            r = list(rows)
            r[row] = line
            path = tmp_path / f"f{row}-{len(comps)}.csv"
            path.write_text("a,b,c\n" + "".join(x + "\n" for x in r))
            text = SCHEMAS["categorical"]
            schema = parse_schema(text, "t")
            users, _ = count_rows(path, schema)
            clients = ["client0", "client1"]
            dest = {c: tmp_path / f"{row}-{len(comps)}" / c / "records.txt" for c in clients}
            counts, _ = split_for_clients(path, schema, clients, dest)
            params = {"schema": text, "users": users, "seed": 5, "epsilon": 1.0}
            parties = [PartySpec("analyzer", "analyzer", "127.0.0.1", 1)] + [
                PartySpec(c, "client", "127.0.0.1", 2 + i, users=counts[c])
                for i, c in enumerate(clients)
            ]
            cluster = Cluster(
                "cd" * 16, "srr-ms", "trusted", parties, params,
                local_data={c: str(dest[c]) for c in dest},
            )  # fmt: skip
            pops = [ClientPopulation(cluster, c, load_workload(cluster, c)) for c in clients]
            proto = pops[0].protocol
            recs = np.concatenate([p.records for p in pops])
            ids = np.concatenate(
                [np.concatenate([loc["user_ids"] for loc in p.local]) for p in pops]
            )
            groups = proto.public_grouping(ids, grouping_seed_of(cluster))
            comps.append((recs, groups))
        for j, (k, eps_l) in enumerate(zip(proto.domain_sizes, proto.eps_local, strict=True)):
            if eps_l is None:
                continue
            e = np.exp(eps_l)
            pv, qv = e / (e + k - 1), 1 / (e + k - 1)
            for v in range(k):
                pmfs = []
                for recs, groups in comps:
                    mine = recs[groups == j, j]
                    pmfs.append(_count_pmf(int((mine == v).sum()), mine.size, pv, qv))
                worst = max(worst, _hockey_stick(pmfs[0], pmfs[1], proto.eps_c))
    assert worst <= proto.delta, f"lower bound {worst:.3g} > stated delta {proto.delta:.3g}"


def _split_counts(tmp_path: Path, body: bytes, name: str) -> tuple[int, list[int], int]:
    """(the launcher's count, the split's per-client counts, the clients' readers' rows)."""
    path = tmp_path / name
    path.write_bytes(b"a,b,c\n" + body)
    schema = parse_schema(SCHEMAS["categorical"], "t")
    users, _ = count_rows(path, schema)
    clients = ["client0", "client1"]
    dest = {c: tmp_path / name.replace(".", "_") / c / "records.txt" for c in clients}
    counts, reports = split_for_clients(path, schema, clients, dest)
    return users, [counts[c] for c in clients], sum(r.rows_total for r in reports.values())


@pytest.mark.parametrize(
    "what,row",
    [
        ("bare CR in a field", b"x,2\r,p"),
        ("quoted line break", b'"x\n",2,p'),
        ("quoted CR LF", b'"x\r\n",2,p'),
        ("bare CR quoted", b'"x\r",2,p'),
    ],
)
def test_splitter_and_reader_share_one_record_parser(tmp_path, what, row):
    lines = [b"y,3,q"] * 2000
    plain_users, plain_counts, _ = _split_counts(tmp_path, b"\n".join(lines) + b"\n", "plain.csv")
    lines[500] = row
    users, counts, read = _split_counts(tmp_path, b"\n".join(lines) + b"\n", "odd.csv")
    # one parser: the launcher's n, the split and every client's reader agree, line by line
    assert users == sum(counts) == read, what
    lf = b"\n".join(lines).count(b"\n") + 1
    assert users == lf, f"{what}: one participant per LF-terminated line"
    if b"\n" not in row:  # no extra line: the same public counts as the plain file
        assert (users, counts) == (plain_users, plain_counts), what


def test_crlf_file_reads_as_its_lf_twin(tmp_path):
    rows = _rows("categorical", N)
    lf = tmp_path / "lf.csv"
    crlf = tmp_path / "crlf.csv"
    lf.write_bytes(("a,b,c\n" + "".join(r + "\n" for r in rows)).encode())
    crlf.write_bytes(("a,b,c\r\n" + "".join(r + "\r\n" for r in rows)).encode())
    a = populations("srr-ms", "categorical", lf, tmp_path / "a")
    b = populations("srr-ms", "categorical", crlf, tmp_path / "b")
    assert a[1] == b[1]
    for (i0, r0, g0), (i1, r1, g1) in zip(a[2], b[2], strict=True):
        assert np.array_equal(i0, i1) and r0 == r1 and np.array_equal(g0, g1)


@pytest.mark.parametrize("kind", ["categorical", "setvalued", "numeric"])
@pytest.mark.parametrize("block_bytes", [7, 64, 1 << 20])
def test_kept_rows_keep_their_positions_whatever_the_blocks(tmp_path, kind, block_bytes):
    """The reader's row positions (what a dummy's place is taken from) are the rows' places in
    the file, for any block size, with excluded, blank and overlong lines anywhere."""
    from protocols.datasets.readers import read_dataset

    rows = _rows(kind, 40, seed=4)
    for i in (0, 9, 10, 39):
        rows[i] = ROW[kind]["malformed"]
    rows[17] = ROW[kind]["excluded"]
    rows[23] = "x" * 50  # longer than max_line_bytes below
    path = _write(tmp_path / "f.txt", kind, rows)
    schema = parse_schema(SCHEMAS[kind], "t")
    data = read_dataset(path, schema, block_bytes=block_bytes, max_line_bytes=30)
    singles = []
    for i, r in enumerate(rows):
        one = _write(tmp_path / f"row{i}.txt", kind, [r])
        singles.append(read_dataset(one, schema).report.rows_kept == 1)
    assert data.rows.tolist() == [i for i, ok in enumerate(singles) if ok]
    assert data.report.rows_total == len(rows)


def _poisson_binomial(probs: np.ndarray) -> np.ndarray:
    """Exact pmf of a sum of independent Bernoulli(probs): equal probabilities as binomials."""
    pmf = np.ones(1)
    values, counts = np.unique(np.round(probs, 15), return_counts=True)
    for p, c in zip(values, counts, strict=True):
        pmf = np.convolve(pmf, [1 - p, p] if c == 1 else binom.pmf(np.arange(c + 1), c, p))
    return pmf


def test_gfim_round_0_exact_lower_bound_on_neighbouring_files(tmp_path):
    """GFIM's round 0 (group G1 pads and samples one item, then Hadamard response): the exact
    distribution of the count of every report value (j, bit) in G1's shuffled batch under the
    two files' G1 compositions, and its hockey-stick divergence at the stated epsilon: never
    above the stated delta. (This projection is too weak to see the old path's shift on these
    random baskets, where it also stays below delta; the old shift is caught for GFIM by
    test_neighbouring_files_change_nothing_public, and by the SRR-MS bound above.)"""
    from protocols.oracles.hadamard_response import hadamard_entry

    n, kind = 2000, "setvalued"
    rows = _rows(kind, n, seed=6)
    worst = 0.0
    for row in (5, 1000, 1700):
        comps = []
        for variant in ("present", "excluded"):
            r = list(rows)
            r[row] = ROW[kind][variant] if variant == "excluded" else r[row]
            path = _write(tmp_path / f"g{row}-{variant}.txt", kind, r)
            users, _ = count_rows(path, parse_schema(SCHEMAS[kind], "t"))
            clients = ["client0", "client1"]
            dest = {c: tmp_path / f"g{row}-{variant}" / c / "records.txt" for c in clients}
            counts, _ = split_for_clients(path, parse_schema(SCHEMAS[kind], "t"), clients, dest)
            params = {"schema": SCHEMAS[kind], "users": users, "seed": 5, "epsilon": 1.0, "ell": 3,
                      "k": 2}  # fmt: skip
            parties = [PartySpec("analyzer", "analyzer", "127.0.0.1", 1)] + [
                PartySpec(c, "client", "127.0.0.1", 2 + i, users=counts[c])
                for i, c in enumerate(clients)
            ]
            cluster = Cluster("cd" * 16, "gfim", "trusted", parties, params,
                              local_data={c: str(dest[c]) for c in dest})  # fmt: skip
            pops = [ClientPopulation(cluster, c, load_workload(cluster, c)) for c in clients]
            proto = pops[0].protocol
            sets = [tuple(x for x in rec if x >= 0) for p in pops for rec in p.records]
            ids = np.concatenate(
                [np.concatenate([loc["user_ids"] for loc in p.local]) for p in pops]
            )
            g1 = proto.public_grouping(ids, grouping_seed_of(cluster)) == 0
            comps.append([s for s, in1 in zip(sets, g1, strict=True) if in1])
        m, ell, e = proto.m1, proto.ell, np.exp(proto.eps1)
        keep = e / (e + 1)
        probs = []  # per composition: (m, 2, users in G1) probability of each report (j, bit)
        for g in comps:
            size = np.asarray([len(x) for x in g], dtype=np.int64)
            owner = np.repeat(np.arange(len(g)), size)
            items = np.asarray([i for x in g for i in x], dtype=np.int64)
            w = 1.0 / np.maximum(size, ell)
            plus = hadamard_entry(np.arange(m)[:, None], items[None, :]) > 0  # (m, items)
            p = np.empty((m, 2, len(g)))
            for j in range(m):
                for bit in (0, 1):
                    agree = np.where(plus[j] == bool(bit), keep, 1 - keep)
                    hit = np.bincount(owner, weights=agree, minlength=len(g))
                    p[j, bit] = (w * hit + (1 - size * w) * 0.5) / m
            probs.append(p)
        eps = proto.privacy()["eps_central"]
        for j in range(m):
            for bit in (0, 1):
                pmfs = [_poisson_binomial(p[j, bit]) for p in probs]
                worst = max(worst, _hockey_stick(pmfs[0], pmfs[1], eps))
    delta = proto.privacy()["delta"]
    assert worst <= delta, f"lower bound {worst:.3g} > stated delta {delta:.3g}"
