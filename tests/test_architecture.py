"""The house rules (docs/architecture.md), checked by walking the imports of every module.

Arrows point down only (``parties -> protocols -> mpc``, ``parties -> mpc``); ``parties/verify``
imports no role package; no import circle (imports under ``TYPE_CHECKING`` and inside functions
count: a circle hidden in a function is still a circle); no file over 600 lines; every package
states its idea in its ``__init__`` docstring; few modules at each top level.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("mpc", "protocols", "parties")
RANK = {"mpc": 0, "protocols": 1, "parties": 2}
ROLES = (
    "parties.mixnet",
    "parties.mpc_shuffle",
    "parties.txpub",
    "parties.clients",
    "parties.trusted",
)
MAX_LINES = 600
MAX_TOP = {"mpc": 16, "protocols": 4, "parties": 14}


def _modules() -> dict[str, Path]:
    out = {}
    for layer in LAYERS:
        for p in sorted((ROOT / layer).rglob("*.py")):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = p
    return out


MODULES = _modules()


def _imports(mod: str, path: Path) -> set[str]:
    """Modules of the project that ``mod`` imports, anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    out = set()
    for name in found:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and name != mod and name.split(".")[0] in LAYERS:
            out.add(name)
    return out


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def test_arrows_point_down() -> None:
    bad = [
        f"{m} imports {t}"
        for m, ts in GRAPH.items()
        for t in ts
        if RANK[t.split(".")[0]] > RANK[m.split(".")[0]]
    ]
    assert not bad, "upward imports:\n" + "\n".join(sorted(bad))


def test_verifier_imports_no_role() -> None:
    bad = [
        f"{m} imports {t}"
        for m, ts in GRAPH.items()
        if m.startswith("parties.verify")
        for t in ts
        if any(t == r or t.startswith(r + ".") for r in ROLES)
    ]
    assert not bad, "the verifier imports role code:\n" + "\n".join(sorted(bad))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of size > 1 (Tarjan), package __init__ re-exports excluded."""
    edges = {m: {t for t in ts if MODULES[t].name != "__init__.py"} for m, ts in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # iterative enough for this graph's depth
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return comps


def test_no_circles() -> None:
    assert _cycles(GRAPH) == []


def _package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Imports between sibling packages: ``a.b.c -> a.d.e`` is the edge ``a.b -> a.d`` (at every
    depth: ``a.b.c.d -> a.b.e.f`` is also ``a.b.c -> a.b.e``). Top-level modules are no package."""
    out: dict[str, set[str]] = {}
    for m, ts in graph.items():
        for t in ts:
            mp, tp = m.split("."), t.split(".")
            depth = 0
            while depth < min(len(mp), len(tp)) and mp[depth] == tp[depth]:
                depth += 1
            # the first differing components must both be packages (not the module itself)
            if depth + 1 < len(mp) and depth + 1 < len(tp):
                a, b = ".".join(mp[: depth + 1]), ".".join(tp[: depth + 1])
                if a != b:
                    out.setdefault(a, set()).add(b)
                    out.setdefault(b, set())
    return out


