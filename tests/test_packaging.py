"""The distribution installs one top-level name, so it sits beside the PyPI packages called algebra, kernels or
interactions without shadowing them (and they cannot shadow us)."""
from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys

import product_interactions


#: Run in a scratch directory: from the repository root, the source tree and its egg-info would be found first.
INSPECT = """
import importlib.metadata, importlib.util, json
distribution = importlib.metadata.distribution("product-interactions")
files = [str(path) for path in distribution.files or ()]
finder = next((path for path in distribution.files or () if str(path).endswith("_finder.py")), None)
mapping = []
if finder is not None:
    spec = importlib.util.spec_from_file_location("finder_under_test", finder.locate())
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    mapping = sorted(module.MAPPING)
print(json.dumps({"top_level": distribution.read_text("top_level.txt").split(), "files": files,
                  "mapping": mapping}))
"""


def _installed(tmp_path) -> dict:
    result = subprocess.run([sys.executable, "-c", INSPECT], cwd=tmp_path, capture_output=True, text=True,
                            check=True)
    return json.loads(result.stdout)


def test_the_only_top_level_name_is_product_interactions(tmp_path):
    installed = _installed(tmp_path)
    assert installed["top_level"] == ["product_interactions"]
    roots = {path.split("/")[0].split(".")[0] for path in installed["files"]}
    assert not roots & {"algebra", "kernels", "interactions"}, installed["files"]


def test_an_editable_install_maps_only_the_namespace(tmp_path):
    mapping = _installed(tmp_path)["mapping"]          # empty for a regular install
    assert all(name.split(".")[0] == "product_interactions" for name in mapping), mapping


def test_the_subpackages_import_through_the_namespace_in_a_fresh_process(tmp_path):
    code = ("import sys; from product_interactions import algebra, kernels, interactions; "
            "assert 'algebra' not in sys.modules and 'kernels' not in sys.modules; print(algebra.__name__)")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "product_interactions.algebra"
    assert product_interactions.__version__ == importlib.metadata.version("product-interactions")


def test_the_console_script_runs(tmp_path):
    result = subprocess.run([sys.executable, "-m", "product_interactions", "--help"], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    assert "product-interactions" in result.stdout and "tour" in result.stdout


def test_the_release_files_ship():
    import importlib.resources
    import pathlib
    assert importlib.resources.files("product_interactions").joinpath("py.typed").is_file()
    root = pathlib.Path(__file__).resolve().parents[1]
    assert "MIT License" in (root / "LICENSE").read_text()
    assert "arXiv:2602.02573" in (root / "CITATION.cff").read_text()
    assert "## [Unreleased]" in (root / "CHANGELOG.md").read_text()
