"""Speed of `kernels.product` against numpy references written here, as ratios measured in one run (issue 3).

    python benchmarks/products.py [--repeats N] [--seed S]

Each case times our kernel and its reference alternately in the same process (so drifts in machine load hit
both) and prints the median times and their ratio, ours / reference, next to the target.  Every reference is
checked against an einsum over the dense structure constants before it is timed.  The first line records the
load average and the BLAS thread setting: on a shared machine, multi-threaded OpenBLAS keeps a thread spinning on
the second core after each call, which slows a single-threaded kernel timed right after a BLAS reference.

One BLAS thread unless OPENBLAS_NUM_THREADS is given (the GEMM peak too, so ratios compare like with like): on
this shared 2-core machine, OpenBLAS threads swung the same timings by up to 10x under load.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported; see the docstring
import numpy as np
import opt_einsum

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from product_interactions import kernels  # noqa: E402
from product_interactions.algebra import Algebra, clifford, diagonal, position, tensor_product, translation  # noqa: E402
from timing import (gemm_peak, interleaved, loop_threads_like_blas, median_time, memory_option,  # noqa: E402
                    optional, precompiled_dense)   # benchmarks/timing.py


def dense_numpy(lam):
    """The best numpy formulation over dense lam: x @ lam.reshape(d, d*d), then a batched contraction with y.

    The contraction is the faster of einsum and matmul on this machine, picked once here.
    """
    d = lam.shape[0]
    flat = lam.reshape(d, d * d)

    def by_einsum(x, y):
        return np.einsum("bj,bjk->bk", y, (x @ flat).reshape(-1, d, d))

    def by_matmul(x, y):
        return (y[:, None, :] @ (x @ flat).reshape(-1, d, d))[:, 0]

    x = np.random.default_rng(0).standard_normal((512, d))
    return min((by_einsum, by_matmul), key=lambda f: median_time(lambda: f(x, x), repeats=5))


def pga_unrolled(x, y):
    """The product of clifford(3, 0, 1) (blades 1, e1..e4, e12, e13, e14, e23, e24, e34, e123, e124, e134,
    e234, e1234), unrolled by hand on contiguous component rows."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15 = np.ascontiguousarray(x.T)
    b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15 = np.ascontiguousarray(y.T)
    z = np.empty((16, x.shape[0]))
    z[0] = a0 * b0 + a1 * b1 + a2 * b2 + a3 * b3 - a5 * b5 - a6 * b6 - a8 * b8 - a11 * b11
    z[1] = a0 * b1 + a1 * b0 - a2 * b5 - a3 * b6 + a5 * b2 + a6 * b3 - a8 * b11 - a11 * b8
    z[2] = a0 * b2 + a1 * b5 + a2 * b0 - a3 * b8 - a5 * b1 + a6 * b11 + a8 * b3 + a11 * b6
    z[3] = a0 * b3 + a1 * b6 + a2 * b8 + a3 * b0 - a5 * b11 - a6 * b1 - a8 * b2 - a11 * b5
    z[4] = (a0 * b4 + a1 * b7 + a2 * b9 + a3 * b10 + a4 * b0 - a5 * b12 - a6 * b13 - a7 * b1 - a8 * b14 - a9 * b2
            - a10 * b3 - a11 * b15 - a12 * b5 - a13 * b6 - a14 * b8 + a15 * b11)
    z[5] = a0 * b5 + a1 * b2 - a2 * b1 + a3 * b11 + a5 * b0 - a6 * b8 + a8 * b6 + a11 * b3
    z[6] = a0 * b6 + a1 * b3 - a2 * b11 - a3 * b1 + a5 * b8 + a6 * b0 - a8 * b5 - a11 * b2
    z[7] = (a0 * b7 + a1 * b4 - a2 * b12 - a3 * b13 - a4 * b1 + a5 * b9 + a6 * b10 + a7 * b0 - a8 * b15 - a9 * b5
            - a10 * b6 - a11 * b14 - a12 * b2 - a13 * b3 + a14 * b11 - a15 * b8)
    z[8] = a0 * b8 + a1 * b11 + a2 * b3 - a3 * b2 - a5 * b6 + a6 * b5 + a8 * b0 + a11 * b1
    z[9] = (a0 * b9 + a1 * b12 + a2 * b4 - a3 * b14 - a4 * b2 - a5 * b7 + a6 * b15 + a7 * b5 + a8 * b10 + a9 * b0
            - a10 * b8 + a11 * b13 + a12 * b1 - a13 * b11 - a14 * b3 + a15 * b6)
    z[10] = (a0 * b10 + a1 * b13 + a2 * b14 + a3 * b4 - a4 * b3 - a5 * b15 - a6 * b7 + a7 * b6 - a8 * b9 + a9 * b8
             + a10 * b0 - a11 * b12 + a12 * b11 + a13 * b1 + a14 * b2 - a15 * b5)
    z[11] = a0 * b11 + a1 * b8 - a2 * b6 + a3 * b5 + a5 * b3 - a6 * b2 + a8 * b1 + a11 * b0
    z[12] = (a0 * b12 + a1 * b9 - a2 * b7 + a3 * b15 + a4 * b5 + a5 * b4 - a6 * b14 - a7 * b2 + a8 * b13 + a9 * b1
             - a10 * b11 + a11 * b10 + a12 * b0 - a13 * b8 + a14 * b6 - a15 * b3)
    z[13] = (a0 * b13 + a1 * b10 - a2 * b15 - a3 * b7 + a4 * b6 + a5 * b14 + a6 * b4 - a7 * b3 - a8 * b12 + a9 * b11
             + a10 * b1 - a11 * b9 + a12 * b8 + a13 * b0 - a14 * b5 + a15 * b2)
    z[14] = (a0 * b14 + a1 * b15 + a2 * b10 - a3 * b9 + a4 * b8 - a5 * b13 + a6 * b12 - a7 * b11 + a8 * b4 - a9 * b3
             + a10 * b2 + a11 * b7 - a12 * b6 + a13 * b5 + a14 * b0 - a15 * b1)
    z[15] = (a0 * b15 + a1 * b14 - a2 * b13 + a3 * b12 - a4 * b11 + a5 * b10 - a6 * b9 + a7 * b8 + a8 * b7 - a9 * b6
             + a10 * b5 + a11 * b4 - a12 * b3 + a13 * b2 - a14 * b1 + a15 * b0)
    return np.ascontiguousarray(z.T)


