"""Every notebook in notebooks/ runs top to bottom without an error, and is committed with its outputs cleared.

A notebook is executed by nbclient in a fresh kernel of this interpreter (``sys.executable``, whatever python3
kernel specs are installed elsewhere, so it imports the installed package) and matplotlib on the Agg backend.  A notebook is skipped only when a module it needs is not installed
(found among its imports before running, or named by an import error while running), and the skip names them.
"""
from __future__ import annotations

import ast
import importlib.util
import os
import pathlib
import re
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: Seconds one cell may take before the notebook fails.
CELL_TIMEOUT = 600
#: Seconds the kernel may take to start.
STARTUP_TIMEOUT = 120

nbformat = pytest.importorskip("nbformat", reason="the notebook tests need nbformat: pip install -e '.[test]'")


def _ids(paths):
    return [path.name for path in paths]


def _imported_modules(nb) -> set:
    """Top-level names of the modules the code cells import (IPython magics and shell lines skipped)."""
    modules = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue                     # cell magics and the like: the kernel will judge them
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules


def _missing(modules) -> list:
    """The modules not importable here (the kernel runs this interpreter)."""
    return sorted(m for m in modules if importlib.util.find_spec(m) is None)


def _missing_in_error(error) -> list:
    """The uninstalled modules an import error in a cell names (ModuleNotFoundError, or the library's own
    ImportError "<module> is missing: ..."), [] when it names none or only installed or first-party ones."""
    if getattr(error, "ename", None) not in ("ModuleNotFoundError", "ImportError"):
        return []
    named = re.findall(r"No module named '([\w.]+)'", error.evalue)
    named += re.findall(r"^([\w.]+) is missing", error.evalue)
    return _missing({name.split(".")[0] for name in named})


def _kernel_manager():
    """A kernel manager for this interpreter's own ipykernel: the kernel spec ``python3`` that ipykernel ships
    (jupyter_client's native kernel), looked up in no kernel directory, so a stale ``python3`` spec in the
    user's or the system's Jupyter paths cannot point the kernel at another Python."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    specs = KernelSpecManager(kernel_dirs=[], ensure_native_kernel=True)
    manager = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=specs)
    command = manager.kernel_spec.argv
    assert command[0] == sys.executable, f"the python3 kernel would run {command[0]}, not {sys.executable}"
    return manager


def _kernel_environment() -> dict:
    env = dict(os.environ)
    env["MPLBACKEND"] = "Agg"
    env.pop("JPY_PARENT_PID", None)
    return env


def test_the_notebooks_are_found():
    assert NOTEBOOKS, f"no notebooks in {ROOT / 'notebooks'}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_runs(path):
    pytest.importorskip("nbclient", reason="the notebook tests need nbclient: pip install -e '.[test]'")
    pytest.importorskip("ipykernel", reason="the notebook tests need ipykernel: pip install -e '.[test]'")
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    missing = _missing(_imported_modules(nb))
    if missing:
        pytest.skip(f"{path.name} imports {', '.join(missing)}, not installed (pip install -e '.[test]')")

    client = NotebookClient(nb, timeout=CELL_TIMEOUT, startup_timeout=STARTUP_TIMEOUT, kernel_name="python3",
                            km=_kernel_manager(), resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    try:
        client.execute(cleanup_kc=True, env=_kernel_environment())      # we own the kernel: shut it down
    except CellExecutionError as error:
        missing = _missing_in_error(error)
        if missing:
            pytest.skip(f"{path.name} needs {', '.join(missing)}, not installed (pip install -e '.[test]')")
        pytest.fail(f"{path.name} failed:\n{error}", pytrace=False)
    print(f"{path.name}: {time.perf_counter() - start:.1f} s")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_is_committed_cleared(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, cell in enumerate(nb.cells)
             if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)]
    assert not dirty, (f"{path.name}: code cells {dirty} have outputs or execution counts; clear them before "
                       f"committing (jupyter nbconvert --clear-output --inplace {path.relative_to(ROOT)})")
