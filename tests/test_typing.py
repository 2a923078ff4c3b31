"""The type check of the public modules (issue 19: ``py.typed`` with annotations on the public API).

mypy checks the installed package ``product_interactions`` with the settings of ``[tool.mypy]`` in pyproject.toml:
every function of ``algebra`` and ``interactions`` annotated (``disallow_untyped_defs``), ``kernels`` checked
loosely for now.  An editable install maps the repository's root directories into the namespace through an import
hook that mypy does not follow, so the package is copied, as the import system finds it, into a scratch directory
and checked there (about 10 s).  Skipped when mypy is not installed (the ``test`` extra installs it).
"""
from __future__ import annotations

import importlib.util
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = "product_interactions"
SUBPACKAGES = ("algebra", "interactions", "kernels")


def _package_directory(name: str) -> pathlib.Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations, f"{name} is not an importable package"
    return pathlib.Path(next(iter(spec.submodule_search_locations)))


def _installed_copy(target: pathlib.Path) -> pathlib.Path:
    """The package as installed, laid out as one directory tree under `target` (sources only)."""
    package = target / PACKAGE
    shutil.copytree(_package_directory(PACKAGE), package, ignore=shutil.ignore_patterns("__pycache__"))
    for name in SUBPACKAGES:
        if not (package / name).is_dir():                                    # an editable install maps it here
            shutil.copytree(_package_directory(f"{PACKAGE}.{name}"), package / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
    return package


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (pip install mypy, or the test extra)")
def test_mypy_passes_on_the_installed_package(tmp_path):
    package = _installed_copy(tmp_path / "tree")
    assert (package / "py.typed").is_file(), "py.typed is missing: type checkers would ignore the annotations"
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "--cache-dir", str(tmp_path / "cache"), "-p", PACKAGE]
    result = subprocess.run(command, cwd=package.parent, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"mypy found problems:\n{result.stdout}{result.stderr}"
