"""Nothing about an own-data file leaks around the ledger (issue 26, findings 1 and 2).

A run on the operator's own file publishes the estimate and its ledger, nothing else about the
data: no true statistic (the launcher's evaluation goes to an operator-only file beside the run
directory, and only on request for ``--data`` runs), no count of kept or excluded rows, and a
public user count (the file's data lines) that does not depend on whether one person's answer
is missing or their line malformed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT, sdp

from parties.launcher import _give_clients_their_data, build_parser, evaluation_path
from parties.runtime import codec
from parties.runtime.cluster_init import layout_cluster
from parties.runtime.run_options import resolve_job
from protocols.datasets.readers import read_dataset
from protocols.datasets.schema import parse_schema

DATA = ROOT / "tests" / "data"
SCHEMA = DATA / "survey.toml"
ROWS = 300


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three neighbouring files of the survey's first ``ROWS`` rows: as shipped, row 7's last
    answer (satisfaction, rejected when missing) left out, row 7 malformed (a field too many).
    Two other rows miss that answer in every file, so every file has excluded rows."""
    lines = gzip.decompress((DATA / "survey.csv.gz").read_bytes()).splitlines(keepends=True)
    head = lines[: ROWS + 1]
    for i in (20, 40):
        head[i] = head[i].rsplit(b",", 1)[0] + b",\n"
    row = head[7]
    out = tmp_path_factory.mktemp("neighbours")
    variants = {
        "present": row,
        "missing": row.rsplit(b",", 1)[0] + b",\n",
        "malformed": row.rstrip(b"\n") + b",extra\n",
    }
    paths = {}
    for name, line in variants.items():
        paths[name] = out / f"{name}.csv"
        paths[name].write_bytes(b"".join(head[:7] + [line] + head[8:]))
    schema = parse_schema(SCHEMA.read_text(), "survey")
    kept = {k: read_dataset(p, schema).report.rows_kept for k, p in paths.items()}
    assert kept == {"present": ROWS - 2, "missing": ROWS - 3, "malformed": ROWS - 3}
    return paths


def _public_before_the_run(path: Path, keys: Path) -> dict[str, Any]:
    """What the launcher fixes and publishes before any party runs: the run parameters (the
    cluster file's) and every client party's declared user count."""
    args = build_parser().parse_args(
        ["psrr-ss", "--data", str(path), "--schema", str(SCHEMA), "--shuffler", "trusted"]
    )
    protocol, shuffler, params, layout = resolve_job(args)
    cluster, _ = layout_cluster(
        protocol, shuffler, params, layout, {"*": "127.0.0.1"}, list(range(20000, 20010)), 60, 0
    )
    cluster, _ = _give_clients_their_data(cluster, path, keys)
    users = {p.name: p.users for p in cluster.by_role("client")}
    return {"params": params, "users": users}


def test_neighbouring_files_fix_the_same_public_parameters(files, tmp_path):
    """Finding 2: one answer missing vs present, one malformed vs well-formed row: the same
    public parameters (users included) and the same declared user count of every client."""
    seen = {
        k: json.dumps(_public_before_the_run(p, tmp_path / k), sort_keys=True).encode()
        for k, p in files.items()
    }
    assert seen["missing"] == seen["present"] == seen["malformed"]
    assert json.loads(seen["present"])["params"]["users"] == ROWS


def _run(path: Path, out: Path, *extra: str) -> dict[str, Any]:
    proc = sdp(
        "run", "psrr-ss", "--data", str(path), "--schema", str(SCHEMA), "--shuffler", "trusted",
        "--out", str(out), "--quiet", "--json", *extra, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "result.json").read_text())


@pytest.fixture(scope="module")
def runs(files, tmp_path_factory) -> dict[str, Path]:
    """Networked runs on two neighbouring files (as an operator runs them: no evaluation)."""
    root = tmp_path_factory.mktemp("runs")
    out = {"present": root / "present", "missing": root / "missing"}
    for k, path in out.items():
        _run(files[k], path)
    return out


@pytest.fixture(scope="module")
def evaluated(files, tmp_path_factory) -> Path:
    """A run whose operator asked for the (non-private) evaluation."""
    out = tmp_path_factory.mktemp("evaluated") / "malformed"
    _run(files["malformed"], out, "--evaluate-not-private")
    return out


