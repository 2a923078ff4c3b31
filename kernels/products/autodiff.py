"""Gradients with autograd: each kernel is one autograd primitive whose vector-Jacobian products are kernels.

For z_k = sum lam[i, j, k] x_i y_j the VJP with respect to x is g -> sum_jk lam[i, j, k] y_j g_k, the bilinear
product of (y, g) with the roles of lam permuted (1, 2, 0); with respect to y it is (x, g) with (0, 2, 1).
Batch axes that were broadcast are summed back.  The VJP kernels are kernels too, so higher derivatives work.

>>> import autograd, autograd.numpy as anp, numpy as np
>>> from product_interactions import kernels
>>> from product_interactions.algebra import complex_numbers
>>> K = kernels.product(complex_numbers())
>>> autograd.grad(lambda x: anp.sum(K(x, np.array([0.0, 1.0]))))(np.array([1.0, 2.0]))   # sum(i x) = x0 - x1
array([ 1., -1.])
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import autograd.numpy as anp
from autograd.extend import defvjp, primitive

if TYPE_CHECKING:
    from .kernel import Kernel

#: For the VJP with respect to argument 0 (x) and 1 (y): the role order of the transposed kernel.
VJP_ROLES = ((1, 2, 0), (0, 2, 1))


def broadcast_axes(gradient_shape: tuple[int, ...], shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the leading axes broadcasting added, the axes of `shape` of size 1 it stretched): what a gradient of
    `gradient_shape` is summed over, the second with its axes kept, to fit an operand of `shape`.

    >>> broadcast_axes((5, 3, 4), (1, 4))
    ((0,), (0,))
    """
    extra = len(gradient_shape) - len(shape)
    return tuple(range(extra)), tuple(a for a, n in enumerate(shape) if n == 1 and gradient_shape[extra + a] != 1)


def unbroadcast(gradient: Any, operand: Any) -> Any:
    """`gradient` summed over the axes broadcasting added to or stretched in `operand` (`broadcast_axes`), in its
    dtype."""
    added, stretched = broadcast_axes(anp.shape(gradient), anp.shape(operand))
    if added:
        gradient = anp.sum(gradient, axis=added)
    if stretched:
        gradient = anp.sum(gradient, axis=stretched, keepdims=True)
    dtype = anp.result_type(operand)
    return gradient if anp.result_type(gradient) == dtype else gradient.astype(dtype)


def differentiable(kernel: Kernel) -> Callable[..., Any]:
    """`kernel.evaluate` (numpy, batch-first) as an autograd primitive with kernel VJPs."""
    product = primitive(kernel.evaluate)

    def vjp(argument: int) -> Callable[[Any, Any, Any], Callable[[Any], Any]]:
        def make(result: Any, x: Any, y: Any) -> Callable[[Any], Any]:
            operand, other = (x, y) if argument == 0 else (y, x)
            transposed = kernel.transposed(argument)
            return lambda gradient: unbroadcast(transposed(other, gradient), operand)
        return make

    defvjp(product, vjp(0), vjp(1))
    return product
