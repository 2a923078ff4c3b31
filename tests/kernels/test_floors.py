"""kernels/ is built in floors, each importing only the floors below it (the native code at the bottom, then the
arrays, then products and scans side by side, then plans), and no module is in an import cycle.  Every import that
runs counts, those inside functions too (they run as soon as the function does); those under ``if TYPE_CHECKING:``
(for annotations only) do not."""
from __future__ import annotations

import ast
import pathlib

import pytest

KERNELS = pathlib.Path(__file__).resolve().parents[2] / "kernels"
#: Each room and its floor: a room may import its own modules and those of lower floors only.
FLOORS = {"native": 0, "arrays": 1, "products": 2, "scans": 2, "plans": 3}
PACKAGE = "product_interactions.kernels"


def _module(path: pathlib.Path) -> str:
    parts = path.relative_to(KERNELS).with_suffix("").parts
    return ".".join((PACKAGE,) + (parts[:-1] if parts[-1] == "__init__" else parts))


def _imports(path: pathlib.Path) -> set[str]:
    """The modules of kernels that `path` imports (``from . import name`` counts the submodule where one exists)."""
    module = _module(path)
    here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in _running(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1] + ([node.module] if node.module else [])
                target = ".".join(base)
            else:
                target = node.module or ""
            if not target.startswith(PACKAGE):
                continue
            for alias in node.names:
                child = f"{target}.{alias.name}"
                found.add(child if _exists(child) else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith(PACKAGE))
    return found - {module}


def _running(tree: ast.AST) -> list[ast.AST]:
    """The nodes of `tree` outside ``if TYPE_CHECKING:`` blocks."""
    found, pending = [], [tree]
    while pending:
        node = pending.pop()
        found.append(node)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found


def _exists(module: str) -> bool:
    relative = pathlib.Path(*module.split(".")[2:])
    return (KERNELS / relative).with_suffix(".py").is_file() or (KERNELS / relative / "__init__.py").is_file()


def _room(module: str) -> str | None:
    """The room of a module of kernels (None for the package itself, the public surface above every floor)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else None


def _graph(root: pathlib.Path = KERNELS) -> dict[str, set[str]]:
    return {_module(path): _imports(path) for path in sorted(root.rglob("*.py"))}


def _upward(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, imported in graph.items():
        room = _room(module)
        for target in imported:
            other = _room(target)
            if room is None or other == room:
                continue
            if other is None or FLOORS[other] >= FLOORS[room]:
                wrong.append(f"{module} -> {target}")
    return sorted(wrong)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_every_module_belongs_to_a_room_of_a_known_floor():
    rooms = {_room(module) for module in _graph()} - {None}
    assert rooms == set(FLOORS)
    assert not [path.name for path in KERNELS.glob("*.py") if path.name != "__init__.py"]


def test_no_import_runs_up_a_floor_or_across_to_a_sibling():
    assert _upward(_graph()) == []


def test_no_import_cycle_spans_two_rooms():
    spanning = [component for component in _cycles(_graph()) if len({_room(m) for m in component}) > 1]
    assert spanning == []


def test_no_module_of_kernels_is_in_an_import_cycle():
    assert _cycles(_graph()) == []


@pytest.mark.parametrize("source, expected", [
    ("from ..plans.plan import Plan\n", ["product_interactions.kernels.arrays.bad -> "
                                         "product_interactions.kernels.plans.plan"]),
    ("from ..scans import recurrence\n", ["product_interactions.kernels.arrays.bad -> "
                                          "product_interactions.kernels.scans.recurrence"]),
    ("from .. import product\n", ["product_interactions.kernels.arrays.bad -> product_interactions.kernels"]),
    ("def f():\n    from ..native import clib\n", []),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..plans.plan import Plan\n", []),
])
def test_the_checker_sees_an_upward_import(tmp_path, monkeypatch, source, expected):
    for room in ("arrays", "plans", "scans", "native"):
        (tmp_path / room).mkdir()
        (tmp_path / room / "__init__.py").write_text("")
    (tmp_path / "plans" / "plan.py").write_text("")
    (tmp_path / "scans" / "recurrence.py").write_text("")
    (tmp_path / "native" / "clib.py").write_text("")
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "arrays" / "bad.py").write_text(source)
    monkeypatch.setattr(__import__(__name__), "KERNELS", tmp_path, raising=False)
    assert _upward(_graph(tmp_path)) == expected


def test_the_checker_sees_a_cycle():
    graph = {"a.x": {"a.y"}, "a.y": {"b.z"}, "b.z": {"a.x"}, "c": set()}
    assert _cycles(graph) == [["a.x", "a.y", "b.z"]]
