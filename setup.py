"""Packages found, not listed: every folder with an ``__init__.py`` under the four roots below installs as a
subpackage of ``product_interactions``.  The repository keeps ``algebra/``, ``kernels/`` and ``interactions/`` at
its root (the design card's layout); everything else about the distribution is in setup.cfg.
"""
from setuptools import find_packages, setup

#: Import name -> the folder it installs from.
ROOTS = {
    "product_interactions": "product_interactions",
    "product_interactions.algebra": "algebra",
    "product_interactions.kernels": "kernels",
    "product_interactions.interactions": "interactions",
}

setup(
    package_dir=ROOTS,
    packages=[package for name, root in ROOTS.items()
              for package in [name, *(f"{name}.{sub}" for sub in find_packages(root))]],
)
