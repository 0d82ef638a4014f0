"""``sdp data schema`` proposes schemas that work and lose nothing silently (issue 30 items 5,
6): a constant column is left out with a line saying so (on 27f5c45 it became a domain of size
1 that psrr-ss refused), a column with missing values is proposed with ``on_missing = "other"``
and the counts of both policies (on 27f5c45: "reject", silently dropping 30% of the rows), FIMI
transaction files are guessed set-valued, and a schema of the wrong kind names the kind."""

from __future__ import annotations

import random

from conftest import sdp


def _survey(path, rows=1500) -> None:
    rnd = random.Random(7)
    lines = ["age,colour,const,answer"]
    for _ in range(rows):
        answer = "?" if rnd.random() < 0.305 else rnd.choice(["yes", "no"])
        lines.append(f"{rnd.choice(['young', 'mid', 'old'])},{rnd.choice(['r', 'g', 'b'])},"
                     f"same,{answer}")  # fmt: skip
    path.write_text("\n".join(lines) + "\n")


def test_proposal_leaves_constants_out_and_keeps_missing_rows(tmp_path):
    data = tmp_path / "survey.csv"
    _survey(data)
    proc = sdp("data", "schema", str(data), check=True)
    text = proc.stdout
    assert 'name = "const"' not in text and "const: the single value 'same'" in proc.stderr
    assert 'on_missing = "other"' in text and 'other = "missing"' in text
    assert 'are missing: on_missing = "reject" would exclude them' in proc.stderr
    schema = tmp_path / "survey.toml"
    schema.write_text(text)
    out = tmp_path / "run"
    run = sdp("run", "psrr-ss", "--data", str(data), "--schema", str(schema), "--out", str(out),
              "--no-verify", check=True)  # fmt: skip
    assert run.returncode == 0 and (out / "result.json").exists()
    assert "0 excluded before randomization" in run.stdout + run.stderr


def test_fimi_transactions_are_guessed_setvalued(tmp_path):
    rnd = random.Random(3)
    data = tmp_path / "baskets.dat"
    data.write_text(
        "".join(
            " ".join(str(x) for x in rnd.sample(range(1, 80), rnd.choice([3, 3, 3, 4]))) + " \n"
            for _ in range(400)
        )
    )
    proc = sdp("data", "schema", str(data), check=True)
    assert 'kind = "setvalued"' in proc.stdout


def test_a_schema_of_the_wrong_kind_names_the_kind_needed(tmp_path):
    from pathlib import Path

    here = Path(__file__).parent / "data"
    proc = sdp("run", "psrr-ss", "--data", str(here / "baskets.txt.gz"), "--schema",
               str(here / "baskets.toml"), "--out", str(tmp_path / "r"), "--quiet")  # fmt: skip
    assert proc.returncode == 2
    assert "psrr-ss needs a categorical schema, got a setvalued one" in proc.stderr


def test_own_data_output_is_readable(tmp_path):
    """Issue 30 item 7: the schema's labels in the printed table and in result.json, the privacy
    statement as readable lines (no Python dict), the data report on the operator's console."""
    import json

    data = tmp_path / "survey.csv"
    _survey(data, rows=1200)
    schema = tmp_path / "survey.toml"
    schema.write_text(sdp("data", "schema", str(data), check=True).stdout)
    out = tmp_path / "run"
    proc = sdp("run", "psrr-ss", "--data", str(data), "--schema", str(schema), "--out", str(out),
               check=True)  # fmt: skip
    result = json.loads((out / "result.json").read_text())
    lab = result["estimate_labelled"]
    assert set(lab) == {"age", "colour", "answer"} and set(lab["answer"]) == {
        "no",
        "yes",
        "missing",
    }
    assert abs(sum(lab["age"].values()) - 1) < 0.2
    text = proc.stdout
    assert "published estimate" in text and "missing" in text and "young" in text
    privacy = [x for x in text.splitlines() if x.startswith("privacy:") or "release:" in x]
    assert privacy and not any("{" in x or "[{" in x for x in privacy)
    assert (
        "rows kept" in proc.stdout + proc.stderr or "kept, 0 excluded" in proc.stdout + proc.stderr
    )
