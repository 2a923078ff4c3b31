"""Lowering algebra products to fast numeric kernels.

`product` turns an algebra's exact structure constants into a `Kernel` for z = x * y on batched arrays;
`bilinear` does the same for any bilinear map given by (d1, d2, d3) tensors.  Each tensor factor is lowered on
its own axis by one strategy: ``identify`` (diagonal: a shared index), ``gather`` (one nonzero per (i, j):
index arithmetic and signs, or the FFT for large cyclic groups), ``codegen`` (generated numpy source with
common subexpressions eliminated) or ``dense`` (an opt_einsum contraction).  ``strategy="auto"`` picks from the
structure; `Kernel.explain` shows the choice.

>>> import numpy as np
>>> from product_interactions import kernels
>>> from product_interactions.algebra import clifford, position, diagonal, tensor_product
>>> K = kernels.product(clifford(3, 0, 1))
>>> K.strategies
('codegen',)
>>> x = np.random.default_rng(0).standard_normal((1000, 16))
>>> np.allclose(K(x, x), np.einsum("bi,bj,ijk->bk", x, x, clifford(3, 0, 1).structure_constants()))
True
>>> kernels.product(tensor_product(position(64), diagonal(32))).strategies
('identify', 'identify')
>>> kernels.bilinear(np.ones((2, 3, 1)))(np.ones(2), np.ones(3))      # sum_ij x_i y_j
array([6.])
"""
from __future__ import annotations

import numpy as np

from .factor import Factor
from .kernel import Kernel
from .memory import DEFAULT_LIMIT, MemoryLimitError
from .strategies import STRATEGIES

#: Bytes of temporaries a kernel may allocate (structure constants and intermediates); settable.
MEMORY_LIMIT = DEFAULT_LIMIT

__all__ = ["Kernel", "MemoryLimitError", "MEMORY_LIMIT", "STRATEGIES", "bilinear", "compile", "product"]


def product(A, strategy="auto", dtype=np.float64, layout="batch-first") -> Kernel:
    """The kernel of the product of algebra `A`: arrays (..., *A.shape) -> (..., *A.shape).

    `strategy` is "auto", a strategy name, or a tuple with one per factor of `A`.
    """
    from ..algebra import Algebra
    if not isinstance(A, Algebra):
        raise TypeError(f"A: expected an algebra.Algebra, got {type(A).__name__}")
    return Kernel([Factor.from_algebra(f) for f in A.factors], strategy, dtype, algebra=A, layout=layout)


def bilinear(*lam, strategy="auto", dtype=np.float64, layout="batch-first") -> Kernel:
    """The kernel of the bilinear map with structure constants `lam` (one (d1, d2, d3) tensor per factor).

    z[..., k] = sum_ij lam[i, j, k] x[..., i] y[..., j]; with several tensors, each acts on its own axis.
    Entries are numbers: floats, ints, or exact sympy numbers.
    """
    if not lam:
        raise ValueError("lam: expected at least one (d1, d2, d3) tensor, got none")
    names = ["lam"] if len(lam) == 1 else [f"lam[{n}]" for n in range(len(lam))]
    return Kernel([Factor.from_array(t, name) for t, name in zip(lam, names)], strategy, dtype, layout=layout)


# The expression compiler of `interactions` (kernels/compile.py, issue 4): kernels.compile(expr).  Imported last so
# that the function, not its module, is the package attribute.
from .compile import compile  # noqa: E402,F401
