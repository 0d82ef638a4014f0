"""PLD composition of shuffled rounds (dp-accounting) and the --rounds / --compose CLI."""

from __future__ import annotations

import json

import pytest

from protocols.accountant import amplify
from protocols.accountant.cli import main
from protocols.accountant.compose import Round, compose, rounds_from_toml


def test_single_round_matches_the_generic_bound():
    c = compose([Round(4.0, 10_000)], 1e-6)
    single = amplify(4.0, 10_000, 1e-6, bound="decomposition").eps_central
    assert single <= c.eps <= single * 1.01  # pessimistic discretisation: at or just above


def test_composition_beats_basic_and_grows_with_rounds():
    one = compose([Round(4.0, 10_000)], 1e-6).eps
    five = compose([Round(4.0, 10_000, repeat=5)], 1e-6)
    assert one < five.eps < five.basic_composition_eps
    assert five.eps < 5 * one


def test_toml_and_cli(tmp_path, capsys):
    f = tmp_path / "rounds.toml"
    f.write_text("delta = 1e-6\n[[round]]\neps_local = 4.0\nn = 10000\nrepeat = 2\n")
    rounds, delta = rounds_from_toml(f.read_text())
    assert delta == 1e-6 and rounds[0].repeat == 2
    assert main(["--compose", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["eps"] == pytest.approx(compose(rounds, 1e-6).eps)
    with pytest.raises(ValueError, match="unknown keys"):
        rounds_from_toml("[[round]]\neps_local = 1.0\nn = 10\nbogus = 1\n")
