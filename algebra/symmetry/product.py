"""Actions on tensor products, one representation per factor.

- `product_action(A, B, ...)`: the direct product group G_A x G_B x ... acting factor-wise.  Each generator of
  A acts on A's factors and trivially on the others (identity, or 0 for a Lie generator): e.g. the translations
  of a 2-D lattice, Z_n x Z_m on B (x) B.
- `diagonal_action(A, B, ...)`: one group acting on all factors at once.  Generator g acts as
  rho_A(g) (x) rho_B(g) (x) ..., a Lie generator as J_A (x) 1 + 1 (x) J_B; the actions must list generators of the
  same kinds in the same order (the same group).

>>> from product_interactions.algebra import position, tensor_product
>>> from product_interactions.algebra.symmetry import equivariant_constraints, filter_of, solve, translations
>>> lattice = tensor_product(position(3), position(3))
>>> T = translations(3)
>>> solve(equivariant_constraints(product_action(T, T), filter_of(lattice))).dim    # K constant
1
>>> solve(equivariant_constraints(diagonal_action(T, T), filter_of(lattice))).dim   # K[a, b] = f(b - a)
3
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .action import Action, trivial_matrix
from .sparse import Sparse

if TYPE_CHECKING:
    from ..algebra import Algebra


def _check_actions(actions: Sequence[object], function: str) -> None:
    if not actions:
        raise ValueError(f"actions: {function} expected at least one action, got none")
    for position, action in enumerate(actions):
        if not isinstance(action, Action):
            raise TypeError(f"actions[{position}]: expected an Action, got {type(action).__name__}")


def _name(actions: Sequence[Action], sign: str) -> str:
    return f" {sign} ".join(a.name for a in actions)


def _algebras(actions: Sequence[Action]) -> list[Algebra | None]:
    return [algebra for action in actions for algebra in action.algebras]


def product_action(*actions: Action) -> Action:
    """The direct product of `actions`, each on its own factors (see the module docstring)."""
    _check_actions(actions, "product_action")
    generators: list[tuple[str, list[Sparse]]] = []
    for position, action in enumerate(actions):
        for kind, matrices in action.generators:
            generators.append((kind, [m for other, factor in enumerate(actions) for m in (
                matrices if other == position else [trivial_matrix(kind, n) for n in factor.shape])]))
    return Action(generators, _name(actions, "×"), _algebras(actions))


def diagonal_action(*actions: Action) -> Action:
    """One group acting on every factor at once, through the matching generators of `actions`."""
    _check_actions(actions, "diagonal_action")
    for position, action in enumerate(actions[1:], start=1):
        if action.kinds != actions[0].kinds:
            raise ValueError(f"actions[{position}]: expected generators of kinds {actions[0].kinds} like "
                             f"actions[0] (the same group), got {action.kinds}")
    generators = [(matching[0][0], [m for _, matrices in matching for m in matrices])
                  for matching in zip(*(action.generators for action in actions))]
    return Action(generators, _name(actions, "⊗"), _algebras(actions))
