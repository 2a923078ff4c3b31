"""How a product or a whole expression runs: strategies, kernels, plans and the hand kernels.

`product` turns an algebra's structure into a `Kernel` for z = x * y on batched arrays; `bilinear` does the same
for any bilinear map given by (d1, d2, d3) tensors.  Each tensor factor is lowered on its own axis by one strategy
of the registry (`kernels.products.strategies`, one file each): ``identify`` (diagonal: a shared index), ``gather`` (one
nonzero per (i, j): index arithmetic and signs), ``fft`` (cyclic groups), ``graded`` (the tensor algebra, level by
level), ``codegen`` (generated numpy source with common subexpressions eliminated), ``compiled`` (one C loop over
the nonzero terms, `kernels.native.clib`, where a C compiler works) or ``dense`` (a contraction with the structure
constants).  ``strategy="auto"`` takes the cheapest by the cost model (`kernels.products.cost`), for the
batch at hand; `Kernel.explain` shows the choice.

Expressions lower into a `Plan` (`kernels.plans.plan`) through `PlanBuilder` (`kernels.plans.builder`), which uses the same
registry.  The hand kernels are here too: `linear_scan` (`kernels.scans.recurrence`), `selective_scan`
(`kernels.scans.selective_ssm`), the masked `softmax` (`kernels.arrays.masked_softmax`), `causal_convolution`
(`kernels.scans.convolution`) and the Seq2Tens recursions with their method choice (`kernels.scans.seq2tens`).

>>> import numpy as np
>>> from product_interactions import kernels
>>> from product_interactions.algebra import clifford, position, diagonal, tensor_product
>>> K = kernels.product(clifford(3, 0, 1))
>>> K.strategies_for(rows=4096)[0] in ("compiled", "codegen")     # the C loop; generated numpy without a compiler
True
>>> x = np.random.default_rng(0).standard_normal((1000, 16))
>>> np.allclose(K(x, x), np.einsum("bi,bj,ijk->bk", x, x, clifford(3, 0, 1).structure_constants()))
True
>>> kernels.product(tensor_product(position(64), diagonal(32))).strategies
('identify', 'identify')
>>> kernels.bilinear(np.ones((2, 3, 1)))(np.ones(2), np.ones(3))      # sum_ij x_i y_j
array([6.])
"""
from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike

from .arrays import checks
from .plans.builder import PlanBuilder
from .scans.convolution import causal_convolution
from .products.factor import Factor
from .products.kernel import Kernel
from .arrays.masked_softmax import softmax
from .plans.masks import Mask
from .native import memory
from .native.memory import MemoryLimitError
from .plans.plan import Plan
from .scans.recurrence import linear_scan
from .scans.selective_ssm import selective_scan
from .products.strategies import STRATEGIES

if TYPE_CHECKING:
    from ..algebra import Algebra



class _Package(types.ModuleType):
    """This package, with ``MEMORY_LIMIT`` kept by `kernels.native.memory`: reading the attribute reads the limit,
    assigning it sets the limit (checked: a value that is not a positive int is refused and nothing changes)."""

    @property
    def MEMORY_LIMIT(self) -> int:
        """Bytes of temporaries a kernel may allocate (structure constants and intermediates); settable."""
        return memory.limit()

    @MEMORY_LIMIT.setter
    def MEMORY_LIMIT(self, value: int) -> None:
        memory.set_limit(value)


sys.modules[__name__].__class__ = _Package

__all__ = ["Factor", "Kernel", "Mask", "MemoryLimitError", "MEMORY_LIMIT", "Plan", "PlanBuilder", "STRATEGIES",
           "bilinear", "causal_convolution", "linear_scan", "product", "selective_scan", "softmax"]


def product(A: Algebra, strategy: str | Sequence[str] = "auto", dtype: DTypeLike = np.float64,
            layout: str = "batch-first") -> Kernel:
    """The kernel of the product of algebra `A`: arrays ``(..., *A.shape) -> (..., *A.shape)``.

    `strategy` is "auto", a strategy name, or a tuple with one per factor of `A`.
    """
    from ..algebra import Algebra
    if not isinstance(A, Algebra):
        raise TypeError(f"A: expected an algebra.Algebra, got {type(A).__name__}")
    checks.check_dtype(dtype)
    checks.check_layout(layout)
    return Kernel([Factor.from_algebra(f) for f in A.factors], strategy, dtype, algebra=A, layout=layout)


def bilinear(*lam: Any, strategy: str | Sequence[str] = "auto", dtype: DTypeLike = np.float64,
             layout: str = "batch-first") -> Kernel:
    """The kernel of the bilinear map with structure constants `lam` (one (d1, d2, d3) tensor per factor).

    z[..., k] = sum_ij lam[i, j, k] x[..., i] y[..., j]; with several tensors, each acts on its own axis.
    Entries are numbers: floats, ints, or exact sympy numbers.
    """
    if not lam:
        raise ValueError("lam: expected at least one (d1, d2, d3) tensor, got none")
    checks.check_dtype(dtype)
    checks.check_layout(layout)
    names = ["lam"] if len(lam) == 1 else [f"lam[{n}]" for n in range(len(lam))]
    return Kernel([Factor.from_array(t, name) for t, name in zip(lam, names)], strategy, dtype, layout=layout)
