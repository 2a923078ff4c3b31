"""`regulariser(action, target)`: the symmetry principle as a soft constraint.

``penalty(u) = sum_g ||T_g O_u - O_u T_g||^2``, the squared residual of the same equations as
`equivariant_constraints`, as a function of the target's unknowns u (float, differentiable with autograd).  It is
0 exactly on the solution space and positive off it.  ``over="generators"`` sums over the generators (the
cheapest penalty with that zero set); ``over="elements"`` sums over every element of a finite group.  The
residuals are ``penalty.matrix @ u.ravel()`` (a scipy sparse matrix), for computing the penalty in another array
library.  For the
translation constraint on structure constants the latter is the paper's Table 2 regulariser,
sum_{k,i,n,a} (lam^n_{k,i+a} - lam^{n-a}_{k,i})^2.

>>> import numpy as np
>>> from product_interactions.algebra.symmetry import bilinear_map, translations
>>> T = translations(3)
>>> penalty = regulariser((T.trivial_on(3), T, T), bilinear_map(3), over="elements")
>>> lam = np.random.default_rng(0).standard_normal((3, 3, 3))
>>> paper = sum((lam[k, (i + a) % 3, n] - lam[k, i, (n - a) % 3]) ** 2
...             for k in range(3) for i in range(3) for n in range(3) for a in range(3))
>>> bool(np.isclose(penalty(lam), paper))
True
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import autograd.numpy as anp
import numpy as np
from autograd.extend import defvjp, primitive

from ..algebra import check_choice, check_count
from .action import DISCRETE, Action
from .constraints import Constraints, match_actions
from .elements import ELEMENT_LIMIT, all_elements
from .sparse import Sparse
from .targets import Target

if TYPE_CHECKING:
    import scipy.sparse

OVER = ("generators", "elements")


class Penalty(Protocol):
    """What `regulariser` returns: the penalty of unknowns u (a float, or an autograd value while traced), and
    ``matrix``, the residuals' scipy sparse matrix."""

    matrix: scipy.sparse.csr_array

    def __call__(self, unknowns: Any) -> Any: ...


@primitive
def _sparse_dot(matrix: scipy.sparse.csr_array, vector: Any) -> Any:
    return matrix @ vector


defvjp(_sparse_dot, None, lambda ans, matrix, vector: lambda g: matrix.T @ g)


def regulariser(action: Action | Sequence[Action], target: Target, over: str = "generators",
                limit: int = ELEMENT_LIMIT) -> Penalty:
    """The penalty function ``u -> sum_g ||residual_g(u)||^2`` (u of shape ``target.shape``)."""
    actions = match_actions(action, target)
    over, limit = check_choice(over, OVER, "over"), check_count(limit, "limit")
    if over == "generators":
        matrix = Constraints(target, actions).matrix()
    else:
        blocks = [target.operator([Sparse.from_floats(m) for m in element], DISCRETE, float)
                  for element in all_elements(actions, limit)]
        matrix = Sparse.vstack(blocks, target.size).to_scipy()

    def penalty(unknowns: Any) -> Any:
        if np.shape(unknowns) != target.shape:
            raise ValueError(f"unknowns: expected shape {target.shape} for {target}, got {np.shape(unknowns)}")
        residual = _sparse_dot(matrix, anp.reshape(unknowns, -1))
        return anp.sum(residual * residual)

    penalty.__doc__ = f"sum over the {over} of ||T_g O - O T_g||^2 for {target} (shape {target.shape})."
    penalty.matrix = matrix  # type: ignore[attr-defined]
    return penalty  # type: ignore[return-value]  # with its matrix: a Penalty
