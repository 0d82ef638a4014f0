"""Every shuffler is one ``ShufflerBackend`` (``parties.runtime.backend``): the runtime asks it
and names no shuffler by string outside the shuffler's own package."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from parties.runtime.backend import (
    BACKEND_MODULES,
    BackendError,
    ShufflerBackend,
    all_server_roles,
    backend,
    backends,
    default_shuffler,
)
from parties.runtime.errors import ClusterError
from parties.runtime.plans import LAYOUT_PROBE, extra_ports, plan_for, tolerated_roles

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("mpc", "protocols", "parties")
# the main job (plain ``sdp run``) chooses its shuffler as a command line would
CHOICES = {("parties/runtime/run_options.py", "MAIN_JOB")}


def _own_package(name: str) -> str:
    return BACKEND_MODULES[list(backends()).index(name)].rpartition(".")[0].replace(".", "/")


def shuffler_names_by_string() -> list[str]:
    """``file:line: 'name'`` for every string constant naming a shuffler in the layers, outside
    that shuffler's own package (docstrings and the main job's choice left out)."""
    names = set(backends())
    found = []
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"))
            skip: set[int] = set()
            for node in ast.walk(tree):
                body = getattr(node, "body", None)
                if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
                    if isinstance(body[0].value, ast.Constant):
                        skip.add(id(body[0].value))  # a docstring
                if (
                    isinstance(node, ast.Assign)
                    and any(
                        isinstance(t, ast.Name) and (rel, t.id) in CHOICES for t in node.targets
                    )
                    or isinstance(node, ast.AnnAssign)
                    and isinstance(node.target, ast.Name)
                    and (rel, node.target.id) in CHOICES
                ):
                    skip.update(id(c) for c in ast.walk(node.value) if isinstance(c, ast.Constant))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and node.value in names
                    and id(node) not in skip
                    and not rel.startswith(_own_package(node.value) + "/")
                ):
                    found.append(f"{rel}:{node.lineno}: {node.value!r}")
    return found


def test_no_shuffler_named_by_string_outside_its_package() -> None:
    assert shuffler_names_by_string() == []


def test_the_grep_finds_a_planted_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "parties").mkdir()
    (tmp_path / "parties" / "x.py").write_text('"""doc: mpc"""\nif s == "mpc":\n    pass\n')
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert shuffler_names_by_string() == ["parties/x.py:2: 'mpc'"]


def test_each_backend_is_registered_once_and_complete() -> None:
    bs = backends()
    assert len(bs) == len(BACKEND_MODULES) >= 3
    assert sum(b.default for b in bs.values()) == 1 and default_shuffler() in bs
    for name, b in bs.items():
        assert isinstance(b, ShufflerBackend) and b.name == name
        roles = {role for _, role in b.layout(dict(LAYOUT_PROBE))}
        assert b.server_roles - {"mpc"} <= roles, name  # "mpc": early runs' role name
        assert b.tolerated_roles <= roles, name
        mod, fn = b.verify_check.split(":")
        assert callable(getattr(importlib.import_module(mod), fn))
        assert plan_for("grr", name) is b.plan()
    assert all_server_roles() == frozenset().union(*(b.server_roles for b in bs.values()))


def test_unknown_shuffler_is_one_clear_error() -> None:
    with pytest.raises(ClusterError, match="unknown shuffler 'mixnt'; did you mean 'mixnet'"):
        backend("mixnt")
    assert issubclass(BackendError, ClusterError)


def test_extra_ports_one_rule() -> None:
    """The MPC servers' mesh ports: the launcher and ``sdp cluster`` ask the same rule, and a
    protocol-specific plan (txpub) gets none whatever ``--shuffler`` says."""
    layout = {**LAYOUT_PROBE, "servers": 4}
    counts = {name: extra_ports("grr", name, layout) for name in backends()}
    assert sorted(counts.values()) == [0, 0, 4]
    assert all(extra_ports("txpub", name, layout) == 0 for name in backends())
    assert all(tolerated_roles("txpub", name) == frozenset() for name in backends())
    assert tolerated_roles("grr", "no-such") == frozenset()


def test_each_backend_declares_the_parameters_it_reads() -> None:
    from parties.runtime.run_options import RUNTIME_PARAMS

    names = [p.name for b in backends().values() for p in b.params]
    assert len(names) == len(set(names))  # one owner per parameter
    assert set(names) <= set(RUNTIME_PARAMS)
    for b in backends().values():
        assert set(b.runtime_params) <= {p.name for p in b.params}, b.name
