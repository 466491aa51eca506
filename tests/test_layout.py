"""The package's architecture, checked from its own imports (docs/architecture.md explains it).

- no import cycles between modules (a package's ``__init__`` re-exporting its children, or a module
  reading its parent package's ``__init__``, is not a cycle);
- only ``deuteron/triton/`` imports ``triton``;
- ``deuteron/model/`` imports nothing else of Deuteron;
- ``cli/`` is a leaf: nothing else imports it (``__main__``, the entry point, aside);
- backends never build trees: nothing under ``collect/backends/`` imports the tree;
- ``check/`` and ``explain/`` reach the interpreter and the compiler only through ``deuteron.triton``;
- no module over 600 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "deuteron"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(module: str) -> set[str]:
    """Every module name an import statement of ``module`` names (lazy ones included)."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names.add(prefix)
            names.update(f"{prefix}.{a.name}" for a in node.names)
    return names


def _internal_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module in MODULES:
        found = set()
        for name in _imports(module):
            if name in MODULES and name != module:
                if name.startswith(module + ".") or module.startswith(name + "."):
                    continue
                found.add(name)
        edges[module] = found
    return edges


EDGES = _internal_edges()


def _external(module: str) -> set[str]:
    return {n.split(".")[0] for n in _imports(module) if n.split(".")[0] not in ("deuteron", "")}


def test_no_import_cycles() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in EDGES[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(EDGES):
        if module not in index:
            visit(module)
    assert cycles == []


def test_only_the_triton_package_imports_triton() -> None:
    offenders = sorted(m for m in MODULES if "triton" in _external(m) and not m.startswith("deuteron.triton"))
    assert offenders == []
    assert any("triton" in _external(m) for m in MODULES if m.startswith("deuteron.triton."))


def test_the_model_imports_nothing_else_of_ours() -> None:
    for module in (m for m in MODULES if m.startswith("deuteron.model")):
        assert {e for e in EDGES[module] if not e.startswith("deuteron.model")} == set(), module


def test_cli_is_a_leaf() -> None:
    offenders = {
        m
        for m, targets in EDGES.items()
        if not m.startswith("deuteron.cli") and m != "deuteron.__main__"
        for t in targets
        if t.startswith("deuteron.cli")
    }
    assert offenders == set()


def test_backends_never_build_trees() -> None:
    for module in (m for m in MODULES if m.startswith("deuteron.collect.backends")):
        assert "deuteron.model.tree" not in EDGES[module], module


@pytest.mark.parametrize("package", ["deuteron.check", "deuteron.explain", "deuteron.collect"])
def test_analyses_reach_triton_only_through_its_adapter(package: str) -> None:
    for module in (m for m in MODULES if m.startswith(package)):
        assert "triton" not in _external(module), module


def test_modules_stay_small() -> None:
    sizes = {m: len(p.read_text().splitlines()) for m, p in MODULES.items()}
    assert {m: n for m, n in sizes.items() if n > 600} == {}