def generic_dense(lam):
    """A generic dense contraction over lam: opt_einsum over x, y and the (d, d, d) array."""
    return lambda x, y: opt_einsum.contract("...i,...j,ijk->...k", x, y, lam)


def fft_convolution(x, y):
    """Circular convolution along the last axis through numpy's real FFT."""
    return np.fft.irfft(np.fft.rfft(x) * np.fft.rfft(y), n=x.shape[-1])


def multiply(x, y):
    return x * y


def compare(ours, reference, x, y, repeats: int):
    """Median seconds of ours(x, y) and reference(x, y) (`timing.interleaved`)."""
    return interleaved(lambda: ours(x, y), lambda: reference(x, y), repeats)


def _reference_check(A, reference, x, y):
    lam = A.structure_constants() if len(A.shape) == 1 else None
    expected = (np.einsum("...i,...j,ijk->...k", x, y, lam, optimize=True) if lam is not None
                else x * y)
    error = np.max(np.abs(reference(x, y) - expected)) / np.max(np.abs(expected))
    assert error < 1e-10, f"the reference for {A.name} is wrong (relative error {error:.1e})"


def cases(rng):
    """(label, algebra, reference, batch, target, [(other reference, its target), ...]) for the issue's cases."""
    lam = rng.integers(-3, 4, (64, 64, 64))
    dense_algebra = Algebra.from_structure_constants(lam, name="random dense d=64")
    pga = clifford(3, 0, 1)
    return [
        ("random dense d=64, batch 4096", dense_algebra, dense_numpy(lam.astype(float)), 4096, 1.0, []),
        ("diagonal(256), batch 4096", diagonal(256), multiply, 4096, 1.5, []),
        ("translation(256), batch 256", translation(256), fft_convolution, 256, 1.5, []),
        ("clifford(3, 0, 1), batch 100000", pga, pga_unrolled, 100_000, 1.2,
         [("generic dense contraction", generic_dense(pga.structure_constants()), 1 / 3),
          ("best numpy dense formulation", dense_numpy(pga.structure_constants()), 1 / 3)]),
        ("position(64) ⊗ diagonal(32), batch 256", tensor_product(position(64), diagonal(32)), multiply, 256, 1.5,
         []),
    ]


class KingdonPGA:
    """kingdon's clifford(3, 0, 1) fed in its own layout: one (16, batch) array of components, in kingdon's blade
    order and signs (our e4 is kingdon's null e0); `to_kingdon` and `from_kingdon` convert batch-first arrays."""

    def __init__(self, kingdon, dtype):
        self.algebra = kingdon.Algebra(3, 0, 1)
        vectors = {"1": self.algebra.blades.e1, "2": self.algebra.blades.e2, "3": self.algebra.blades.e3,
                   "4": self.algebra.blades.e0}
        self.keys, self.signs = [], []
        for label in clifford(3, 0, 1).basis:
            blade = self.algebra.scalar([1])
            for digit in label[1:]:
                blade = blade * vectors[digit]
            (key,), (sign,) = blade.keys(), blade.values()
            self.keys.append(key)
            self.signs.append(float(sign))
        self.order = np.argsort(self.keys)
        self.signs = np.array(self.signs, dtype)

    def to_kingdon(self, x):
        values = (x * self.signs)[:, self.order].T.copy()
        return self.algebra.multivector(values=values, keys=tuple(int(k) for k in np.sort(self.keys)))

    def from_kingdon(self, z):
        where = {int(key): n for n, key in enumerate(z.keys())}
        values = np.asarray([z.values()[where[int(key)]] if int(key) in where else np.zeros(z.values()[0].shape)
                             for key in self.keys])
        return values.T * self.signs


