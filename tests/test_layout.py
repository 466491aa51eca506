"""The package's architecture, checked from its own imports (docs/architecture.md explains it).

Every import counts: lazy ones inside functions, ``TYPE_CHECKING`` ones, and a package's
``__init__`` importing its children (or a child its package) are edges like any other.

- no import cycles between modules;
- no package imports a top-level module (Proton's surface) except ``errors`` and ``version``: the
  engine lives in packages, and the top-level modules only re-export it;
- every top-level module named after one of Proton's is a thin shell: imports, ``__all__``, its
  docstring, and at most a few small definitions of Proton's own names;
- only ``deuteron/triton/`` imports ``triton``;
- ``deuteron/model/`` imports nothing else of Deuteron;
- ``cli/`` is a leaf: nothing else imports it (``__main__``, the entry point, aside);
- backends never build trees: nothing under ``collect/backends/`` imports the tree;
- ``check/`` and ``explain/`` reach the interpreter and the compiler only through ``deuteron.triton``;
- ``collect/`` never imports ``view/`` (tree copy, merge and prune live in ``model/``);
- backends reach the session only through the recorder port (``collect.backends.port.Recorder``),
  which stays small, and never assign into what they are handed;
- no module over 500 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "deuteron"


def _modules() -> dict[str, Path]:
    """Every module of ours by dotted name; a compiled extension counts by its stub (``.pyi``)."""
    out = {}
    for path in [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.pyi")]:
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(module: str) -> set[str]:
    """Every module name an import statement of ``module`` names (lazy ones included)."""
    return imports_of(MODULES[module], module)


def imports_of(path: Path, module: str) -> set[str]:
    """Every name an import statement in the file names, relative ones made absolute: lazy
    imports inside functions and ``TYPE_CHECKING`` blocks included (``ast.walk`` sees them all)."""
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
    """Module -> the modules of ours it imports. ``from a.b import c`` is an edge to ``a.b.c`` when
    that is a module, else to ``a.b`` (importing a package's child also runs the package's
    ``__init__``, but an ``__init__`` that only re-exports would make every child a cycle with its
    siblings: the edge to the package is counted only when a name is taken from it)."""
    edges: dict[str, set[str]] = {}
    for module in MODULES:
        found = set()
        for name in _imports(module):
            if name in MODULES and name != module:
                found.add(name)
        # `from pkg import child`: the child, not the package (when every name is a child)
        for name in list(found):
            children = {n for n in found if n.startswith(name + ".") and n.count(".") == name.count(".") + 1}
            if children and _only_children_taken(module, name):
                found.discard(name)
        edges[module] = found
    return edges


def _only_children_taken(module: str, package: str) -> bool:
    """Whether every ``from package import ...`` in ``module`` names submodules only."""
    path = MODULES[module]
    own = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = own[: len(own) - (node.level - 1)] if node.level else []
            prefix = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
            if prefix == package and any(f"{package}.{a.name}" not in MODULES for a in node.names):
                return False
        elif isinstance(node, ast.Import) and any(a.name == package for a in node.names):
            return False
    return True


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


# Proton's surface: the top-level modules, and the top-level package of Proton's hooks.
TOP_LEVEL = {m for m, p in MODULES.items() if p.parent == PACKAGE and p.name != "__init__.py"}
TOP_LEVEL |= {m for m in MODULES if m == "deuteron.hooks" or m.startswith("deuteron.hooks.")}
TOP_LEVEL_PACKAGES = {m for m, p in MODULES.items() if p.parent.parent == PACKAGE and p.name == "__init__.py"}
ALLOWED_TOP_LEVEL = {"deuteron.errors", "deuteron.version"}
# Top-level modules and packages named after Proton's (``triton.profiler.<name>``): thin shells.
PROTON_SHELLS = {
    "deuteron.context", "deuteron.data", "deuteron.flags", "deuteron.hook", "deuteron.hooks",
    "deuteron.hooks.hook", "deuteron.hooks.launch", "deuteron.hooks.instrumentation", "deuteron.metric",
    "deuteron.mode", "deuteron.rocm", "deuteron.specs", "deuteron.state", "deuteron.viewer",
    "deuteron.language",
}  # fmt: skip


def test_no_package_imports_a_top_level_module() -> None:
    """The engine never reaches up into Proton's surface (nor into the package's own face): a
    package imports only packages, ``deuteron.errors`` and ``deuteron.version``."""
    offenders = sorted(
        f"{m} -> {t}"
        for m, targets in EDGES.items()
        if m != "deuteron" and m not in TOP_LEVEL and not m.startswith("deuteron.hooks")
        for t in targets
        if (t in TOP_LEVEL or t == "deuteron") and t not in ALLOWED_TOP_LEVEL
    )
    assert offenders == []


def test_proton_named_modules_are_thin_shells() -> None:
    """A Proton-named module holds no engine: imports, constants (``__all__``, Proton's aliases),
    its docstring, and functions of at most three statements that hand on to the engine; no
    class, no state kept, no loop."""
    for module in sorted(PROTON_SHELLS):
        for node in ast.parse(MODULES[module].read_text()).body:
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr)):
                continue
            if isinstance(node, ast.FunctionDef):
                assert len(node.body) <= 3, (module, node.name)
                continue
            assert isinstance(node, (ast.Assign, ast.AnnAssign)), (module, ast.dump(node)[:80])
            assert not any(isinstance(n, (ast.Lambda, ast.Call)) for n in ast.walk(node)), module


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


@pytest.mark.parametrize(
    "package", ["deuteron.check", "deuteron.explain", "deuteron.collect", "deuteron.view", "deuteron.process"]
)
def test_analyses_reach_triton_only_through_its_adapter(package: str) -> None:
    for module in (m for m in MODULES if m.startswith(package)):
        assert "triton" not in _external(module), module


def test_the_web_is_a_leaf() -> None:
    offenders = {m for m, targets in EDGES.items()
                 if not m.startswith("deuteron.web") and m not in ("deuteron.cli.serve", "deuteron.__main__")
                 for t in targets if t.startswith("deuteron.web")}  # fmt: skip
    assert offenders == set()


def test_the_layout_rules_see_the_circle_they_guard_against(tmp_path: Path) -> None:
    """The edge reader the rules use counts a ``TYPE_CHECKING`` import, a relative one and a lazy
    one inside a function: a circle closed by either is found (checked on throwaway files)."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n")
    b.write_text("def f():\n    from deuteron.pkg.a import A\n")
    assert "deuteron.pkg.b.B" in imports_of(a, "deuteron.pkg.a")
    assert "deuteron.pkg.a" in imports_of(b, "deuteron.pkg.b")


