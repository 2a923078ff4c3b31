"""codegen: generated numpy source, one expression per output component (see `kernels.products.source`).

The level moves its axis to the front (copying once, so that each component is contiguous), calls the compiled
function on the components and stacks the outputs; numpy arrays with nothing inside go through the in-place
form instead, which writes each output row of one preallocated array (`kernels.products.source.InPlace`).  The functions
are generated and compiled once per structure.

>>> import numpy as np
>>> from product_interactions.algebra import quaternions
>>> from product_interactions.kernels.products.factor import Factor
>>> from product_interactions.kernels.products.strategies.identify import Elementwise
>>> level = lower(Factor.from_algebra(quaternions()), -1, Elementwise(1))
>>> level(np.eye(4)[1], np.eye(4)[2])        # i j = k
array([0., 0., 0., 1.])
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import source
from ...arrays import owner
from ...arrays.axes import align, components, restore, stack
from .identify import Elementwise
from .level import Level, Program, around

if TYPE_CHECKING:
    from ..cost import Cost
    from ..factor import Factor

NAME = "codegen"
ROLE = "level"
NESTING = 1

#: Factors with more nonzeros than this are refused (the source would be too long to be worth compiling).
MAX_TERMS = 20_000


def unsupported(factor: Factor) -> str | None:
    """Why codegen cannot represent `factor`, or None."""
    if factor.nnz > MAX_TERMS:
        return (f"{factor.name} has {factor.nnz:,} nonzero coefficients, more than codegen.MAX_TERMS = "
                f"{MAX_TERMS:,}; use gather or dense")
    return None


def cost(factor: Factor, inner: Cost) -> Cost:
    """The generated expressions' products (each an inner product) and additions, one call each, plus moving the
    components in and stacking the outputs."""
    c, s = inner, source.generate(factor)
    d1, d2, d3 = factor.shape
    linear = s.additions + s.scalings
    copies = 2 * (d1 * c.x + d2 * c.y + 2 * d3 * c.z)           # components in, stacked and placed out
    return around(factor, c, flops=s.products * c.flops + linear * c.z,
                  moved=s.products * c.moved + 3 * linear * c.z + copies,
                  temporary=d1 * c.x + d2 * c.y + (2 * d3 + s.shared + 2) * c.z + c.temporary,
                  calls=s.products * c.calls + linear + 6, repeats=s.products, entries=s.products)


def lower(factor: Factor, axis: int, inner: Program) -> Codegen:
    """The codegen level for `factor` on `axis` around `inner`."""
    return Codegen(factor, axis, inner)


class Codegen(Level):
    """The codegen level (see `Level`)."""

    strategy = NAME

    def __init__(self, factor: Factor, axis: int, inner: Program) -> None:
        super().__init__(factor, axis, inner, cost(factor, inner.cost))
        self.source = source.generate(factor)

    def __call__(self, x: Any, y: Any) -> Any:
        engine = owner(x)
        x, y = align(x, y)
        xc, yc = components(x, self.axis, engine), components(y, self.axis, engine)
        if (type(xc) is np.ndarray and type(yc) is np.ndarray and min(xc.ndim, yc.ndim) > 1
                and isinstance(self.inner, Elementwise)):
            z = np.empty((self.factor.shape[2],) + np.broadcast_shapes(xc.shape[1:], yc.shape[1:]),
                         np.result_type(xc, yc))
            self.source.in_place(xc, yc, z)
            return restore(z, self.axis, engine)
        parts = self.source.function(xc, yc, self.inner)
        return restore(stack(parts, lambda: self.inner(xc[0], yc[0]), engine), self.axis, engine)

    def describe(self) -> list[str]:
        s = self.source
        return [f"codegen on axis {self.axis}: {s.products} products, {s.additions} additions, {s.scalings} "
                f"scalings, {s.shared} shared temporaries; generated source:",
                *("    " + line for line in s.text.splitlines())]