def _public_entries(run: Path) -> list[tuple[dict[str, Any], Any]]:
    """(entry, decoded payload or None) of every transcript entry; payloads of public ones."""
    out = []
    for path in sorted((run / "transcripts").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            e = json.loads(line)
            blob = run / "transcripts" / f"{e.get('party')}.blobs" / str(e.get("dg"))
            payload = codec.loads(blob.read_bytes()) if e.get("pub") and blob.exists() else None
            out.append((e, payload))
    return out


def _numbers(obj: Any) -> list[float]:
    """Every number in a JSON/CBOR value (numpy arrays in their wire form included)."""
    if isinstance(obj, dict):
        if set(obj) == {"dtype", "shape", "data"}:
            return codec.obj_to_array(obj).ravel().astype(float).tolist()
        return [x for v in obj.values() for x in _numbers(v)]
    if isinstance(obj, list | tuple):
        return [x for v in obj for x in _numbers(v)]
    if isinstance(obj, bool) or not isinstance(obj, int | float):
        return []
    return [float(obj)]


def test_public_user_counts_and_ledger_agree_on_neighbours(runs):
    """Finding 2 through real runs: the public counts (per client, per release) and the whole
    privacy statement are byte-identical; no party publishes a data report."""
    res = {k: json.loads((p / "result.json").read_text()) for k, p in runs.items()}
    for key in ("params", "clients", "messages", "invalid_messages"):
        assert json.dumps(res["missing"][key], sort_keys=True) == json.dumps(
            res["present"][key], sort_keys=True
        ), key
    priv = {k: {**r["privacy"]} for k, r in res.items()}
    assert json.dumps(priv["missing"], sort_keys=True) == json.dumps(
        priv["present"], sort_keys=True
    )
    assert priv["present"]["releases"][0]["n_received"] == ROWS
    for run in runs.values():
        kinds = {(e["party"], e["dir"], e.get("ty")) for e, _ in _public_entries(run)}
        assert not any(ty == "data-report" for _, _, ty in kinds)
        assert "data" not in json.loads((run / "result.json").read_text())


def _assert_nothing_true_published(run: Path, path: Path) -> None:
    """No value of result.json or of any public transcript entry of ``run`` is a true marginal
    of ``path`` (as counts or frequencies), nor the number of rows the schema kept."""
    schema = parse_schema(SCHEMA.read_text(), "survey")
    data = read_dataset(path, schema)
    rep = data.report
    truth: list[float] = []
    vectors = []
    for j, k in enumerate(schema.domain_sizes):
        counts = np.bincount(data.records[:, j].astype(np.int64), minlength=k)
        vectors.append(counts.astype(float))
        for n in (rep.rows_kept, rep.rows_total):
            truth += (counts / n).tolist()
    truth = [t for t in truth if 0 < t < 1]
    result = json.loads((run / "result.json").read_text())
    public = {k: v for k, v in result.items() if k not in ("params",)}
    published = _numbers(public) + [x for _, p in _public_entries(run) for x in _numbers(p)]
    pub = np.asarray(published)
    hits = [t for t in truth if np.any(np.abs(pub - t) <= 1e-12 * max(1.0, t))]
    assert not hits, f"true frequencies published: {hits[:5]}"
    # the count the schema kept is nowhere; no data report (its keys) in any public value
    assert float(rep.rows_kept) not in set(published)
    payloads = [result] + [p for _, p in _public_entries(run) if p is not None]
    assert not {"rows_kept", "excluded_before_randomization"} & set(_keys(payloads))
    # no published list is a true count vector either
    lists = [np.asarray(v, float) for v in _walk_lists(public)]
    assert not any(v.shape == t.shape and np.array_equal(v, t) for v in lists for t in vectors)
    assert not list(run.rglob("*evaluation*"))


def test_no_true_statistic_is_published(files, runs):
    """Finding 1: nothing true about the file in result.json or a public transcript entry."""
    for k, run in runs.items():
        _assert_nothing_true_published(run, files[k])
    assert not any(evaluation_path(run).exists() for run in runs.values())


def test_the_evaluation_is_the_operators_alone(files, evaluated):
    """With --evaluate-not-private the true statistics are in the operator's file beside the
    run directory, marked NOT PRIVATE; the published run holds none of them."""
    _assert_nothing_true_published(evaluated, files["malformed"])
    ev = json.loads(evaluation_path(evaluated).read_text())
    assert "NOT PRIVATE" in ev["NOT_PRIVATE"] and "sse_total" in ev["evaluation"]


def _keys(obj: Any) -> list[str]:
    if isinstance(obj, dict):
        return [str(k) for k in obj] + [x for v in obj.values() for x in _keys(v)]
    if isinstance(obj, list):
        return [x for v in obj for x in _keys(v)]
    return []


def _walk_lists(obj: Any) -> list[list[Any]]:
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in _walk_lists(v)]
    if isinstance(obj, list):
        flat = [v for v in obj if isinstance(v, int | float) and not isinstance(v, bool)]
        return ([obj] if len(flat) == len(obj) and obj else []) + [
            x for v in obj for x in _walk_lists(v)
        ]
    return []


def test_excluded_rows_take_part_as_dummies(files):
    """The workload of a party holding the neighbour files has one record per data line."""
    from protocols.workloads import get_workload

    for path in files.values():
        wl = get_workload(
            "psrr-ss",
            {"schema": SCHEMA.read_text(), "users": ROWS, "data": str(path), "seed": 1},
        )
        assert wl.records.shape[0] == ROWS
