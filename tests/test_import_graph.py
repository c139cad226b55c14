"""The project's import graph: no import circle anywhere, packages import only what
docs/architecture.md allows, and the switch runtime's layers (docs/runtime.md, "Layout and
import direction") import only downwards.

Read from the sources with `ast`, nothing is imported: every `import` and `from ... import`,
at module level or inside a function, a class or an `if` (a lazy import is still an import),
relative ones resolved against the file's package. `from P import n` is an edge to the module
`P.n` when that is one of ours, else to `P`; `import a.b` is an edge to `a.b` (or its longest
prefix that is ours). Only modules of the project's own packages are nodes.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("inaemu", "p4switch", "controller", "hosts", "topologies")

RUNTIME = "p4switch.runtime"
# The runtime's layers, lowest first: a module may import runtime modules of its own layer and
# of layers before it, never of a later one. Entries ending in "." are sub-packages (every
# module in them); the others are single modules of p4switch/runtime itself.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("errors", "keys", "config", "trace")),
    ("state", ("state.",)),
    ("phv", ("phv.",)),
    ("pygen", ("pygen.",)),
    ("cgen", ("cgen.",)),
    ("share", ("share.",)),
    ("learning", ("learning",)),                    # learn lists: config and layout
    ("top", ("", "program", "engine", "switch")),   # "" is p4switch.runtime (__init__.py)
]


def module_name(path: Path) -> tuple[str, bool]:
    """(dotted name, whether it is a package's __init__)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def project_modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "__pycache__" not in path.parts:
                name, is_package = module_name(path)
                found[name] = (path, is_package)
    return found


def imports_of(name: str, path: Path, is_package: bool, modules) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if is_package else name.rpartition(".")[0]
    targets: set[str] = set()

    def ours(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found = ours(alias.name)
                if found:
                    targets.add(found)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[:-(node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found = submodule if submodule in modules else ours(source)
                if found:
                    targets.add(found)
    targets.discard(name)
    return targets


@lru_cache(maxsize=1)
def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (read once per test session)."""
    modules = project_modules()
    return {name: imports_of(name, path, is_package, modules)
            for name, (path, is_package) in modules.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one module (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest circle through the component's first module: a -> b -> ... -> a."""
    members = set(component)
    start = component[0]
    previous = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return list(reversed(path)) + [start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return component


def layer_of(module: str) -> int | None:
    """The index in LAYERS of a runtime module, None for one the table does not place."""
    local = "" if module == RUNTIME else module[len(RUNTIME) + 1:]
    for number, (_, entries) in enumerate(LAYERS):
        for entry in entries:
            if local == entry or (entry.endswith(".") and
                                  (local + ".").startswith(entry)):
                return number
    return None


def test_the_project_has_no_import_circle():
    graph = import_graph()
    components = strongly_connected(graph)
    assert not components, "import circles:\n" + "\n".join(
        f"  {' -> '.join(one_cycle(graph, c))}   (all of: {', '.join(c)})" for c in components)


def test_every_runtime_module_has_a_layer():
    graph = import_graph()
    runtime = [m for m in graph if m == RUNTIME or m.startswith(RUNTIME + ".")]
    assert len(runtime) > 30
    unplaced = [m for m in runtime if layer_of(m) is None]
    assert not unplaced, f"runtime modules missing from LAYERS: {unplaced}"


def test_the_runtime_imports_only_downwards():
    graph = import_graph()
    wrong = []
    for module, targets in sorted(graph.items()):
        if not (module == RUNTIME or module.startswith(RUNTIME + ".")):
            continue
        mine = layer_of(module)
        for target in sorted(targets):
            if target == RUNTIME or target.startswith(RUNTIME + "."):
                theirs = layer_of(target)
                if theirs is not None and mine is not None and theirs > mine:
                    wrong.append(f"  {module} ({LAYERS[mine][0]}) imports {target} "
                                 f"({LAYERS[theirs][0]})")
    assert not wrong, "imports against the runtime's layering:\n" + "\n".join(wrong)


# What each of the project's packages may import of the others (docs/architecture.md): the
# switch, the host side and the topologies stand alone; the control plane reads topologies;
# the experiment side (inaemu) uses everything.
PACKAGE_MAY_IMPORT = {
    "p4switch": set(),
    "hosts": set(),
    "topologies": set(),
    "controller": {"topologies"},
    "inaemu": {"p4switch", "hosts", "topologies", "controller"},
}


def test_packages_import_only_what_the_architecture_allows():
    graph = import_graph()
    assert set(PACKAGE_MAY_IMPORT) == set(PACKAGES)
    wrong = sorted(f"  {module} imports {target}" for module, targets in graph.items()
                   for target in targets
                   if target.split(".")[0] != module.split(".")[0]
                   and target.split(".")[0] not in PACKAGE_MAY_IMPORT[module.split(".")[0]])
    assert not wrong, "imports against docs/architecture.md:\n" + "\n".join(wrong)


def test_the_graph_sees_lazy_and_relative_imports(tmp_path):
    """The reader itself: a function-level relative import is an edge, and a circle made only
    through one is found."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert one_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    modules = project_modules()
    name = "p4switch.runtime.pygen.primgen"
    path, is_package = modules[name]
    found = imports_of(name, path, is_package, modules)
    assert {"p4switch.runtime.pygen.lanes", "p4switch.runtime.phv.layout",
            "p4switch.runtime.config"} <= found
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def f():\n    from ..phv import layout\n    from . import lanes\n")
    found = imports_of(name, lazy, False, modules)
    assert found == {"p4switch.runtime.phv.layout", "p4switch.runtime.pygen.lanes"}
