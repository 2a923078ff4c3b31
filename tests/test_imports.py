"""Importing the package is quick: heavy modules load only when a feature needs them (product_interactions.lazy).

Each case runs in a fresh interpreter, so what an earlier test imported does not hide a slow import.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Modules the issue names as too slow to import up front; none of them is needed to build an algebra.
HEAVY = ("sympy.physics", "scipy.sparse", "scipy.optimize", "scipy.linalg", "matplotlib")


def _modules_after(code: str) -> set:
    """The names in sys.modules after running `code` in a fresh interpreter."""
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return set(json.loads(output.splitlines()[-1]))


def _loaded(modules: set, prefixes) -> list:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_importing_the_algebra_package_loads_neither_sympy_nor_numpy():
    modules = _modules_after("import product_interactions.algebra, product_interactions.algebra.so3")
    assert _loaded(modules, ("sympy", "numpy", "scipy", "matplotlib")) == []


def test_building_and_multiplying_loads_no_heavy_module():
    modules = _modules_after("""
from product_interactions.algebra import clifford, quaternions, tensor_algebra, translation
H = quaternions()
i, j, k = (H.basis_element(label) for label in H.basis[1:])
assert (i * j - k).flat == H.zero().flat
clifford(3, 0, 1), tensor_algebra(2, 3), translation(8)
""")
    assert _loaded(modules, HEAVY) == []
    assert "sympy" in modules                                   # exact arithmetic is the algebra's core


@pytest.mark.parametrize("code, needs", [
    ("product_interactions.algebra.quaternions().is_associative()", "scipy.sparse"),
    ("product_interactions.algebra.clebsch_gordan(2)", "sympy.physics"),      # computed: the cache is empty
])
def test_a_heavy_module_loads_when_its_feature_is_used(code, needs, tmp_path, monkeypatch):
    monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", str(tmp_path))
    assert needs in _modules_after(f"import product_interactions.algebra\n{code}")


def test_exports_resolve_lazily_to_the_same_objects():
    from product_interactions import algebra
    from product_interactions.algebra import so3
    from product_interactions.algebra.so3 import gaunt as gaunt_module_function
    from product_interactions.algebra._tensor_algebra import TensorAlgebra

    assert algebra.TensorAlgebra is TensorAlgebra
    assert callable(algebra.tensor_algebra) and algebra.tensor_algebra(2, 2).dim == 7   # the function, not the
    assert so3.gaunt is gaunt_module_function and algebra.gaunt is so3.gaunt             # module of that name
    assert set(algebra.__all__) <= set(dir(algebra))
    assert {"Algebra", "clebsch_gordan", "translation"} <= set(algebra.__all__)
    assert algebra.symmetry.solve.__name__ == "solve"                  # a subpackage loads on first access


@pytest.mark.parametrize("name", ["nothing", "__wrapped__", "so3.gaunt", "os"])
def test_unknown_names_raise_attribute_error(name):
    from product_interactions import algebra
    with pytest.raises(AttributeError, match=repr(name)):
        getattr(algebra, name)


@pytest.mark.parametrize("package", ["product_interactions", "product_interactions.algebra",
                                     "product_interactions.algebra.so3"])
def test_a_lazy_package_lists_its_exports_and_submodules_only(package):
    import importlib
    import types
    module = importlib.import_module(package)
    public = {name for name in dir(module) if not name.startswith("_")}
    assert set(module.__all__) <= public
    assert all(isinstance(getattr(module, name), types.ModuleType) for name in public - set(module.__all__)), public


def test_the_subpackages_are_attributes_of_the_package():
    modules = _modules_after("import product_interactions as pi\nassert pi.algebra.quaternions().dim == 4")
    assert "product_interactions.algebra" in modules and "product_interactions.kernels" not in modules
