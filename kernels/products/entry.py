"""`product` and `bilinear`: a `Kernel` from an algebra's structure or from any bilinear map's constants, checked.

>>> import numpy as np
>>> from product_interactions.algebra import complex_numbers
>>> product(complex_numbers())(np.array([0.0, 1.0]), np.array([0.0, 1.0]))     # i i = -1
array([-1.,  0.])
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ...algebra import Algebra
from ..arrays import checks
from .factor import Factor
from .kernel import Kernel


def product(A: Algebra, strategy: str | Sequence[str] = "auto", dtype: DTypeLike = np.float64,
            layout: str = "batch-first") -> Kernel:
    """The kernel of the product of algebra `A`: arrays ``(..., *A.shape) -> (..., *A.shape)``.

    `strategy` is "auto", a strategy name, or a tuple with one per factor of `A`.
    """
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
