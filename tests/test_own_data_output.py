"""Own-data runs warn and are bounded as bundled-data runs are, and print readable results
(issue 36 items 3 and 4): the noise warning comes from public parameters only (the schema, n,
epsilon), parameters outside their meaningful range are refused, a key given twice is refused,
and GFIM prints its top-k by the file's item ids."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import sdp

from protocols.workloads import get_workload

SURVEY = """
kind = "categorical"
[[attribute]]
name = "colour"
values = ["red", "green", "blue", "violet"]
[[attribute]]
name = "answer"
values = ["yes", "no", "maybe"]
"""
BASKETS = """
kind = "setvalued"
name = "corner shop"
[items]
range = [101, 160]
"""


def _baskets(path: Path, n: int = 1500) -> Path:
    """A basket file the project never saw: items 101..160, items 117 and 142 in most baskets."""
    rnd = random.Random(36)
    lines = []
    for _ in range(n):
        items = set(rnd.sample(range(101, 161), rnd.randint(0, 3)))
        if rnd.random() < 0.8:
            items.add(117)
        if rnd.random() < 0.6:
            items.add(142)
        lines.append(" ".join(str(i) for i in sorted(items)) or "117")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_noise_warning_for_own_data_comes_from_public_parameters():
    params = {"schema": SURVEY, "users": 300, "epsilon": 0.1}
    # no data file: the warning is a function of the schema, n and epsilon only
    warn = get_workload("psrr-ss", params).protocol.noise_warning()
    assert warn and "too few users" in warn
    assert (
        get_workload("psrr-ss", {**params, "users": 10**6, "epsilon": 4}).protocol.noise_warning()
        is None
    )
    gfim = {"schema": BASKETS, "users": 1500, "ell": 10, "k": 2}
    assert get_workload("gfim", gfim).protocol.noise_warning()


@pytest.mark.parametrize(
    "params,match",
    [
        ({"schema": BASKETS, "users": 1500, "ell": 1_000_000}, r"ell must lie in \[1, 60\]"),
        ({"schema": BASKETS, "users": 1500, "ell": 61}, r"ell must lie in \[1, 60\]"),
        (
            {"schema": SURVEY.replace('"yes", "no", "maybe"', '"yes"'), "users": 300},
            "'answer' has 1 values",
        ),
        (
            {
                "schema": 'kind = "categorical"\n[[attribute]]\nname = "a"\nrange = [0, 20000000]\n',
                "users": 300,
            },
            "'a' has 20000001 values",
        ),
    ],
)
def test_parameters_outside_their_range_are_refused(params, match):
    name = "gfim" if "setvalued" in params["schema"] else "psrr-ss"
    with pytest.raises(ValueError, match=match):
        get_workload(name, params)


def test_a_key_given_as_an_option_and_as_param_is_refused(tmp_path):
    proc = sdp("run", "psrr-ss", "--users", "500", "--epsilon", "1", "--param", "epsilon=3",
               "--out", str(tmp_path / "r"), "--quiet")  # fmt: skip
    assert proc.returncode == 2
    assert (
        "epsilon is given both as --epsilon 1" in proc.stderr and "--param epsilon=3" in proc.stderr
    )
    proc = sdp("run", "psrr-ss", "--param", "k=2", "--param", "k=3", "--out", str(tmp_path / "s"))
    assert proc.returncode == 2 and "--param k is given twice" in proc.stderr


def test_data_check_on_an_empty_file_fails_clearly(tmp_path):
    schema = tmp_path / "s.toml"
    schema.write_text(BASKETS)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    proc = sdp("data", "check", str(empty), "--schema", str(schema))
    assert proc.returncode == 2 and "no data rows" in proc.stderr, proc.stderr


def test_gfim_on_a_new_basket_file_prints_top_k_by_item_id_and_warns(tmp_path):
    """The issue's must-show: on a basket file the project never saw, ``sdp run gfim --data F
    --param ell=N`` prints the top-k by item id, with a warning when it is mostly noise."""
    data = _baskets(tmp_path / "shop.dat")
    schema = tmp_path / "shop.toml"
    schema.write_text(BASKETS)
    out = tmp_path / "run"
    proc = sdp("run", "gfim", "--data", str(data), "--schema", str(schema), "--param", "ell=3",
               "--k", "2", "--out", str(out), "--quiet", "--no-verify", check=True)  # fmt: skip
    text = proc.stdout
    assert "published top-2 by item id" in text
    res = json.loads((out / "result.json").read_text())
    items = res["top_k_items"]
    assert len(items) == 2 and all(101 <= i <= 160 for i in items)
    assert [i - 101 for i in items] == res["estimate"]["top_k"]  # ids beside the indices
    for item in items:
        assert f" {item} " in text  # printed with its id and its estimated frequency
    assert any(
        line.startswith("WARNING: the estimate is mostly noise")
        for line in proc.stderr.splitlines()
    )


def test_a_numeric_estimate_is_printed_in_the_files_units_with_its_column():
    from parties.summary import numeric_estimate, numeric_line

    schema = 'kind = "numeric"\n[value]\nname = "income"\nlow = 100\nhigh = 1100\n'
    est = numeric_estimate({"sum": 10.0, "mean": 0.1}, {"schema": schema, "users": 100})
    assert est == {"column": "income", "low": 100, "high": 1100, "sum": 20000.0, "mean": 200.0}
    assert numeric_line(est).startswith("published estimate: sum of 'income' = 20000, mean = 200")
    assert numeric_estimate({"sum": 1.0}, {"schema": BASKETS, "users": 5}) is None
