"""Lowering: factors and their strategies -> one program, levels nested around a leaf.

Each level factor (gather, fft, codegen, graded) takes its own axis out of the trailing factor axes and multiplies
the pieces through the level inside it; the leaf factors (identify, dense) stay on their axes and form the leaf
(``x * y``, or one contraction: `kernels.products.leaf`).  So a tensor product is lowered factor by factor, never through
a Kronecker product, and each level only ever sees the axes of the factors inside it.

>>> import numpy as np
>>> from product_interactions.algebra import clifford, position
>>> from product_interactions.kernels.products.factor import Factor
>>> program = lower([Factor.from_algebra(position(3)), Factor.from_algebra(clifford(0, 1))],
...                 ("identify", "codegen"), np.float64)
>>> type(program).__name__, program.axis, type(program.inner).__name__
('Codegen', -1, 'Elementwise')
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from numpy.typing import DTypeLike

from . import leaf
from .strategies import LEVELS, STRATEGIES

if TYPE_CHECKING:
    from .factor import Factor
    from .strategies.level import Program


def lower(factors: Sequence[Factor], names: Sequence[str], dtype: DTypeLike) -> Program:
    """The program (a callable on x, y with a ``cost``) for `factors` with strategy `names`."""
    outer = sorted((p for p, name in enumerate(names) if name in LEVELS), key=lambda p: (LEVELS.index(names[p]), p))
    present, axes = list(range(len(factors))), []
    for p in outer:
        axes.append(present.index(p) - len(present))
        present.remove(p)
    program: Program = leaf.build([(factors[p], names[p]) for p in present], dtype)
    for p, axis in reversed(list(zip(outer, axes))):
        program = STRATEGIES[names[p]].lower(factors[p], axis, program)
    return program


def levels(program: Program) -> list[Program]:
    """The program's levels from the outside in, ending with the leaf."""
    chain = [program]
    while hasattr(chain[-1], "inner"):
        chain.append(chain[-1].inner)
    return chain