def _reach(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Every node's set of nodes reachable by one or more edges."""
    reach: dict[str, set[str]] = {}
    for a in graph:
        seen, todo = set(), list(graph[a])
        while todo:
            b = todo.pop()
            if b not in seen:
                seen.add(b)
                todo.extend(graph.get(b, ()))
        reach[a] = seen
    return reach


def _package_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of sibling packages (a base package importing one of its users)."""
    pk = _package_graph(graph)
    reach = _reach(pk)
    comps = {
        tuple(sorted({a} | {b for b in reach[a] if a in reach[b]})) for a in pk if a in reach[a]
    }
    return sorted(list(c) for c in comps)


def test_no_circles_between_packages() -> None:
    """No package imports a sibling that imports it back, directly or around a loop (e.g. a
    registry in a base package importing the families built on that base)."""
    assert _package_cycles(GRAPH) == []


def test_package_cycle_finder_finds_a_planted_circle() -> None:
    planted = {m: set(ts) for m, ts in GRAPH.items()}
    planted["protocols.oracles.grr"].add("protocols.defences.fake_messages")
    planted["protocols.defences.noisy_threshold"].add("protocols.oracles.central")
    assert ["protocols.defences", "protocols.oracles"] in _package_cycles(planted)


def test_cycle_finder_finds_a_planted_circle() -> None:
    some = sorted(m for m in MODULES if MODULES[m].name != "__init__.py")[:2]
    planted = {m: set(ts) for m, ts in GRAPH.items()}
    planted[some[0]].add(some[1])
    planted[some[1]].add(some[0])
    assert any(set(some) <= set(c) for c in _cycles(planted))


@pytest.mark.parametrize("layer", LAYERS)
def test_files_are_small(layer: str) -> None:
    big = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in sorted((ROOT / layer).rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]
    assert not big, f"files over {MAX_LINES} lines:\n" + "\n".join(big)


@pytest.mark.parametrize("layer", LAYERS)
def test_packages_state_their_idea(layer: str) -> None:
    missing = []
    for init in sorted((ROOT / layer).rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        if not doc or "TODO" in doc or len(doc.split()) < 5:
            missing.append(str(init.relative_to(ROOT)))
    assert not missing, "packages without a docstring stating their idea: " + ", ".join(missing)


@pytest.mark.parametrize("layer", LAYERS)
def test_few_modules_at_top_level(layer: str) -> None:
    top = [p.name for p in (ROOT / layer).glob("*.py") if p.name != "__init__.py"]
    assert len(top) <= MAX_TOP[layer], f"{layer}/ has {len(top)} top-level modules: {top}"


def _private_imports(graph: dict[str, set[str]]) -> list[str]:
    """``m imports t`` where t is a private module (a ``_name`` component) of a package m is
    not in: a package's ``_helpers`` are its own; what siblings share is a public module."""
    bad = []
    for m, ts in graph.items():
        for t in ts:
            parts = t.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__"):
                    owner = ".".join(parts[:i])
                    if not (m == owner or m.startswith(owner + ".")):
                        bad.append(f"{m} imports {t}")
                    break
    return sorted(bad)


def test_no_import_of_another_packages_private_module() -> None:
    assert _private_imports(GRAPH) == []


def test_private_import_finder_finds_a_planted_one() -> None:
    planted = {"protocols.sums.x": {"protocols.histograms._values"}, "protocols.histograms.y": {
        "protocols.histograms._values"}}  # fmt: skip
    assert _private_imports(planted) == ["protocols.sums.x imports protocols.histograms._values"]


def _script_graph() -> dict[str, set[str]]:
    """Imports among ``scripts/*.py`` (run with ``scripts/`` on the path: ``import NAME``)."""
    paths = {p.stem: p for p in sorted((ROOT / "scripts").glob("*.py"))}
    out: dict[str, set[str]] = {}
    for name, p in paths.items():
        found = set()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"), str(p))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
        found = {f.removeprefix("scripts.") for f in found}
        out[name] = {f for f in found if f in paths and f != name}
    return out


JS_IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}/[^'"]+)['"]""")


def _js_graph() -> dict[str, set[str]]:
    """Relative imports among the verifier's ``.mjs`` modules (static and dynamic)."""
    base = ROOT / "verifier"
    files = sorted(p for p in base.rglob("*.mjs") if "node_modules" not in p.parts)
    out: dict[str, set[str]] = {}
    for p in files:
        name = p.relative_to(base).as_posix()
        targets = set()
        for rel in JS_IMPORT.findall(p.read_text(encoding="utf-8")):
            t = (p.parent / rel).resolve()
            if t.is_file():
                targets.add(t.relative_to(base.resolve()).as_posix())
        out[name] = targets - {name}
    return out


def _plain_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of size > 1 of a small graph (reachability both ways)."""
    reach = _reach(graph)
    comps = {tuple(sorted({a} | {b for b in reach[a] if a in reach[b]})) for a in graph}
    return sorted(list(c) for c in comps if len(c) > 1)


# the spec-vector scripts (issue 39 item 3) and the JS verifier (ledger.mjs imports compare.mjs,
# mixnet.mjs and submissions.mjs share util.mjs) have no import circle
def test_no_circles_among_scripts() -> None:
    assert _plain_cycles(_script_graph()) == []


def test_no_circles_in_the_js_verifier() -> None:
    assert _plain_cycles(_js_graph()) == []


def test_js_graph_sees_the_verifiers_imports() -> None:
    graph = _js_graph()
    assert graph["verify.mjs"] == {"lib/run.mjs"}
    assert "lib/transcripts.mjs" in graph["lib/run.mjs"]


def test_plain_cycle_finder_finds_a_planted_circle() -> None:
    assert _plain_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
