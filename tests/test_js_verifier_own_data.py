"""Own-data runs verify in both verifiers (issue 38; docs/spec/06-estimates.md D-2): the
JavaScript verifier derives every public parameter of a run on the user's own file (the
attributes, domain sizes k_j, d and n) from the schema the run publishes (``params.schema``)
and ``params.users``, so psrr-ss and gfim on own data verify with nothing unchecked through
every shuffler (exit 0, V-9, V-21, V-23 L-3 and L-4 included)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import NEEDS_NODE

from parties.verify.run import verify_run
from protocols.datasets.schema import dump_schema, load_schema

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
NODE = shutil.which("node")
pytestmark = NEEDS_NODE
SCHEMA_JS = ROOT / "verifier" / "lib" / "schema.mjs"


def _js_schema(text: str, users: int) -> dict:
    """The JavaScript D-2 derivation of a published schema (verifier/lib/schema.mjs)."""
    script = (
        f"import({json.dumps(SCHEMA_JS.as_uri())}).then((m) => {{ const d = require('fs')"
        ".readFileSync(0, 'utf8'); const p = JSON.parse(d); "
        "console.log(JSON.stringify(m.publicSchema(p))); })"
        ".catch((e) => { console.log(JSON.stringify({error: e.message})); })"
    )
    proc = subprocess.run(
        [NODE, "-e", script], input=json.dumps({"schema": text, "users": users}),
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", ["survey", "baskets", "incomes"])
def test_js_derives_the_schemas_public_parameters_as_python_does(name):
    """D-2 on the canonical text a run publishes: the JS verifier's attributes, k_j (``other``
    counted) and d equal the Python schema's, for every example schema."""
    schema = load_schema(DATA / f"{name}.toml")
    got = _js_schema(dump_schema(schema), 1234)
    assert got["kind"] == schema.kind and got["n"] == 1234, got
    if schema.kind == "categorical":
        assert got["attributes"] == list(schema.attribute_names)
        assert got["domainSizes"] == list(schema.domain_sizes)
        assert 6 in got["domainSizes"]  # survey's region: 5 values + its `other`
    elif schema.kind == "setvalued":
        assert got["d"] == schema.d and got["maxItems"] == schema.max_items


@pytest.mark.parametrize(
    "text,users,msg",
    [
        ('kind = "categorical"\n[[attribute]]\nname = "a"\nvalues = ["x"]\n', 10, "domain of 1"),
        (
            'kind = "categorical"\n[[attribute]]\nname = "a"\nrange = [1, 3]\nvalues = ["x", "y"]\n',
            10,
            "exactly one domain",
        ),  # fmt: skip
        ('kind = "setvalued"\n[items]\nrange = [1, 50]\n', None, "public number of users"),
        ('kind = "tabular"\n', 10, "is not categorical"),
        ("schema = 2\nkind = 'setvalued'\n[items]\nrange = [1, 5]\n", 10, "format version 2"),
    ],
)
def test_js_refuses_a_schema_no_honest_run_publishes(text, users, msg):
    got = _js_schema(text, users)
    assert msg in got.get("error", ""), got


def _head(src: Path, dst: Path, lines: int) -> Path:
    """The first ``lines`` lines of a gzip example file (a small own-data file)."""
    with gzip.open(src, "rt") as f:
        dst.write_text("".join(next(f) for _ in range(lines)))
    return dst


def _own_data_run(tmp_path: Path, protocol: str, shuffler: str) -> Path:
    from conftest import sdp

    if protocol == "gfim":
        data, schema = _head(DATA / "baskets.txt.gz", tmp_path / "b.txt", 400), "baskets.toml"
        extra = ["--param", "ell=5"]
    else:
        data, schema = _head(DATA / "survey.csv.gz", tmp_path / "s.csv", 401), "survey.toml"
        extra = []
    run = tmp_path / "run"
    sdp(
        "run", protocol, "--data", str(data), "--schema", str(DATA / schema), "--shuffler",
        shuffler, "--seed", "3", *extra, "--out", str(run), "--quiet", check=True, timeout=900,
    )  # fmt: skip
    return run


@pytest.mark.slow  # one multi-process run each
@pytest.mark.parametrize("shuffler", ["trusted", "mixnet", "mpc"])
@pytest.mark.parametrize("protocol", ["psrr-ss", "gfim"])
def test_own_data_runs_verify_in_both(tmp_path, protocol, shuffler):
    """psrr-ss (categorical survey) and gfim (set-valued baskets) on the user's own file: sdp
    verify and the JS verifier accept, the JS verifier with nothing unchecked: the estimate
    recomputed (V-21), the statement (V-9) and each release (L-4) re-derived from the published
    schema (D-2) and the public parameters."""
    run = _own_data_run(tmp_path, protocol, shuffler)
    trust = run.with_name("run.trust.json")
    assert verify_run(run, progress=False, trust=json.loads(trust.read_text())).ok
    proc = subprocess.run(
        [NODE, str(ROOT / "verifier" / "verify.mjs"), str(run), "--trust", str(trust), "--json"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["ok"] and not report["not_checked"], proc.stdout
    checks = {c["id"]: c for c in report["checks"]}
    assert {"V-9", "V-21", "V-23"} <= set(checks), checks
    assert "certified by the accountant" in checks["V-23"]["detail"]
    assert "re-derived from the public parameters" in checks["V-9"]["detail"]
    if shuffler == "mpc":
        assert checks["V-30"]["ok"], checks["V-30"]
