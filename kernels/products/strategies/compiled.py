"""compiled: one loop over the nonzero terms, compiled: C on the CPU (`kernels.native.clib`), Triton on a GPU
(`kernels.native.triton_loop`).

Every term lam[i, j, k] x_i y_j is added once, in registers, for a block of rows whose components sit in cache:
no multiplication by a zero, no temporary per term, one call (one kernel launch on a GPU).  This is the
block-sparse strategy of the Clebsch-Gordan product, and it serves every sparse factor whose other factors are
shared (identify) axes.  It applies where a C compiler works (`kernels.native.build.unavailable`; Triton builds its
launcher with it too) and runs on numpy arrays, torch CPU tensors and torch CUDA tensors where Triton is installed
(an autograd function whose VJPs are the loop again, `Engine.compiled_loop`); the device's rates price it
(`Rates.compiled32`), and JAX, whose arrays cannot enter it, prices it as unavailable (its ``compiled`` rates are
0), so ``auto`` never gives it JAX arrays.

>>> import numpy as np
>>> from product_interactions.algebra import quaternions
>>> from product_interactions.kernels.products.factor import Factor
>>> from product_interactions.kernels.products.strategies.identify import Elementwise
>>> factor = Factor.from_algebra(quaternions())
>>> if unsupported(factor) is None:
...     print(lower(factor, -1, Elementwise(1))(np.eye(4)[1], np.eye(4)[2]))    # i j = k
... else:
...     print([0., 0., 0., 1.])
[0. 0. 0. 1.]
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...native import build, clib
from ..autodiff import VJP_ROLES
from ...arrays.axes import broadcast_batch
from ..cost import Cost
from ...arrays import NUMPY, owner
from ..factor import TABLE_LIMIT
from . import codegen
from .identify import Elementwise
from .level import Level, Program, around

if TYPE_CHECKING:
    from ...arrays import Engine
    from ..factor import Factor

NAME = "compiled"
ROLE = "level"
NESTING = 4                     # innermost: it needs the elementwise leaf inside it

#: Bytes of a block's x and y components (read term by term) that fit the L1 cache, and how many times slower a
#: term is where they do not: its operands then come from the next cache level (translation(256), translation(512)
#: and T(R^4) to degree 5 ran 1.8-2.2x slower per term than CG(4); a flat rate priced translation(256) faster than
#: fft, which took 0.4-0.7x its time).
L1_BYTES = 32 * 2**10
SPILLED = 2.0


def unsupported(factor: Factor) -> str | None:
    """Why compiled cannot represent `factor`, or None."""
    if factor.nnz > TABLE_LIMIT:
        return f"{factor.name} has {factor.nnz:,} nonzeros, more than kernels.products.factor.TABLE_LIMIT = {TABLE_LIMIT:,}"
    return build.unavailable()


def cost(factor: Factor, inner: Cost) -> Cost:
    """Three FLOPs per term and inner element in the compiled loop (`SPILLED` times more where a block's components
    spill the L1 cache, `L1_BYTES`), the operands read and the output written once, one entry into the loop
    (`kernels.products.cost.Rates.compiled_call`); as temporaries, the copies of operands whose axis must move.  Infinite
    around anything but the elementwise leaf, which the loop cannot call."""
    if not inner.is_elementwise():
        return around(factor, inner, flops=np.inf, moved=0, temporary=0, calls=0, repeats=0, entries=0,
                      compiled=np.inf)
    d1, d2, d3 = factor.shape
    size = inner.z
    terms = 3 * factor.nnz * size
    block_bytes = (d1 + d2) * max(rows * dtype.itemsize for dtype, rows in clib.BLOCK.items())
    return around(factor, inner, flops=terms, moved=(d1 + d2 + d3) * size, temporary=(d1 + d2) * size, calls=0,
                  repeats=0, entries=0, compiled=terms * (SPILLED if block_bytes > L1_BYTES else 1.0), compiled_calls=1)


def complex_product(product: Callable[[Any, Any], Any], x: Any, y: Any, engine: Engine) -> Any:
    """The bilinear `product` of x and y, one or both complex, from real products of their parts:
    (a + ib)(c + id) = ac - bd + i(ad + bc), with no product of a missing (zero) imaginary part."""
    def parts(a: Any) -> tuple[Any, Any]:
        return (a.real, a.imag) if engine.dtype(a).kind == "c" else (a, None)
    (a, b), (c, d) = parts(x), parts(y)
    real = product(a, c) if b is None or d is None else product(a, c) - product(b, d)
    imag = [product(*pair) for pair in ((a, d), (b, c)) if pair[0] is not None and pair[1] is not None]
    return real + 1j * (imag[0] if len(imag) == 1 else imag[0] + imag[1])


def lower(factor: Factor, axis: int, inner: Program) -> Compiled:
    """The compiled level for `factor` on `axis` around `inner` (the elementwise leaf)."""
    if not isinstance(inner, Elementwise):
        inside = type(inner).__name__
        raise ValueError(f"strategy: 'compiled' multiplies {factor.name} only when every other factor is a shared "
                         f"(identify) axis, got {inside} inside it; give the other factors other strategies or use "
                         f"'auto'")
    return Compiled(factor, axis, inner)


class Compiled(Level):
    """The compiled level (see `Level`); it runs the whole batch in one call (its blocks are cache-sized)."""

    strategy = NAME
    chunk_bytes = None                          # one call for the whole batch: its own blocks are cache-sized

    def __init__(self, factor: Factor, axis: int, inner: Program) -> None:
        super().__init__(factor, axis, inner, cost(factor, inner.cost))
        self._transposed: dict[int, Compiled] = {}

    @functools.cached_property
    def terms(self) -> clib.Terms:
        return clib.Terms.from_table(self.factor.indices, self.factor.values, self.factor.shape[2])

    def transposed(self, argument: int) -> Compiled:
        """The level of the VJP with respect to x (0) or y (1): lam's roles permuted (`kernels.products.autodiff`)."""
        if argument not in self._transposed:
            self._transposed[argument] = Compiled(self.factor.permuted(VJP_ROLES[argument]), -1, self.inner)
        return self._transposed[argument]

    @functools.cached_property
    def substitute(self) -> Program | None:
        """This level (its axis last) as its engine's own operations, for arrays whose differentiation cannot go
        through the loop (torch.func transforms and forward mode): the codegen level where it represents the factor,
        else None."""
        return codegen.lower(self.factor, -1, self.inner) if codegen.unsupported(self.factor) is None else None

    def __getstate__(self) -> dict[str, Any]:
        """The state copies and pickles take: all but the `substitute` (made again on use; generated code does not
        pickle)."""
        return {key: value for key, value in self.__dict__.items() if key != "substitute"}

    def loop(self, x: np.ndarray, y: np.ndarray, openmp: bool = False) -> np.ndarray:
        """The product of real numpy arrays (..., d1) and (..., d2) with one batch shape and this level's axis
        last (`openmp`: see `kernels.native.clib.sparse_product`)."""
        d1, d2, d3 = self.factor.shape
        dtype = np.result_type(x, y)
        if dtype not in clib.BLOCK:
            dtype = np.dtype(np.float64)
        x, y = x.astype(dtype, copy=False), y.astype(dtype, copy=False)
        z = clib.sparse_product(self.terms, x.reshape(-1, d1), y.reshape(-1, d2), (d1, d2, d3), openmp)
        return z.reshape(x.shape[:-1] + (d3,))

    def __call__(self, x: Any, y: Any) -> Any:
        """On any engine that has the loop: this level's axis moved last and the batches broadcast (by the
        engine's operations, so its autodiff sees them), complex operands (an fft level's spectra) cut into real
        parts, then the loop (`loop` on numpy, `Engine.compiled_loop` elsewhere)."""
        engine = owner(x)
        if engine is NUMPY:
            x, y, product = np.asarray(x), np.asarray(y), self.loop
        elif engine.compiled_loop is None:
            raise TypeError(f"strategy 'compiled' runs on numpy arrays and torch tensors, got {engine.name} arrays; "
                            f"use 'auto' (or 'gather', 'codegen' or 'dense') for them")
        else:
            product = functools.partial(engine.compiled_loop, self)
        if self.axis != -1:
            x, y = engine.moveaxis(x, self.axis, -1), engine.moveaxis(y, self.axis, -1)
        if tuple(x.shape[:-1]) != tuple(y.shape[:-1]):
            x, y, _ = broadcast_batch(x, y, engine)
        if engine.dtype(x).kind == "c" or engine.dtype(y).kind == "c":
            z = complex_product(product, x, y, engine)
        else:
            z = product(x, y)
        return z if self.axis == -1 else engine.moveaxis(z, -1, self.axis)

    def describe(self) -> list[str]:
        block = ", ".join(f"{clib.block_rows(dtype, self.factor.shape)} {dtype.name} rows" for dtype in clib.BLOCK)
        return [f"compiled on axis {self.axis}: one C loop over the {self.factor.nnz:,} nonzero terms in blocks of "
                f"{block} (kernels.native.clib); no multiplications by zero"]


#: The batch runs whole, in one call: what the model prices (`kernels.products.select.chunk_bytes`), read from the
#: level `Kernel` runs, so the two cannot disagree.
WHOLE_BATCH = Compiled.chunk_bytes is None
