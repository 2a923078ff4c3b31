"""The packages depend in one direction: interactions -> kernels -> algebra, and nothing of ours below algebra."""
from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
ALLOWED = {"algebra": set(), "kernels": {"algebra"}, "interactions": {"algebra", "kernels"}}


def _imports(path: pathlib.Path, package: str) -> set:
    """The sibling packages a module imports (relative imports resolved, absolute ones through the namespace)."""
    depth = len(path.relative_to(ROOT / package).parts) - 1          # subpackages below the package
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                climbed = node.level - 1 - depth                     # levels past the package itself
                parts = (node.module or "").split(".")
                if climbed >= 1 and parts[0]:
                    found.add(parts[0])
                elif climbed >= 1:
                    found.update(alias.name for alias in node.names)
            elif node.module and node.module.split(".")[0] == "product_interactions":
                parts = node.module.split(".")
                found.update([parts[1]] if len(parts) > 1 else [alias.name for alias in node.names])
            elif node.module and node.module.split(".")[0] in ALLOWED:
                found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "product_interactions" and len(parts) > 1:
                    found.add(parts[1])
                elif parts[0] in ALLOWED:
                    found.add(parts[0])
    return found & set(ALLOWED)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_go_one_way(package):
    wrong = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = _imports(path, package) - ALLOWED[package] - {package}
        if bad:
            wrong[str(path.relative_to(ROOT))] = sorted(bad)
    assert not wrong, f"{package} may import only {sorted(ALLOWED[package])}: {wrong}"


def test_the_checker_sees_a_violation(tmp_path, monkeypatch):
    fake = tmp_path / "kernels"
    fake.mkdir()
    (fake / "bad.py").write_text("from ..interactions.expression import Expr\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path, raising=False)
    assert _imports(fake / "bad.py", "kernels") == {"interactions"}


def test_no_module_is_shadowed_by_a_name_its_package_exports():
    """One policy for the whole tree: a module whose name is a name its package exports (a builder and its file,
    algebra.clifford) is private, _clifford.py, so that `import product_interactions.algebra.clifford` can never
    mean two things; every package of the three is walked."""
    import importlib
    import pkgutil
    import types
    shadowed = []

    def walk(name: str) -> None:
        package = importlib.import_module(name)
        for info in pkgutil.iter_modules(package.__path__):
            attribute = getattr(package, info.name, None)
            if attribute is not None and not isinstance(attribute, types.ModuleType):
                shadowed.append(f"{name}.{info.name}")
            if info.ispkg:
                walk(f"{name}.{info.name}")

    for root in ALLOWED:
        walk(f"product_interactions.{root}")
    assert not shadowed, shadowed


def _kernels_imports(path: pathlib.Path) -> set:
    """The modules of kernels a module of interactions imports, as dotted paths below kernels ('' for kernels)."""
    depth = len(path.relative_to(ROOT / "interactions").parts) - 1
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                climbed = node.level - 1 - depth
                parts = module.split(".") if module else []
                if climbed >= 1 and parts and parts[0] == "kernels":
                    found.add(".".join(parts[1:]))
                elif climbed >= 1 and not parts:
                    found.update("" for alias in node.names if alias.name == "kernels")
            elif module.startswith("product_interactions.kernels"):
                found.add(module[len("product_interactions.kernels") + 1:])
    return found


def test_interactions_imports_kernels_only_through_its_public_surfaces():
    """kernels/__init__ and the rooms' own __init__ (arrays, native, plans, products, scans) are the surfaces; the
    modules inside a room are kernels' own business."""
    surfaces = {"", "arrays", "native", "plans", "products", "scans"}
    wrong = {str(path.relative_to(ROOT)): sorted(found - surfaces)
             for path in sorted((ROOT / "interactions").rglob("*.py"))
             if (found := _kernels_imports(path)) - surfaces}
    assert not wrong, wrong


def test_the_surface_checker_sees_a_module_inside_a_room(tmp_path):
    fake = tmp_path / "interactions" / "architectures"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text("from ...kernels.plans.builder import Value\nfrom ...kernels import Mask\n")
    import test_dependencies
    original = test_dependencies.ROOT
    test_dependencies.ROOT = tmp_path
    try:
        assert _kernels_imports(fake / "bad.py") == {"plans.builder", ""}
    finally:
        test_dependencies.ROOT = original
