"""Small, seeded, offline experiments; each returns its figures as data (see `report`) and can write them as JSON.

``run(name, quick=..., seed=..., out=...)`` or ``python -m interactions experiment NAME [--quick] [--seed S]
[--out results.json]``.  NAME is one of `EXPERIMENTS`:

* ``copy``: selective copying at length 192 with attention of projection rank R = 1, 2, 4 (`selective_copy`);
* ``symmetry``: the multiplication operator O_K on digits, exact translation constraint vs none vs the
  regulariser (`symmetry`);
* ``seq2tens``: LS2T and FCN-LS2T classification of sktime's JapaneseVowels and BasicMotions (`seq2tens`);
* ``dynamical``: the dynamical layer's (I, H) grid against Mamba on sequential digits (`dynamical`).

``--quick`` is the setting the tests run (well under a minute); the full setting reproduces the paper's trend.
The data come from the ``experiments`` extra: ``pip install -e ".[experiments]"``.
"""
from __future__ import annotations

import importlib

from .report import check_setting, table, write

EXPERIMENTS = {"copy": "selective_copy", "symmetry": "symmetry", "seq2tens": "seq2tens", "dynamical": "dynamical"}


def run(name: str, quick: bool = False, seed: int = 0, out=None, progress: bool = True) -> dict:
    """Run experiment `name`; writes the result as JSON to `out` when given, and returns it."""
    if name not in EXPERIMENTS:
        raise ValueError(f"name: expected one of {sorted(EXPERIMENTS)}, got {name!r}")
    check_setting(quick, seed)
    module = importlib.import_module(f".{EXPERIMENTS[name]}", __name__)
    result = module.run(quick=quick, seed=seed, progress=progress)
    if out is not None:
        write(result, out)
    return result


__all__ = ["EXPERIMENTS", "run", "table", "write"]
