"""Every docstring example in the installed package runs as written (one test per module)."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import product_interactions


def _modules() -> list:
    names = [product_interactions.__name__]
    for info in pkgutil.walk_packages(product_interactions.__path__, prefix="product_interactions."):
        names.append(info.name)
    for package in ("algebra", "kernels", "interactions"):
        module = importlib.import_module(f"product_interactions.{package}")
        names += [info.name for info in pkgutil.walk_packages(module.__path__, prefix=f"{module.__name__}.")]
        names.append(module.__name__)
    return sorted({name for name in names if not name.endswith("__main__")})


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    failures = []
    for test in finder.find(module, name):
        result = runner.run(test, out=failures.append)
        del result
    assert runner.failures == 0, "".join(failures)
