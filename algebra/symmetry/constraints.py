"""`equivariant_constraints(action, target)`: the exact linear system the symmetry principle puts on a target.

`action` is one `Action` used on every slot of the target, or a tuple with one action per slot (in the target's
slot order: ``(domain, codomain)``, ``(x, y, out)``, or ``(algebra,)`` for a filter).  The actions of a tuple
must list generators of the same kinds in the same order: they represent one group.  Each generator gives one
block of equations (see `targets` for the residuals); the system is their stack.

The paper's translation constraint on structure constants, lam^n_{k,i+a} = lam^{n-a}_{k,i} (here
``lam[k, i, n]``), for a = 1: the filter slot k is left alone, the signal i and the output n are shifted.

>>> from product_interactions.algebra.symmetry import bilinear_map, translations
>>> T = translations(3)
>>> system = equivariant_constraints((T.trivial_on(3), T, T), bilinear_map(3))
>>> system.size, system.equations()[:3]
(27, [lam_0_0_2 - lam_0_1_0, lam_0_0_0 - lam_0_1_1, lam_0_0_1 - lam_0_1_2])
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import sympy

from ..limits import check_size
from .action import Action, same_group
from .sparse import Sparse
from .targets import Target

if TYPE_CHECKING:
    import scipy.sparse

_T = TypeVar("_T")


def _identity(value: _T) -> _T:
    return value


def match_actions(action: Action | Sequence[Action], target: Target) -> tuple[Action, ...]:
    """One action per slot of `target`, checked: the same group on every slot, dimensions and algebras fit."""
    if not isinstance(target, Target):
        raise TypeError(f"target: expected a target from linear_map, bilinear_map or filter_of, got "
                        f"{type(target).__name__} {target!r}")
    if isinstance(action, Action):
        actions, names = (action,) * len(target.slots), ["action"] * len(target.slots)
    elif isinstance(action, (tuple, list)):
        if len(action) != len(target.slots):
            raise ValueError(f"action: expected one Action or {len(target.slots)} (one per slot: "
                             f"{', '.join(target.slots)}), got {len(action)}")
        actions, names = tuple(action), [f"action[{position}]" for position in range(len(action))]
    else:
        raise TypeError(f"action: expected an Action or a tuple of Actions, got {type(action).__name__}")
    same_group(actions, names)
    for name, one, slot, space in zip(names, actions, target.slots, target.spaces):
        one.check_fits(space, f"the {slot} slot of the target", name, "target")
    return actions


class Constraints:
    """The exact system ``sum_c rows[r][c] * u_c = 0`` on the target's unknowns u, flattened in C order."""

    def __init__(self, target: Target, actions: tuple[Action, ...]) -> None:
        self.target = target
        self.actions = actions

    @property
    def size(self) -> int:
        """The number of unknowns."""
        return self.target.size

    def operator(self, convert: Callable[[Any], Any] = _identity) -> Sparse:
        """The stacked residual matrix, entries passed through `convert` (exact sympy values by default)."""
        blocks = [self.target.operator([a.sparse(g).map(convert) for a in self.actions], kind, convert)
                  for g, kind in enumerate(self.actions[0].kinds)]
        return Sparse.vstack(blocks, self.size)

    @functools.cached_property
    def rows(self) -> list[dict[int, sympy.Expr]]:
        """The nonzero equations as exact ``{unknown index: coefficient}`` dicts."""
        return [{c: sympy.sympify(v) for c, v in row.items()} for row in self.operator().rows()]

    def matrix(self) -> scipy.sparse.csr_array:
        """The system as a float scipy sparse (rows, size) matrix, built without exact arithmetic."""
        return self.operator(float).to_scipy()

    def equations(self) -> list[sympy.Expr]:
        """The equations as sympy expressions (each = 0) in the target's symbols."""
        unknowns = self.target.symbols().reshape(-1)
        return [sum(c * unknowns[i] for i, c in row.items()) for row in self.rows]

    def is_rational(self) -> bool:
        """True when every input number (generator matrices, fixed structure constants) is rational, so exact
        elimination stays in QQ and is cheap; decided without building the system."""
        values = [v for action in self.actions for _, matrices in action.generators for m in matrices
                  for v in m.entries.values()]
        return all(sympy.sympify(v).is_Rational for v in values + self.target.coefficients())

    def __repr__(self) -> str:
        return (f"<Constraints on {self.target}: {self.size} unknowns, "
                f"{len(self.actions[0])} generator block(s)>")


def equivariant_constraints(action: Action | Sequence[Action], target: Target) -> Constraints:
    """The exact linear system of O T_g = T_g O on `target`'s unknowns, for the generators of `action`; a target
    of more than `algebra.limits.MAX_ENTRIES` unknowns is refused first."""
    actions = match_actions(action, target)
    check_size(target.size, "target", f"unknowns ({target})", "constrain a smaller target, or use the "
               "regulariser on sampled group elements")
    return Constraints(target, actions)
