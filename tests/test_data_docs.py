"""The docs match the code (issue 36 item 5): docs/data.md's list of the protocols that run on
one's own data is the registry's (``protocols.params.OWN_DATA``), every protocol it names runs on
a small file of its kind through the own-data path (the launcher's options, count and split,
each client party's reader, encoder, the trusted shuffle, the privacy gate and the analyzer),
the one-column histogram recipe runs, the README's protocol table and ``sdp protocols`` list
every registered protocol."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, sdp

from parties.protocol_list import protocol_lines
from parties.runtime.plans import PROTOCOL_PLANS
from protocols.params import OWN_DATA
from protocols.workloads import registered

DOCS = (ROOT / "docs" / "data.md").read_text()


def docs_own_data() -> dict[str, str]:
    """{protocol: kind} from docs/data.md's "Three kinds of dataset" table."""
    out = {}
    for kind, used in re.findall(
        r"^\| `(categorical|setvalued|numeric)` \|[^|]*\|[^|]*\| ([^|]*) \|$", DOCS, re.M
    ):
        for name in used.split(","):
            out[name.strip()] = kind
    return out


def test_docs_list_of_own_data_protocols_is_the_registry():
    assert docs_own_data() == OWN_DATA
    assert set(OWN_DATA) <= set(registered())


FILES = {
    "categorical": (
        'kind = "categorical"\n[[attribute]]\nname = "region"\nvalues = ["n", "s", "e"]\n'
        '[[attribute]]\nname = "age"\nrange = [1, 4]\non_out_of_domain = "clip"\n',
        "region,age\n",
        lambda i: f"{'nse'[i % 3]},{i % 5}" if i % 11 else ",2",
    ),
    "setvalued": (
        'kind = "setvalued"\n[items]\nrange = [11, 40]\n',
        "",
        lambda i: " ".join(str(11 + (i * j) % 30) for j in range(1, 1 + i % 4)) if i % 9 else "99",
    ),
    "numeric": (
        'kind = "numeric"\n[value]\nname = "income"\nlow = 0\nhigh = 1000\n',
        "income\n",
        lambda i: str(37 * i % 1200) if i % 7 else "NA",
    ),
}
EXTRA = {"gfim": ["--param", "ell=2", "--k", "2"], "ldpminer": ["--param", "ell=2", "--k", "2"]}


def run_own_data(tmp: Path, protocol: str, schema_text: str, header: str, rows: list[str],
                 extra: list[str]) -> dict:  # fmt: skip
    """Run ``protocol`` on the file through the own-data path in process (two client parties,
    the trusted shuffle): what ``sdp run PROTOCOL --data F --schema S`` runs, minus the network."""
    from parties.clients.roles import ClientPopulation, load_workload
    from parties.launcher import build_parser
    from parties.runtime.cluster import Cluster, PartySpec
    from parties.runtime.own_data import split_for_clients
    from parties.runtime.run_options import resolve_job
    from protocols.base import gate_shuffled, trusted_shuffle
    from protocols.datasets.schema import parse_schema

    data, schema = tmp / "data.txt", tmp / "schema.toml"
    data.write_text(header + "".join(r + "\n" for r in rows))
    schema.write_text(schema_text)
    args = build_parser().parse_args(
        [protocol, "--data", str(data), "--schema", str(schema), "--epsilon", "8", *extra]
    )
    protocol, shuffler, params, _ = resolve_job(args)
    assert shuffler == "trusted" and params["users"] == len(rows)
    clients = ["client0", "client1"]
    dest = {c: tmp / c / "records.txt" for c in clients}
    counts, _ = split_for_clients(data, parse_schema(params["schema"], "t"), clients, dest)
    parties = [PartySpec("analyzer", "analyzer", "127.0.0.1", 1)] + [
        PartySpec(c, "client", "127.0.0.1", 2 + i, users=counts[c]) for i, c in enumerate(clients)
    ]
    cluster = Cluster("ef" * 16, protocol, shuffler, parties, {**params, "seed": 1},
                      local_data={c: str(dest[c]) for c in clients})  # fmt: skip
    pops = [ClientPopulation(cluster, c, load_workload(cluster, c)) for c in clients]
    proto = load_workload(cluster).protocol  # the analyzer's: public parameters only
    rng = np.random.default_rng(2)
    public: dict = {}
    released: list = []
    for r in range(proto.n_rounds):
        parts = [b for pop in pops for b, _ in pop.encode(r, public)]
        merged = {k: np.concatenate([p[k] for p in parts if k in p]) for p in parts for k in p}
        shuffled = trusted_shuffle(merged, rng)
        released += gate_shuffled(proto, shuffled, len(rows), r, public, released)
        public = proto.analyze_round(r, shuffled, public)
    assert released, "nothing passed the privacy gate"
    return public


@pytest.mark.parametrize("protocol", sorted(docs_own_data()))
def test_every_protocol_docs_data_names_runs_on_own_data(tmp_path, protocol):
    kind = docs_own_data()[protocol]
    schema, header, row = FILES[kind]
    est = run_own_data(tmp_path, protocol, schema, header, [row(i) for i in range(90)],
                       EXTRA.get(protocol, []))  # fmt: skip
    numbers = [v for v in est.values() if isinstance(v, (int, float))]
    arrays = [np.asarray(v, dtype=float) for v in est.values() if isinstance(v, list) and v
              and all(isinstance(x, (int, float)) for x in v)]  # fmt: skip
    assert numbers or arrays, est
    assert all(np.isfinite(a).all() for a in arrays) and all(np.isfinite(numbers))


def test_histogram_of_one_column_recipe(tmp_path):
    schema = (
        'kind = "categorical"\n[[attribute]]\nname = "region"\n'
        'values = ["north", "south", "east", "west", "capital"]\nmissing = ["", "NA"]\n'
        'on_missing = "other"\nother = "no answer"\n'
    )
    rows = [
        f"{i},{['north', 'south', 'east', 'west', 'capital', 'NA'][i % 6]},x" for i in range(120)
    ]
    est = run_own_data(tmp_path, "srr-ms", schema, "id,region,comment\n", rows, [])
    assert est["attributes"] == ["region"] and len(est["marginals"][0]) == 6


def test_readme_table_and_sdp_protocols_list_every_protocol():
    names = set(registered()) | set(PROTOCOL_PLANS)
    readme = (ROOT / "README.md").read_text()
    table = readme.split("## Protocols", 1)[1].split("\n\n", 2)[1]
    listed = set(re.findall(r"`([\w-]+)`", "".join(ln.split("|")[1] for ln in table.splitlines())))
    assert names <= listed, f"missing from the README's protocol table: {sorted(names - listed)}"
    lines = protocol_lines()
    assert [ln.split()[0] for ln in lines] == sorted(names)
    assert all(len(ln.split(None, 1)) == 2 for ln in lines), "a protocol without a description"
    for name, kind in OWN_DATA.items():
        assert f"[own data: {kind}]" in next(ln for ln in lines if ln.split()[0] == name)


def test_sdp_run_list_and_the_refusal_name_the_own_data_protocols(tmp_path):
    proc = sdp("run", "--list", check=True)
    assert proc.stdout.count("\n") >= len(registered())
    data = ROOT / "tests" / "data"
    proc = sdp("run", "hp-sdp", "--data", str(data / "survey.csv.gz"), "--schema",
               str(data / "survey.toml"), "--out", str(tmp_path / "r"))  # fmt: skip
    assert proc.returncode == 2
    for name in OWN_DATA:
        assert name in proc.stderr
