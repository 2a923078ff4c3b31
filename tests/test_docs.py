"""The documentation site builds with warnings as errors, and this build is where the notebooks run.

The build is the README's command, quiet and going on past the first warning to report them all
(``python -m sphinx -W --keep-going -q -b html docs OUT``), into a temporary directory.  A docstring that is not
valid reST, a page or notebook left out of the toctree, or any notebook cell that raises fails it (myst-nb
executes every notebook in notebooks/ and every code cell of the guides, in a fresh kernel of this interpreter),
and the failure shows the warnings with the cell's traceback.  Skipped only when Sphinx is not installed:
``pip install -e ".[docs]"`` (or ``".[test]"``) brings everything the build needs.
"""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))

pytest.importorskip("sphinx", reason="building the docs needs sphinx: pip install -e '.[docs]'")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
    """The built site (its HTML in ``html``; myst-nb keeps the executed notebooks beside it)."""
    html = tmp_path_factory.mktemp("docs") / "html"
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(ROOT / "docs"),
               str(html)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        log = re.sub(r"\x1b\[[0-9;]*m", "", result.stderr + result.stdout)        # without IPython's colours
        pytest.fail(f"the docs build failed (exit {result.returncode}):\n{log}", pytrace=False)
    return html


def test_the_notebook_kernel_is_this_python():
    """myst-nb starts the kernel spec ``python3``; a stale spec elsewhere would run the notebooks in another Python."""
    from jupyter_client.manager import KernelManager
    manager = KernelManager(kernel_name="python3")
    command = manager.format_kernel_cmd()
    assert command[0] == sys.executable, (f"the python3 kernel ({manager.kernel_spec.resource_dir}) would run "
                                          f"{command[0]}, not {sys.executable}")


def test_the_site_builds_without_a_warning(site):
    assert (site / "index.html").is_file()
    assert "MEMORY_LIMIT" in (site / "api" / "kernels.html").read_text()          # autodoc found the members


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_notebook_is_rendered_with_its_figures(site, name):
    page = (site / "notebooks" / f"{name}.html").read_text()
    assert re.search(r'<img [^>]*src="[^"]*\.png"', page), f"{name}: no figure on the rendered page"
