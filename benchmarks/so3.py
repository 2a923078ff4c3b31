"""SO(3) speed as ratios of medians measured in one run (ours / reference; lower is better).

    python benchmarks/so3.py [--repeats 7]      (or python -m benchmarks.so3)

1. Real spherical harmonics up to l = 8 on 100000 points: `algebra.so3.spherical_harmonics` against the exact
   sympy formulas (`spherical_harmonic_formula`) lambdified per (l, m) and stacked.  Target <= 0.5.
2. The Clebsch-Gordan product of two full features, lmax = 2, 4, 6, batch 1000, float64 and float32:
   ``kernels.product(clebsch_gordan(lmax))`` against a dense contraction over the CG tensor written here.
   Targets <= 1.0 at lmax 2 and 4, <= 0.5 at lmax 6.  This section runs only when ``kernels.product`` exists.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

import numpy as np
import sympy

# This file's name is a module of the package: import the package from the repository root, not this folder.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.dirname(_here)] + [p for p in sys.path if os.path.abspath(p or ".") != _here]

from product_interactions.algebra.so3 import (clebsch_gordan, clebsch_gordan_tensor, spherical_harmonic_formula,  # noqa: E402
                         spherical_harmonics)
from benchmarks.timing import ratio_row  # noqa: E402

HEADER = "| case | ratio | target | |\n| --- | --- | --- | --- |"


def lambdified_harmonics(lmax: int):
    """The reference: one numpy function per (l, m) from the exact formulas, stacked into (n, (lmax + 1)**2)."""
    x, y, z = sympy.symbols("x y z", real=True)
    functions = [sympy.lambdify((x, y, z), spherical_harmonic_formula(l, m, x, y, z), "numpy")
                 for l in range(lmax + 1) for m in range(-l, l + 1)]

    def evaluate(points):
        unit = points / np.linalg.norm(points, axis=-1, keepdims=True)
        columns = [np.broadcast_to(f(*unit.T), unit.shape[:-1]) for f in functions]
        return np.stack(columns, axis=-1)
    return evaluate


def harmonics_rows(repeats: int) -> list:
    lmax, points = 8, np.random.default_rng(0).standard_normal((100_000, 3))
    reference = lambdified_harmonics(lmax)
    error = np.abs(spherical_harmonics(lmax, points) - reference(points)).max()
    assert error < 1e-10, f"the harmonics disagree with the formulas by {error}"
    return [ratio_row(f"spherical harmonics l <= {lmax}, 100000 points, float64",
                      lambda: spherical_harmonics(lmax, points), lambda: reference(points), 0.5, repeats)]


# ---------------------------------------------------------------------- needs the kernels package
def kernel_rows(repeats: int) -> list:
    """CG product kernels against a dense einsum over the CG tensor; [] when kernels.product is missing."""
    try:
        kernels = importlib.import_module("product_interactions.kernels")
    except ImportError:
        return []
    if not hasattr(kernels, "product"):
        return []
    rows = []
    for lmax, target in ((2, 1.0), (4, 1.0), (6, 0.5)):
        algebra = clebsch_gordan(lmax)
        for dtype in (np.float64, np.float32):
            lam = clebsch_gordan_tensor(lmax).astype(dtype)
            x, y = np.random.default_rng(lmax).standard_normal((2, 1000, algebra.dim)).astype(dtype)
            kernel = kernels.product(algebra, dtype=dtype)

            def dense(x=x, y=y, lam=lam):
                return np.einsum("bi,bj,ijk->bk", x, y, lam, optimize=True)
            error = np.abs(kernel(x, y) - dense()).max()
            assert error < (1e-10 if dtype == np.float64 else 1e-3), f"kernel disagrees by {error} at lmax {lmax}"
            rows.append(ratio_row(f"CG product lmax {lmax}, batch 1000, {np.dtype(dtype).name}",
                                  lambda kernel=kernel, x=x, y=y: kernel(x, y), dense, target, repeats))
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per side (medians are compared)")
    repeats = parser.parse_args(argv).repeats
    rows = harmonics_rows(repeats)
    kernel = kernel_rows(repeats)
    print(HEADER)
    print("\n".join(rows + kernel))
    if not kernel:
        print("(CG product kernels skipped: kernels.product is not available yet)")


if __name__ == "__main__":
    main()
