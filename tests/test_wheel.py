"""What a user installs is what the tests test: the wheel and the sdist are built from the source tree, the wheel
ships every module and data file of the four package roots, and installed into a fresh virtual environment
outside the source tree it imports every module and runs the tour.

The environment reaches the installed dependencies (numpy, sympy, ...) through a path file that names this
interpreter's site folders as plain paths, so nothing is downloaded and the editable install of the source tree
(a path-file hook in those folders) stays out: a module missing from the wheel cannot be found there instead.
"""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The folder each import root installs from (setup.py's ROOTS).
ROOTS = {"product_interactions": "product_interactions", "product_interactions/algebra": "algebra",
         "product_interactions/kernels": "kernels", "product_interactions/interactions": "interactions"}


def _tracked() -> list[str]:
    return subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


def _source_files() -> set[str]:
    """The package files in the source tree, as paths inside the installed package (the wheel's names)."""
    installed = set()
    for path in _tracked():
        for target, folder in ROOTS.items():
            if path.startswith(folder + "/") and not path.endswith((".pyc", ".md")):
                installed.add(target + path[len(folder):])
    return installed


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The wheel and the sdist, built from a copy of the tracked files (so no build output lands in the tree)."""
    scratch = tmp_path_factory.mktemp("release")
    source = scratch / "source"
    for path in _tracked():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        if not (ROOT / path).is_symlink():
            shutil.copy2(ROOT / path, source / path)
    out = scratch / "dist"
    for hook in ("build_wheel", "build_sdist"):              # PEP 517's hooks, as pip and build call them
        build = f"import sys; from setuptools import build_meta; build_meta.{hook}(sys.argv[1])"
        result = subprocess.run([sys.executable, "-c", build, str(out)], cwd=source, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-3000:]
    (wheel,), (sdist,) = out.glob("*.whl"), out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist, "scratch": scratch}


def test_the_wheel_ships_every_module_and_data_file_of_the_source_tree(built):
    with zipfile.ZipFile(built["wheel"]) as wheel:
        shipped = {name for name in wheel.namelist() if not name.split("/")[0].endswith(".dist-info")}
    assert shipped == _source_files()


def test_the_wheel_metadata_classifies_the_package_and_invents_no_address(built):
    import email.parser
    with zipfile.ZipFile(built["wheel"]) as wheel:
        name = next(name for name in wheel.namelist() if name.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(wheel.read(name).decode())
    classifiers = set(metadata.get_all("Classifier"))
    versions = {c.rsplit(" :: ", 1)[1] for c in classifiers if c.startswith("Programming Language :: Python :: 3.")}
    assert versions and all(tuple(map(int, v.split("."))) >= (3, 10) for v in versions)      # python_requires
    assert metadata["Requires-Python"] == ">=3.10"
    assert {"Operating System :: OS Independent", "Topic :: Scientific/Engineering :: Mathematics"} <= classifiers
    assert "MIT" in (metadata["License-Expression"], metadata["License"])
    assert {"Seq2Tens", "tensor algebra"} <= {word.strip() for word in metadata["Keywords"].split(",")}
    assert metadata.get_all("Project-URL") is None and metadata["Home-page"] is None     # no address exists yet


def test_the_sdist_holds_what_a_wheel_is_built_from(built):
    with tarfile.open(built["sdist"]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    needed = {path for path in _tracked() if path.split("/")[0] in ROOTS.values()}
    needed |= {"setup.py", "setup.cfg", "pyproject.toml", "README.md", "LICENSE"}
    assert not needed - names, sorted(needed - names)


def test_the_installed_wheel_imports_every_module_and_runs_the_tour(built):
    environment = built["scratch"] / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(environment)], check=True, capture_output=True)
    python = environment / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
                              str(built["wheel"])], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-3000:]
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    dependencies = [folder for folder in site.getsitepackages() if os.path.isdir(folder)]
    Path(purelib, "dependencies.pth").write_text("\n".join(dependencies) + "\n")
    modules = sorted(path[:-3].replace("/", ".").removesuffix(".__init__") for path in _source_files()
                     if path.endswith(".py") and not path.endswith("__main__.py"))
    check = ("import importlib, sys\n"
             "for name in sys.argv[1:]:\n"
             "    module = importlib.import_module(name)\n"
             f"    assert module.__file__.startswith({purelib!r}), (name, module.__file__)\n"
             "print(len(sys.argv) - 1)")
    clean = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    clean["PRODUCT_INTERACTIONS_CACHE"] = str(built["scratch"] / "cache")
    imported = subprocess.run([str(python), "-c", check, *modules], cwd=built["scratch"], env=clean,
                              capture_output=True, text=True)
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert int(imported.stdout) == len(modules) > 100
    tour = subprocess.run([str(environment / "bin" / "product-interactions"), "tour"], cwd=built["scratch"],
                          env=clean, capture_output=True, text=True)
    assert tour.returncode == 0, (tour.stdout[-2000:], tour.stderr[-3000:])
