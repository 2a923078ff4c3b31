"""Packages that import a submodule on the first use of one of its names (PEP 562), so importing them is quick.

A package states its exports as relative imports under ``if TYPE_CHECKING:`` (type checkers and readers see
them there) and calls `attach`, which reads that block and imports each submodule when one of its names is first
looked up.  Any other submodule is imported on first attribute access too (``algebra.symmetry``).

>>> import sys
>>> import product_interactions.algebra as algebra
>>> algebra.quaternions().dim
4
>>> "product_interactions.algebra._clifford" in sys.modules
True
>>> "TYPE_CHECKING" in dir(algebra), "quaternions" in dir(algebra)
(False, True)
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import types
from typing import Any


def exports(source: str) -> dict[str, str]:
    """{name: submodule} for the ``from .submodule import name`` lines under ``if TYPE_CHECKING:`` in source.

    >>> exports("if TYPE_CHECKING:\\n    from .gaunt import gaunt, gaunt_tensor\\n")
    {'gaunt': 'gaunt', 'gaunt_tensor': 'gaunt'}
    """
    owners = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.level == 1:
                    owners.update({alias.asname or alias.name: statement.module for alias in statement.names})
    return owners  # type: ignore[return-value]  # the lines read are ``from .submodule import ...``


def attach(name: str) -> list[str]:
    """Make the package `name` (being imported) lazy; returns its exports in order, for ``__all__``.

    Where a submodule and the function it exports share a name (``gaunt`` in ``gaunt.py``), the function keeps
    it, as after ``from .gaunt import gaunt``: the import system's binding of the submodule is not stored.
    """
    package = sys.modules[name]
    with open(package.__file__, encoding="utf-8") as file:  # type: ignore[arg-type]  # a package has a file
        owners = exports(file.read())

    class LazyPackage(types.ModuleType):
        def __getattr__(self, attribute: str) -> Any:
            if attribute in owners:
                value = getattr(importlib.import_module(f"{name}.{owners[attribute]}"), attribute)
            elif attribute.isidentifier() and not attribute.startswith("__") and importlib.util.find_spec(f"{name}.{attribute}") is not None:
                value = importlib.import_module(f"{name}.{attribute}")
            else:
                raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
            super().__setattr__(attribute, value)
            return value

        def __setattr__(self, attribute: str, value: object) -> None:
            if not (attribute in owners and isinstance(value, types.ModuleType)):
                super().__setattr__(attribute, value)

        def __dir__(self) -> list[str]:
            """The exports, ``__all__``, the submodules imported so far and the dunder names: not the names the
            package's own code imports (``TYPE_CHECKING``, ``attach``)."""
            names = vars(self)
            kept = {key for key, value in names.items() if key.startswith("__") or isinstance(value, types.ModuleType)}
            return sorted(kept | owners.keys() | set(names.get("__all__", ())))

    package.__class__ = LazyPackage
    return list(owners)
