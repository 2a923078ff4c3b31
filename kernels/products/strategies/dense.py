"""dense: the factor's structure constants as a dense (d1, d2, d3) block in the leaf's contraction.

Represents every factor (the memory guard limits its size).  x meets lam in one matrix product, then y: about
2 d1 d2 d3 FLOPs per inner element, at the speed of matrix products, in a few calls whatever the sparsity.

>>> from product_interactions.algebra import quaternions
>>> from product_interactions.kernels.products.factor import Factor
>>> term(Factor.from_algebra(quaternions()), iter("abc").__next__)
('a', 'b', 'c', 'abc')
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import DTypeLike

from ..cost import Cost
from .operand import Block

if TYPE_CHECKING:
    from ..factor import Factor

NAME = "dense"
ROLE = "leaf"

#: The contraction's fixed cost in calls: opt_einsum's dispatch and the reshapes around two products (measured
#: about 35 microseconds a call on this project's machine).
OVERHEAD_CALLS = 28


def unsupported(factor: Factor) -> str | None:
    """Dense represents every factor (the memory guard limits its size)."""
    return None


def cost(factor: Factor, inner: Cost) -> Cost:
    """x (d1) into lam (d1, d2 d3) by one large matrix product, then the product with y summed over d2: a small
    (d2, d3) matrix product per row and inner element; as temporaries, the (d2, d3) product and a block of partial
    sums (`kernels.products.leaf.dense_blocks`)."""
    d1, d2, d3 = factor.shape
    gemm, loop = 2 * d1 * d2 * d3 * inner.z, 2 * d2 * d3 * inner.z
    return Cost(d1 * inner.x, d2 * inner.y, d3 * inner.z, gemm + loop,
                d1 * inner.x + d2 * inner.y + (2 * d2 + 1) * d3 * inner.z, (d2 + 1) * d3 * inner.z,
                inner.fixed + d1 * d2 * d3, inner.calls + OVERHEAD_CALLS, gemm, loop, inner.z)


def term(factor: Factor, fresh: Callable[[], str]) -> tuple[str, str, str, str]:
    """The leaf term: labels for x, y and z, and lam over all three."""
    a, b, c = fresh(), fresh(), fresh()
    return a, b, c, a + b + c


def constant(factor: Factor, dtype: DTypeLike) -> np.ndarray:
    """The constant operand of `term` (lam)."""
    return factor.dense(dtype)


def operand_unsupported(factor: Factor) -> str | None:
    """In a plan's contraction: every factor (the memory guard limits its size)."""
    return None


def operand_cost(factor: Factor) -> Cost:
    """As in a kernel's leaf."""
    return cost(factor, Cost.elementwise(1))


def operand(factor: Factor) -> Block:
    """lam over all rows and columns and the outputs that have a nonzero term.

    >>> from product_interactions.kernels.products.factor import Factor
    >>> block = operand(Factor((2, 2, 3), "f", [[0, 1, 2]], [5.0]))
    >>> block.values[:, :, 0], block.outputs
    (array([[0., 5.],
           [0., 0.]]), (2,))
    """
    i, j, k = factor.indices.T
    outputs = np.unique(k)
    block = np.zeros(factor.shape[:2] + (len(outputs),))
    block[i, j, np.searchsorted(outputs, k)] = factor.values
    return Block(block, tuple(outputs.tolist()))