def kingdon_rows(repeats: int) -> bool:
    """clifford(3, 0, 1) against kingdon in kingdon's component-major layout, at batches 1e4 and 1e5, float64
    and float32: ours batch-first (target 1.0), ours component-major, and ours batch-first against kingdon plus the
    transposes a batch-first user makes to feed it."""
    kingdon = optional("kingdon")
    if kingdon is None:
        print("kingdon rows skipped: kingdon is not installed")
        return True
    met = True
    for dtype in (np.float64, np.float32):
        pga = KingdonPGA(kingdon, dtype)
        for batch in (10_000, 100_000):
            x, y = np.random.default_rng(batch).standard_normal((2, batch, 16)).astype(dtype)
            xk, yk = pga.to_kingdon(x), pga.to_kingdon(y)
            ours = kernels.product(clifford(3, 0, 1), dtype=dtype)
            columns = kernels.product(clifford(3, 0, 1), dtype=dtype, layout="component-major")
            xc, yc = np.ascontiguousarray(x.T), np.ascontiguousarray(y.T)
            error = np.abs(pga.from_kingdon(xk * yk) - ours(x, y)).max()
            assert error < (1e-10 if dtype == np.float64 else 1e-3), f"kingdon disagrees by {error}"
            label = f"PGA batch {batch:.0e}, {np.dtype(dtype).name}"
            met &= row(f"{label} vs kingdon (its layout)", "+".join(ours.strategies),
                       *compare(lambda a, b: ours(x, y), lambda a, b: xk * yk, x, y, repeats), 1.0)
            met &= row("  ours component-major vs kingdon", "",
                       *compare(lambda a, b: columns(xc, yc), lambda a, b: xk * yk, x, y, repeats), 1.0)
            met &= row("  vs kingdon + the user's transposes", "",
                       *compare(lambda a, b: ours(x, y), lambda a, b: pga.from_kingdon(pga.to_kingdon(x) *
                                                                                       pga.to_kingdon(y)),
                                x, y, repeats), 1.0)
    return met


def gemm_rows(repeats: int) -> bool:
    """Random dense d = 64, batch 4096, float64 and float32: against the precompiled opt_einsum contraction, and
    its FLOP rate against the GEMM peak measured in the same run (target: at least 60%)."""
    met = True
    lam = np.random.default_rng(1).integers(-3, 4, (64, 64, 64))
    A = Algebra.from_structure_constants(lam, name="random dense d=64")
    for dtype in (np.float64, np.float32):
        x, y = np.random.default_rng(2).standard_normal((2, 4096, 64)).astype(dtype)
        kernel = kernels.product(A, dtype=dtype)
        reference = precompiled_dense(lam.astype(dtype), x.shape, y.shape)
        assert np.allclose(kernel(x, y), reference(x, y), rtol=1e-4, atol=1e-2)
        ours, theirs = compare(kernel, lambda a, b: reference(a, b), x, y, repeats)
        met &= row(f"dense d=64, batch 4096, {np.dtype(dtype).name} vs precompiled opt_einsum",
                   "+".join(kernel.strategies), ours, theirs, 1.0)
        peak = gemm_peak(dtype)
        fraction = 2 * 64**3 * 4096 / ours / peak
        print(f"  {fraction:.0%} of the GEMM peak ({peak / 1e9:.0f} GFLOP/s in this run); target >= 60%: "
              f"{'ok' if fraction >= 0.6 else 'MISSED'}")
        met &= fraction >= 0.6
    return met


def row(label: str, strategy: str, ours: float, theirs: float, target: float) -> bool:
    """Print one table row; True when the ratio meets its target."""
    ratio = ours / theirs
    print(f"{label:42} {strategy:22} {ours * 1e3:9.2f} {theirs * 1e3:9.2f} {ratio:6.2f} "
          f"{'<= ' + format(target, '.2f'):>7}")
    return ratio <= target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21, help="timed calls of each side per case")
    parser.add_argument("--seed", type=int, default=0)
    arguments = memory_option(parser, argv)
    rng = np.random.default_rng(arguments.seed)
    loop_threads_like_blas()
    settings = ", ".join(f"{name}={os.environ.get(name, 'unset')}" for name in ("OPENBLAS_NUM_THREADS",
                                                                               "OPENBLAS_CORETYPE"))
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, {settings}")
    print(f"{'case':42} {'strategy':22} {'ours ms':>9} {'ref ms':>9} {'ratio':>6} {'target':>7}")
    met = True
    for label, A, reference, batch, target, others in cases(rng):
        x, y = (rng.standard_normal((batch, *A.shape)) for _ in range(2))
        _reference_check(A, reference, x[:64], y[:64])
        kernel = kernels.product(A)
        met &= row(label, "+".join(kernel.strategies), *compare(kernel, reference, x, y, arguments.repeats), target)
        for name, other, other_target in others:
            met &= row(f"  vs the {name}", "", *compare(kernel, other, x, y, arguments.repeats), other_target)
    met &= gemm_rows(arguments.repeats)
    met &= kingdon_rows(arguments.repeats)
    print("all targets met" if met else "some targets missed")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
