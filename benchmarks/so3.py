"""SO(3) speed as ratios of medians measured in one run (ours / reference; lower is better).

    python benchmarks/so3.py [--repeats 7]      (or python -m benchmarks.so3)

1. Real spherical harmonics up to l = 8 on 100000 points: `algebra.so3.spherical_harmonics` against the exact
   sympy formulas (`spherical_harmonic_formula`) lambdified per (l, m) and stacked.  Target <= 0.5.
2. The Clebsch-Gordan product of two full features, lmax = 2, 4, 6, batch 1000, float64 and float32:
   ``kernels.product(clebsch_gordan(lmax))`` against the precompiled opt_einsum contraction over the CG tensor
   (targets <= 0.5 at lmax 4, <= 1/3 at lmax 6), with its dense FLOP rate against the GEMM peak measured in the
   same run; and against e3nn's ``FullTensorProduct`` on the CPU when e3nn is installed (target: 3x ahead).

One BLAS thread unless OPENBLAS_NUM_THREADS is given (the GEMM peak too, so ratios compare like with like): on
this shared 2-core machine, OpenBLAS threads swung the same timings by up to 10x under load.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported; see the docstring
import numpy as np
import sympy

# This file's name is a module of the package: import the package from the repository root, not this folder.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.dirname(_here)] + [p for p in sys.path if os.path.abspath(p or ".") != _here]

from product_interactions.algebra.so3 import (clebsch_gordan, clebsch_gordan_tensor, spherical_harmonic_formula,  # noqa: E402
                         spherical_harmonics)
from benchmarks.timing import (gemm_peak, interleaved, loop_threads_like_blas, optional,  # noqa: E402
                               precompiled_dense, ratio_row, table_row)

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


# ---------------------------------------------------------------------- the CG product
def e3nn_product(lmax: int, dtype):
    """e3nn's CPU ``FullTensorProduct`` of two (lmax + 1)^2 features, every path l1 x l2 -> l <= lmax (all irreps
    even, so parity removes no path), as a function of two torch tensors; None when e3nn is not installed."""
    o3 = optional("e3nn.o3")
    if o3 is None:
        return None
    import torch
    irreps = o3.Irreps([(1, (l, 1)) for l in range(lmax + 1)])
    product = o3.FullTensorProduct(irreps, irreps, filter_ir_out=[ir for _, ir in irreps])
    product = product.to(getattr(torch, np.dtype(dtype).name))
    paths = sum(1 for l1 in range(lmax + 1) for l2 in range(lmax + 1) for l in range(abs(l1 - l2), min(l1 + l2, lmax) + 1))
    assert len(product.instructions) == paths, f"e3nn has {len(product.instructions)} paths, expected {paths}"

    def run(x, y):
        with torch.no_grad():
            return product(x, y)
    return run


def kernel_rows(repeats: int) -> list:
    """The CG product against the precompiled dense contraction (targets 0.5 at lmax 4, 1/3 at lmax 6, the
    issue's block-sparse targets), its GFLOP/s of dense work against the GEMM peak, and against e3nn on torch
    (target: 3x ahead) when e3nn is installed.  Ours on numpy is not timed against e3nn: torch's idle threads
    slow the numpy BLAS timed right after them, which would charge us for e3nn's threads."""
    from product_interactions import kernels
    rows = []
    for dtype in (np.float64, np.float32):
        peak = gemm_peak(dtype)
        rows.append(f"| GEMM peak {np.dtype(dtype).name}: {peak / 1e9:.0f} GFLOP/s (2048 x 2048 matmul, this run) | | | |")
        for lmax, target in ((2, 1.0), (4, 0.5), (6, 1 / 3)):
            algebra = clebsch_gordan(lmax)
            lam = clebsch_gordan_tensor(lmax).astype(dtype)
            x, y = np.random.default_rng(lmax).standard_normal((2, 1000, algebra.dim)).astype(dtype)
            kernel = kernels.product(algebra, dtype=dtype)
            reference = precompiled_dense(lam, x.shape, y.shape)
            error = np.abs(kernel(x, y) - reference(x, y)).max()
            assert error < (1e-10 if dtype == np.float64 else 1e-3), f"kernel disagrees by {error} at lmax {lmax}"
            case = f"CG product lmax {lmax}, batch 1000, {np.dtype(dtype).name}"
            ours, theirs = interleaved(lambda: kernel(x, y), lambda: reference(x, y), repeats)
            rows.append(table_row(f"{case} vs precompiled opt_einsum ({2 * lam.size * 1000 / ours / peak:.0%} of "
                                  f"GEMM peak in dense FLOPs)", ours / theirs, target))
            e3nn = e3nn_product(lmax, dtype)
            if e3nn is None:
                continue
            import torch
            xt, yt = torch.from_numpy(x), torch.from_numpy(y)
            rows.append(ratio_row(f"{case} vs e3nn FullTensorProduct (both on torch)", lambda: kernel(xt, yt),
                                  lambda: e3nn(xt, yt), 1 / 3, repeats))
    if optional("e3nn") is None:
        rows.append("| e3nn rows skipped: e3nn is not installed | | | |")
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per side (medians are compared)")
    repeats = parser.parse_args(argv).repeats
    loop_threads_like_blas()
    rows = harmonics_rows(repeats)
    kernel = kernel_rows(repeats)
    print(HEADER)
    print("\n".join(rows + kernel))


if __name__ == "__main__":
    main()
