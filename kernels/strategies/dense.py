"""dense: one opt_einsum contraction over the leaf factors, with their structure constants as constants.

The leaf holds every dense factor (an index for x, one for y, one for z, and lam) and every identify factor (one
shared index, and its coefficients when they are not all 1).  Constants come first in the equation, so that
intermediates keep the batch axes first; with one dense factor, x meets lam in one matrix product and the
result meets y, with several, opt_einsum's optimiser picks the order; factors are contracted one at a time,
never through a Kronecker product.  ``contract_expression`` is built once per pair of input shapes, path included, and
cached; opt_einsum dispatches on the array type (numpy arrays go to `kernels.numpy_backend`; autograd, torch, jax
to their own libraries).

>>> import numpy as np
>>> from product_interactions.algebra import quaternions
>>> from product_interactions.kernels.factor import Factor
>>> leaf = Contraction([(Factor.from_algebra(quaternions()), "dense")], np.float64)
>>> leaf.equation
'abc,...a,...b->...c'
>>> leaf(np.eye(4)[1], np.eye(4)[2])        # i j = k
array([0., 0., 0., 1.])
"""
from __future__ import annotations

import math

import numpy as np
import opt_einsum as oe

from .. import numpy_backend
from ..cost import Cost
from . import identify

NAME = "dense"

#: Contract expressions kept per leaf (one per pair of input shapes).
EXPRESSIONS_KEPT = 64


def unsupported(factor):
    """Dense represents every factor (the memory guard limits its size)."""
    return None


class Contraction:
    """The leaf contraction over `parts`, a list of (factor, strategy name) for the trailing axes in order."""

    #: Few large chunks: every matrix product synchronises the BLAS threads, which costs most on a loaded machine.
    chunk_bytes = 16 * 2**20

    def __init__(self, parts, dtype):
        self.dtype = np.dtype(dtype)
        symbols = (oe.get_symbol(n) for n in range(3 * len(parts)))
        x, y, z, terms, self._constant_factors = "", "", "", [], []
        for factor, name in parts:
            if name == identify.NAME:
                shared = next(symbols)
                x, y, z = x + shared, y + shared, z + shared
                if identify.scaled(factor):
                    terms.append(shared)
                    self._constant_factors.append(factor)
            else:
                a, b, c = next(symbols), next(symbols), next(symbols)
                x, y, z = x + a, y + b, z + c
                terms.append(a + b + c)
                self._constant_factors.append(factor)
        self.equation = ",".join([*terms, f"...{x}", f"...{y}"]) + f"->...{z}"
        self._shapes = [(f.shape[0],) if len(term) == 1 else f.shape for f, term in zip(self._constant_factors, terms)]
        self._path = self._single_dense_path(terms)
        self._constants = None
        self._expressions = {}
        sizes = [math.prod(f.shape[r] for f, _ in parts) for r in range(3)]
        one = [(1, *(f.shape[r] for f, _ in parts)) for r in (0, 1)]
        info = oe.contract_path(self.equation, *self._shapes, *one, shapes=True)[1]
        self.cost = Cost(*sizes, flops=float(info.opt_cost), moved=sum(sizes) + 2 * sum(info.size_list),
                         temporary=float(info.largest_intermediate), fixed=sum(map(math.prod, self._shapes)))

    @staticmethod
    def _single_dense_path(terms):
        """With one dense factor: x into its lam first (one matrix product, batch axes first, lam not transposed;
        it beat the outer product of x and y first, then lam), then the rest in one step; with several dense
        factors, opt_einsum's optimiser chooses."""
        dense = [n for n, term in enumerate(terms) if len(term) == 3]
        if len(dense) != 1:
            return "auto"
        return [(dense[0], len(terms)), tuple(range(len(terms) + 1))]

    def constants(self) -> list:
        """The constant operands in the kernel's dtype (built on first use)."""
        if self._constants is None:
            self._constants = [f.dense(self.dtype) if len(shape) == 3 else f.diagonal().astype(self.dtype)
                               for f, shape in zip(self._constant_factors, self._shapes)]
        return self._constants

    def expression(self, x_shape, y_shape):
        """The cached ``contract_expression`` for these input shapes, and its path information."""
        key = (tuple(x_shape), tuple(y_shape))
        if key not in self._expressions:
            if len(self._expressions) >= EXPRESSIONS_KEPT:
                self._expressions.pop(next(iter(self._expressions)))
            constants = self.constants()
            path, info = oe.contract_path(self.equation, *self._shapes, x_shape, y_shape, shapes=True,
                                          optimize=self._path)
            expression = oe.contract_expression(self.equation, *constants, x_shape, y_shape,
                                                constants=range(len(constants)), optimize=path)
            self._expressions[key] = (expression, info)
        return self._expressions[key]

    def __call__(self, x, y):
        numpy_arrays = type(x) is np.ndarray and type(y) is np.ndarray
        return self.expression(np.shape(x), np.shape(y))[0](x, y, backend=numpy_backend.NAME if numpy_arrays
                                                            else "auto")

    def describe(self) -> list:
        lines = [f"leaf: opt_einsum contract_expression {self.equation!r}, structure constants as constants"]
        for (x_shape, y_shape), (_, info) in self._expressions.items():
            steps = "; ".join(step[2] for step in info.contraction_list)
            lines.append(f"  x {x_shape}, y {y_shape}: {steps}")
        return lines
