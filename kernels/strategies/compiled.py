"""compiled: one C loop over the nonzero terms (`kernels.clib`), for numpy arrays.

Every term lam[i, j, k] x_i y_j is added once, in registers, for a block of rows whose components sit in cache:
no multiplication by a zero, no temporary per term, one call.  This is the block-sparse strategy of the
Clebsch-Gordan product, and it serves every sparse factor whose other factors are shared (identify) axes.  It
applies where a C compiler works (`kernels.clib.unavailable`) and runs on numpy arrays and torch CPU tensors (an
autograd function whose VJPs are the loop again, `Engine.compiled_loop`); JAX prices it as unavailable (its
``compiled`` rates are 0), so ``auto`` never gives it JAX arrays.

>>> import numpy as np
>>> from product_interactions.algebra import quaternions
>>> from product_interactions.kernels.factor import Factor
>>> from product_interactions.kernels.strategies.identify import Elementwise
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

from .. import clib
from ..autodiff import VJP_ROLES
from ..axes import align, engine_of
from ..cost import Cost
from ..engines import NUMPY
from ..factor import TABLE_LIMIT
from .identify import Elementwise
from .level import Level, Program, around

if TYPE_CHECKING:
    from ..factor import Factor

NAME = "compiled"
ROLE = "level"
NESTING = 4                     # innermost: it needs the elementwise leaf inside it

#: The loop's fixed cost in calls: the ctypes call and the addresses, shapes and strides it is given (measured
#: about 30 microseconds on this project's machine).
CALLS = 25


def unsupported(factor: Factor) -> str | None:
    """Why compiled cannot represent `factor`, or None."""
    if factor.nnz > TABLE_LIMIT:
        return f"{factor.name} has {factor.nnz:,} nonzeros, more than kernels.factor.TABLE_LIMIT = {TABLE_LIMIT:,}"
    return clib.unavailable()


def _elementwise(inner: Cost) -> bool:
    return inner == Cost.elementwise(inner.z)


def cost(factor: Factor, inner: Cost) -> Cost:
    """Three FLOPs per term and inner element in the compiled loop, the operands read and the output written once;
    as temporaries, the copies of operands whose axis must move.  Infinite around anything but the elementwise leaf, which
    the loop cannot call."""
    if not _elementwise(inner):
        return around(factor, inner, flops=np.inf, moved=0, temporary=0, calls=0, compiled=np.inf)
    d1, d2, d3 = factor.shape
    size = inner.z
    terms = 3 * factor.nnz * size
    return around(factor, inner, flops=terms, moved=(d1 + d2 + d3) * size, temporary=(d1 + d2) * size,
                  calls=CALLS, compiled=terms)


def complex_parts(product: Callable[[Any, Any], Any], x: Any, y: Any, real: Callable[[Any], Any],
                  imag: Callable[[Any], Any], join: Callable[[Any, Any], Any]) -> Any:
    """The bilinear `product` of complex x and y from real products of their parts: (a + ib)(c + id) =
    ac - bd + i(ad + bc), with `real`, `imag` and `join` (real and imaginary parts into one) of the library."""
    a, b, c, d = real(x), imag(x), real(y), imag(y)
    return join(product(a, c) - product(b, d), product(a, d) + product(b, c))


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
    chunk_bytes = None

    def __init__(self, factor: Factor, axis: int, inner: Program) -> None:
        super().__init__(factor, axis, inner, cost(factor, inner.cost))
        self._transposed: dict[int, Compiled] = {}

    @functools.cached_property
    def terms(self) -> clib.Terms:
        return clib.Terms.from_table(self.factor.indices, self.factor.values, self.factor.shape[2])

    def transposed(self, argument: int) -> Compiled:
        """The level of the VJP with respect to x (0) or y (1): lam's roles permuted (`kernels.autodiff`)."""
        if argument not in self._transposed:
            self._transposed[argument] = Compiled(self.factor.permuted(VJP_ROLES[argument]), -1, self.inner)
        return self._transposed[argument]

    def loop(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The product of numpy arrays (..., d1) and (..., d2) with one batch shape and this level's axis last;
        complex operands (an fft level's spectra) as real and imaginary parts, the map being bilinear."""
        if np.iscomplexobj(x) or np.iscomplexobj(y):
            return complex_parts(self.loop, x, y, np.real, np.imag, lambda re, im: re + 1j * im)
        d1, d2, d3 = self.factor.shape
        dtype = np.result_type(x, y)
        if dtype not in clib.BLOCK:
            dtype = np.dtype(np.float64)
        x, y = x.astype(dtype, copy=False), y.astype(dtype, copy=False)
        z = clib.sparse_product(self.terms, x.reshape(-1, d1), y.reshape(-1, d2), (d1, d2, d3))
        return z.reshape(x.shape[:-1] + (d3,))

    def __call__(self, x: Any, y: Any) -> Any:
        if type(x) is not np.ndarray or type(y) is not np.ndarray:
            engine = engine_of(x, y)
            if engine is not NUMPY:
                if engine.compiled_loop is None:
                    raise TypeError(f"strategy 'compiled' runs on numpy and torch CPU arrays, got {engine.name} "
                                    f"arrays; use 'auto' (or 'gather', 'codegen' or 'dense') for them")
                return engine.compiled_loop(self, x, y)
            x, y = np.asarray(x), np.asarray(y)
        if self.axis != -1:
            x, y = np.moveaxis(x, self.axis, -1), np.moveaxis(y, self.axis, -1)
        if y.shape[:-1] != x.shape[:-1]:
            x, y = align(x, y)
            batch = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
            x, y = np.broadcast_to(x, batch + x.shape[-1:]), np.broadcast_to(y, batch + y.shape[-1:])
        z = self.loop(x, y)
        return z if self.axis == -1 else np.moveaxis(z, -1, self.axis)

    def describe(self) -> list[str]:
        block = ", ".join(f"{rows} {dtype.name} rows" for dtype, rows in clib.BLOCK.items())
        return [f"compiled on axis {self.axis}: one C loop over the {self.factor.nnz:,} nonzero terms in blocks of "
                f"{block} (kernels.clib); no multiplications by zero"]
