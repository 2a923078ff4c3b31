"""Every notebook in notebooks/ is committed valid and with its outputs cleared.

The notebooks run top to bottom in the documentation build (tests/test_docs.py), which executes each one in a
fresh kernel and fails on any cell error; the site shows their outputs, so the repository need not.
"""
from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

nbformat = pytest.importorskip("nbformat", reason="the notebook tests need nbformat: pip install -e '.[test]'")


def _ids(paths):
    return [path.name for path in paths]


def test_the_notebooks_are_found():
    assert NOTEBOOKS, f"no notebooks in {ROOT / 'notebooks'}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_is_committed_cleared(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, cell in enumerate(nb.cells)
             if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)]
    assert not dirty, (f"{path.name}: code cells {dirty} have outputs or execution counts; clear them before "
                       f"committing (jupyter nbconvert --clear-output --inplace {path.relative_to(ROOT)})")