MAX_LINES = 500  # split by job, not by size: a module near this has more than one job


def test_modules_stay_small() -> None:
    sizes = {m: len(p.read_text().splitlines()) for m, p in MODULES.items()}
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}


def test_the_collector_never_imports_views() -> None:
    """Making a profile needs no view of one: what both need of a tree is in ``model/``."""
    offenders = sorted(
        f"{m} -> {t}"
        for m, targets in EDGES.items()
        if m.startswith("deuteron.collect")
        for t in targets
        if t.startswith("deuteron.view")
    )
    assert offenders == []


RECORDER_MEMBERS = 13  # the whole port a backend sees; a new need is a new id-based call, not a field


def _class_members(path: Path, name: str) -> list[str]:
    """The attributes and methods a class body declares (its docstring aside)."""
    cls = next(n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef) and n.name == name)
    members = []
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members.append(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members.append(node.name)
    return members


def test_the_recorder_port_stays_narrow() -> None:
    members = _class_members(MODULES["deuteron.collect.backends.port"], "Recorder")
    assert len(members) <= RECORDER_MEMBERS, members
    assert "active" in members and "file_kernels" in members  # the guard reads the real class


def recorder_writes(path: Path, module: str) -> list[str]:
    """Assignments to an attribute (or item) of a parameter annotated as a ``Recorder``: in a
    backend, the port would then be two-way again."""
    found = []
    for func in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)):
        handed = {
            a.arg
            for a in [*func.args.args, *func.args.kwonlyargs]
            if a.annotation is not None and "Recorder" in ast.unparse(a.annotation)
        }
        for node in ast.walk(func):
            targets: list[ast.expr] = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for target in targets:
                base = target
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                if target is not base and isinstance(base, ast.Name) and base.id in handed:
                    found.append(f"{module}:{node.lineno}")
    return found


def test_backends_never_write_into_the_recorder() -> None:
    """A backend calls its recorder and subscribes to it, never assigns into it."""
    backends = {m: p for m, p in MODULES.items() if m.startswith("deuteron.collect.backends")}
    offenders = [w for m, p in backends.items() for w in recorder_writes(p, m)]
    assert offenders == []


def test_the_recorder_guard_sees_a_write(tmp_path: Path) -> None:
    """The guard above finds ``session.listener = f`` (and ``session.x[k] = v``) in a throwaway
    backend, and lets a call and a write to a local of the same name elsewhere pass."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def start(self, session: Recorder) -> None:\n"
        "    session.subscribe(print)\n"
        "    session.listener = print\n"
        "    session.table[1] = 2\n"
        "def other(session) -> None:\n"
        "    session.listener = print\n"
    )
    assert recorder_writes(probe, "probe") == ["probe:3", "probe:4"]
