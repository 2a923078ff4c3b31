"""Which symmetries a product respects: the other direction of the symmetry principle.

`equivariant_constraints` finds the products an action respects; `product_symmetries` starts from a product (an
algebra) and asks which generators of an action on it the product respects, g(x y) = g(x) g(y): a discrete
generator T when it is an automorphism, a Lie generator J when it is a derivation, J(x y) = J(x) y + x J(y)
(`Algebra.derivations` gives them all).  The equivariant part of a Lie action is the span of the combinations of
its generators that are derivations: the symmetries of the action that any product layer over the algebra keeps.

>>> from product_interactions.algebra.so3 import clebsch_gordan
>>> from product_interactions.algebra.symmetry import rotations_so3
>>> found = product_symmetries(clebsch_gordan(1), rotations_so3(1))
>>> found.equivariant, found.respected, len(found.lie_part)
(True, (True, True, True), 3)
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..algebra import Algebra
from ..structure import leibniz_defect
from .action import DISCRETE, Action
from .space import as_space


@dataclass(frozen=True)
class ProductSymmetries:
    """Per generator of the action, whether the product respects it; and a basis of the combinations of the Lie
    generators (coefficient tuples, one per Lie generator in order) that are derivations."""
    respected: tuple[bool, ...]
    lie_part: tuple[tuple[sympy.Expr, ...], ...]

    @property
    def equivariant(self) -> bool:
        """True when the product respects every generator: x y -> g(x) g(y) is equivariant for the whole group."""
        return all(self.respected)


def product_symmetries(algebra: Algebra, action: Action) -> ProductSymmetries:
    """Which generators of `action` (on the algebra's one factor) the product of `algebra` respects (exact, or
    within the tolerance of a numeric algebra)."""
    if not isinstance(algebra, Algebra):
        raise TypeError(f"algebra: expected an Algebra, got {type(algebra).__name__}")
    if not isinstance(action, Action):
        raise TypeError(f"action: expected an Action, got {type(action).__name__}")
    action.check_fits(as_space(algebra, "algebra"), "the algebra", "action", "algebra")
    respected, defects = [], []
    for index, kind in enumerate(action.kinds):
        matrix = action.sparse(index)
        if kind == DISCRETE:
            respected.append(algebra.is_homomorphism(matrix.to_dense(object), algebra))
            continue
        defect = leibniz_defect(algebra, matrix.entries)
        respected.append(not defect)
        defects.append(defect)
    equations: dict[tuple[int, int, int], dict[int, sympy.Expr]] = {}
    for r, defect in enumerate(defects):
        for key, value in defect.items():
            equations.setdefault(key, {})[r] = value
    zero = algebra.scalars.zero
    lie_part = tuple(tuple(vector.get(r, zero) for r in range(len(defects)))
                     for vector in algebra.scalars.nullspace(list(equations.values()), len(defects)))
    return ProductSymmetries(tuple(respected), lie_part if defects else ())
