"""Issue 39: the spec-vector scripts are layered, without the old circle
(``make_spec_vectors`` <-> ``spec_vectors_generate``): paths <- corruptions <- generate <- CLI."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import load_script

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
ORDER = ["spec_vectors_paths", "spec_vectors_corruptions", "spec_vectors_generate"]
ORDER += ["make_spec_vectors"]


def _imports(name: str) -> set[str]:
    tree = ast.parse((SCRIPTS / f"{name}.py").read_text())
    out = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    out |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return {m for m in out if m in ORDER}


def test_each_spec_vector_script_imports_only_those_below_it() -> None:
    for i, name in enumerate(ORDER):
        assert _imports(name) <= set(ORDER[:i]), (name, _imports(name) - set(ORDER[:i]))


def test_the_cli_serves_the_recipe_tables() -> None:
    mod = load_script("make_spec_vectors")
    assert mod.CORRUPTIONS and mod.MPC_CORRUPTIONS and mod.VARIANTS
    assert mod.main(["nonsense"]) == 2
