"""scatter: every nonzero term at once: gather, multiply, and sum into the outputs, in a handful of calls.

The level moves its axis to the front, takes x's components in the order of the terms' x indices and y's in the
order of their y indices (one gather each), multiplies the two through the level inside it (one call for every
term), scales by the coefficients, and adds each product into its output component (`Engine.segment_sum`: numpy's
``add.reduceat``, torch's ``index_add``, JAX's ``segment_sum``).  No structural zero is multiplied, so a value that
is not finite reaches only the outputs it has a term in.  Its temporaries are the products of all terms, nnz per
inner element, so the batch runs in chunks (`Level.chunk_bytes`).

Its calls do not grow with the factor: the form for engines whose calls cost more than their arithmetic (JAX
outside jit, a GPU's kernel launches), and the one whose program stays small under a tracing compiler (jit) for a
factor of any size.

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

from ...arrays import owner
from ...arrays.axes import align, components, restore
from ...arrays.constants import frozen
from ..factor import TABLE_LIMIT
from .level import Level, Program, around

if TYPE_CHECKING:
    from ..cost import Cost
    from ..factor import Factor

NAME = "scatter"
ROLE = "level"
NESTING = 2
#: The calls one evaluation costs besides the inner level's and a level's `OVERHEAD_CALLS`: two gathers, the
#: scaling, the segmented sum and its runs, priced as calls (numpy, 8 and 64 rows of quaternions, PGA, CG(2) and
#: matrix_algebra(3): 1.05-1.3x the time of dense, which is priced 28 calls).
CALLS = 22


def unsupported(factor: Factor) -> str | None:
    """Why scatter cannot represent `factor`, or None."""
    if factor.nnz > TABLE_LIMIT:
        return f"{factor.name} has {factor.nnz:,} nonzeros, more than kernels.products.factor.TABLE_LIMIT = " \
               f"{TABLE_LIMIT:,}"
    return None


def cost(factor: Factor, inner: Cost) -> Cost:
    """One inner product for all nnz terms, their operands gathered and their products scaled and summed into the
    outputs: every term's operands and product pass through memory, which the batch's chunks keep in cache; the
    gathers read, and the sum writes, through index arrays."""
    c, (d1, d2, d3), terms = inner, factor.shape, factor.nnz
    moved = 2 * (d1 * c.x + d2 * c.y + d3 * c.z) + terms * (2 * (c.x + c.y) + c.moved + 4 * c.z)
    return around(factor, c, flops=terms * (c.flops + 2 * c.z), moved=moved,
                  temporary=terms * (c.x + c.y + 2 * c.z + c.temporary), calls=c.calls + CALLS, repeats=terms,
                  entries=1, indexed=terms * (c.x + c.y + c.z))


def lower(factor: Factor, axis: int, inner: Program) -> Scatter:
    """The scatter level for `factor` on `axis` around `inner`."""
    return Scatter(factor, axis, inner)


class Scatter(Level):
    """The scatter level (see `Level`); the terms are kept sorted by output, the order the segmented sum needs."""

    strategy = NAME

    def __init__(self, factor: Factor, axis: int, inner: Program) -> None:
        super().__init__(factor, axis, inner, cost(factor, inner.cost))
        by_output = np.argsort(factor.indices[:, 2], kind="stable")
        self.i, self.j, self.k = (frozen(np.ascontiguousarray(factor.indices[by_output, role])) for role in range(3))
        values = factor.values[by_output]
        self.values = None if np.all(values == 1) else frozen(values)

    def __call__(self, x: Any, y: Any) -> Any:
        engine = owner(x)
        x, y = align(x, y)
        xc, yc = components(x, self.axis, engine), components(y, self.axis, engine)
        products = self.inner(engine.take(xc, self.i, 0), engine.take(yc, self.j, 0))
        if self.values is not None:
            scale = engine.constant(self.values, products)     # the values themselves: converted once, by identity
            products = products * engine.reshape(scale, (-1,) + (1,) * (len(products.shape) - 1))
        return restore(engine.segment_sum(products, self.k, self.factor.shape[2]), self.axis, engine)

    def describe(self) -> list[str]:
        return [f"scatter on axis {self.axis}: the {self.factor.nnz:,} terms at once: x and y gathered by the terms' "
                f"indices, multiplied, scaled and summed into the {self.factor.shape[2]} outputs; no multiplications "
                f"by zero"]
