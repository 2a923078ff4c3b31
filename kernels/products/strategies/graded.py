"""graded: the truncated tensor algebra T(R^d), level by level: z_k = sum_{i + j = k} x_i (x) y_j.

The product never looks at the structure constants: level k of z is the sum of the outer products of level i of
x and level j of y, written in place into z's slice of level k (a buffer holds one outer product at a time), so
the only work is the (k + 1) d^k multiplications and additions per level.  With other factors inside (a tensor
product with T(V)), each outer product multiplies whole components through the inner level.

>>> import numpy as np
>>> from product_interactions.algebra import tensor_algebra
>>> from product_interactions.kernels.products.factor import Factor
>>> from product_interactions.kernels.products.strategies.identify import Elementwise
>>> T = tensor_algebra(2, 2)
>>> level = lower(Factor.from_algebra(T), -1, Elementwise(1))
>>> x, y = T.lift([1, 2]).to_array(), T.lift([3, 0]).to_array()
>>> level(x, y)                                 # (1, x, 0) (1, y, 0) = (1, x + y, x (x) y)
array([1., 4., 2., 3., 0., 6., 0.])
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...arrays.axes import align, components, restore
from ...arrays.example_sizes import broadcast_shapes
from ...arrays import NUMPY, owner
from .identify import Elementwise
from .level import Level, Program, around

if TYPE_CHECKING:
    from ..cost import Cost
    from ...arrays import Engine
    from ..factor import Factor

NAME = "graded"
ROLE = "level"
NESTING = 3


def unsupported(factor: Factor) -> str | None:
    """Why graded cannot represent `factor` (it needs a truncated tensor algebra), or None."""
    if factor.graded() is None:
        return f"{factor.name} is not a truncated tensor algebra; graded needs one"
    return None


def cost(factor: Factor, inner: Cost) -> Cost:
    """(k + 1) d^k inner products and additions for each level k, two calls per outer product.  As temporaries,
    what the paths of `Graded` hold at most: with nothing inside, the components moved in front and a buffer of the
    top level (in place, numpy), or the levels made so far, an outer product and the running sum (broadcast);
    through an inner level, the components, the levels so far and, for the top level, both factors of an outer
    product broadcast, the inner's product and temporaries and the running sum."""
    width, degree = factor.graded()  # type: ignore[misc]  # graded applies: a truncated tensor algebra
    d, top = factor.shape[0], width**degree                       # x, y and z have d components each
    terms = [(k + 1) * width**k for k in range(degree + 1)]
    c, pairs, outer_products = inner, sum(terms), sum(k + 1 for k in range(degree + 1))
    temporary = ((2 * d + top) * c.z if c.is_elementwise() else   # in place holds more than broadcast (d + top)
                 d * (c.x + c.y + c.z) + top * (c.x + c.y + c.z + c.temporary))
    return around(factor, c, flops=pairs * (c.flops + c.z), moved=pairs * (c.moved + 3 * c.z), temporary=temporary,
                  calls=2 * outer_products * c.calls + 2, repeats=pairs, entries=outer_products)


def lower(factor: Factor, axis: int, inner: Program) -> Graded:
    """The graded level for `factor` on `axis` around `inner`."""
    return Graded(factor, axis, inner)


class Graded(Level):
    """The graded level (see `Level`).  The factor's axis goes in front (a copy, once), so that every level is a
    block of contiguous components and each outer product runs over long contiguous rows."""

    strategy = NAME

    def __init__(self, factor: Factor, axis: int, inner: Program) -> None:
        super().__init__(factor, axis, inner, cost(factor, inner.cost))
        self.width, self.degree = factor.graded()  # type: ignore[misc]  # graded applies: a tensor algebra
        self.offsets = [sum(self.width**m for m in range(k)) for k in range(self.degree + 2)]

    def _level(self, components: Any, k: int) -> Any:
        return components[self.offsets[k]:self.offsets[k + 1]]

    def __call__(self, x: Any, y: Any) -> Any:
        engine = owner(x)
        x, y = align(x, y)
        if isinstance(self.inner, Elementwise) and engine is not NUMPY:
            return self._broadcast(engine, x, y)
        xc, yc = components(x, self.axis, engine), components(y, self.axis, engine)
        if isinstance(self.inner, Elementwise):
            return restore(self._in_place(xc, yc), self.axis, engine)
        return restore(self._outer_products(engine, xc, yc), self.axis, engine)

    def _broadcast(self, engine: Engine, x: Any, y: Any) -> Any:
        """Nothing inside, on an engine that works out of place (torch, JAX): each outer product one broadcast
        multiplication along the factor's axis where it lies (batch first stays batch first, no copy), the
        levels concatenated."""
        x, y = engine.moveaxis(x, self.axis, -1), engine.moveaxis(y, self.axis, -1)
        parts = []
        for k in range(self.degree + 1):
            total: Any = None
            for i in range(k + 1):
                outer = self._level_last(x, i)[..., :, None] * self._level_last(y, k - i)[..., None, :]
                outer = engine.reshape(outer, tuple(outer.shape[:-2]) + (outer.shape[-2] * outer.shape[-1],))
                total = outer if total is None else total + outer
            parts.append(total)
        return engine.moveaxis(engine.concatenate(parts, axis=-1), -1, self.axis)

    def _level_last(self, a: Any, k: int) -> Any:
        return a[..., self.offsets[k]:self.offsets[k + 1]]

    def _in_place(self, xc: np.ndarray, yc: np.ndarray) -> np.ndarray:
        """Nothing inside: z_k = sum_i x_i (x) y_(k-i), each outer product by broadcasting into a buffer, then
        added into z's block of level k."""
        rest = np.broadcast_shapes(xc.shape[1:], yc.shape[1:])
        z = np.empty((self.offsets[-1],) + rest, np.result_type(xc, yc))
        buffer = np.empty((self.width**self.degree,) + rest, z.dtype)
        for k in range(self.degree + 1):
            zk = self._level(z, k)
            np.multiply(self._level(xc, k), yc[:1], out=zk)                       # x_k y_0
            for i in range(k):
                rows, columns = self.width**i, self.width**(k - i)
                part = buffer[:rows * columns]
                np.multiply(self._level(xc, i)[:, None], self._level(yc, k - i)[None, :],
                            out=part.reshape((rows, columns) + rest))
                zk += part
        return z

    def _outer_products(self, engine: Engine, xc: Any, yc: Any) -> Any:
        """Each outer product through the inner level (other factors inside, or an engine that works out of
        place): level k is the sum of its outer products, the levels concatenated."""
        parts = []
        for k in range(self.degree + 1):
            total: Any = None
            for i in range(k + 1):
                xi, yj = self._level(xc, i), self._level(yc, k - i)
                pairs = (xi.shape[0], yj.shape[0]) + broadcast_shapes(tuple(xi.shape[1:]), tuple(yj.shape[1:]))
                xs, ys = (engine.reshape(engine.broadcast_to(a, pairs), (pairs[0] * pairs[1],) + pairs[2:])
                          for a in (xi[:, None], yj[None, :]))
                outer = self.inner(xs, ys)
                total = outer if total is None else total + outer
            parts.append(total)
        return engine.concatenate(parts, axis=0)

    def describe(self) -> list[str]:
        return [f"graded on axis {self.axis}: T(R^{self.width}) to degree {self.degree}, z_k = sum_(i+j=k) x_i (x) "
                f"y_j level by level ({'in place' if isinstance(self.inner, Elementwise) else 'through the inner level'}"
                f"); no structure constants"]
