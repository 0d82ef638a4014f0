"""Nothing data-derived leaves the operator's machine but the ledgered release (issue 36 item 1).

``sdp data schema`` proposes a schema and prints, for the operator, what it took from the file
(counts of missing rows, their share, the rare values). A run with that proposal as its schema
publishes the schema's content only: no file in the run directory holds any count the proposal
printed (on the old path its comments were copied verbatim into ``cluster.toml`` and
``result.json``'s ``params.schema``).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from conftest import sdp

N = 3000
MISSING = 913  # distinctive counts, so that a grep cannot match them by chance


def _survey(path: Path) -> None:
    rnd = random.Random(11)
    answers = ["?"] * MISSING + [rnd.choice(["yes", "no"]) for _ in range(N - MISSING)]
    rnd.shuffle(answers)
    colours = [rnd.choice(["red", "green", "blue"]) for _ in range(N - 3)] + ["violet"] * 3
    rnd.shuffle(colours)
    lines = ["colour,answer"] + [f"{c},{a}" for c, a in zip(colours, answers, strict=True)]
    path.write_text("\n".join(lines) + "\n")


def _tokens(notes: str) -> set[str]:
    """Every count the proposal printed (numbers of two digits or more, shares), and its
    notes' sentences about the data."""
    nums = set(re.findall(r"\d+(?:\.\d+)?%?", notes))
    out = {t for t in nums if len(t.rstrip("%")) >= 2 or t.endswith("%")}
    out.discard(str(N))  # the number of users is public
    out |= {"held by fewer than", "are missing", "Taken from the data"}
    return out


def test_no_published_file_holds_a_count_the_proposal_printed(tmp_path):
    data = tmp_path / "survey.csv"
    _survey(data)
    schema = tmp_path / "survey.toml"
    prop = sdp("data", "schema", str(data), "-o", str(schema), check=True)
    comments = [ln for ln in schema.read_text().splitlines() if ln.startswith("#")]
    notes = prop.stderr + "\n".join(comments)  # everything the proposal printed or wrote
    assert f"{MISSING} rows (30.4%) are missing" in notes  # the operator sees the counts
    assert "held by fewer than 5 rows" in notes
    tokens = _tokens(notes)
    assert {str(MISSING), "30.4%"} <= tokens
    out = tmp_path / "run"
    run = sdp("run", "psrr-ss", "--data", str(data), "--schema", str(schema), "--out", str(out),
              "--epsilon", "2", "--shuffler", "trusted", "--quiet", "--json", "--no-verify",
              check=True)  # fmt: skip
    res = json.loads(run.stdout)
    assert res["params"]["users"] == N
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "cluster.toml" for p in files) and (out / "result.json").exists()
    for p in files:
        blob = p.read_bytes()
        for t in tokens:
            pat = re.escape(t).encode()
            hit = re.search(rb"(?<![0-9A-Za-z.])" + pat + rb"(?![0-9A-Za-z])", blob)
            assert hit is None, f"{p.relative_to(out)} publishes {t!r}, read from the private file"
    # and the proposal keeps its counts on the operator's terminal, out of the schema file
    assert str(MISSING) not in schema.read_text() and "30.4%" not in schema.read_text()
