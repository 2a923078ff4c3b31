"""`solve(constraints)`: a basis of the solution space and the parametrisation it gives.

Two paths, reported in ``Solution.method``:

- ``"exact"``: exact elimination (`algebra.linear.nullspace`, sparse, over the smallest exact sympy domain).  The
  basis is the reduced one: vector b has a 1 at its own free unknown and 0 at the other free unknowns.
- ``"numeric"``: ``scipy.linalg.null_space`` of the float system (of its R factor when it has more equations
  than unknowns), an orthonormal basis (float64).

``method="auto"`` takes the exact path when it is cheap: at most `EXACT_RATIONAL_LIMIT` unknowns when every
coefficient is rational (translations, permutations), at most `EXACT_ALGEBRAIC_LIMIT` when some are irrational
(the square roots of SO(3)); else the numeric one.

A solution is a parametrisation: ``solution(params)`` maps free parameters to the unknowns, with numpy or
autograd arrays (so a model can learn the parameters of an exactly equivariant operator).

>>> from product_interactions.algebra import translation
>>> from product_interactions.algebra.symmetry import equivariant_constraints, filter_of, translations
>>> solution = solve(equivariant_constraints(translations(3), filter_of(translation(3))))
>>> solution.method, solution.dim, solution([1.0, 2.0, 3.0])
('exact', 3, array([1., 2., 3.]))
"""
from __future__ import annotations

import autograd.numpy as anp
from autograd.tracer import getval
import numpy as np
import scipy.linalg
import sympy

from .. import linear
from .constraints import Constraints

#: Largest number of unknowns solved exactly (method="auto") when all coefficients are rational.
EXACT_RATIONAL_LIMIT = 4096
#: Largest number of unknowns solved exactly (method="auto") when some coefficient is irrational.
EXACT_ALGEBRAIC_LIMIT = 150

METHODS = ("auto", "exact", "numeric")


class Solution:
    """The solution space of a `Constraints` system (see the module docstring)."""

    def __init__(self, constraints: Constraints, method: str, basis: np.ndarray, exact_basis=None):
        self.constraints = constraints
        self.target = constraints.target
        self.method = method
        #: The basis as a float array of shape (dim, *target.shape).
        self.basis = basis.reshape((len(basis), *self.target.shape))
        #: The exact basis (object arrays of shape target.shape), or None on the numeric path.
        self.exact_basis = exact_basis

    @property
    def dim(self) -> int:
        """The dimension of the solution space (the number of free parameters)."""
        return len(self.basis)

    def __call__(self, params):
        """The unknowns sum_b params[..., b] basis[b]: shape (*batch, *target.shape); differentiable by autograd.
        Torch and JAX arrays are refused rather than silently made numpy: contract them with `basis` in their
        own library."""
        if not isinstance(getval(params), (np.ndarray, np.generic, list, tuple, int, float)):
            kind = type(params)
            raise TypeError(f"params: expected a numpy array or a list (autograd's traced arrays too), got "
                            f"{kind.__module__}.{kind.__name__}; for torch or JAX, contract params with "
                            f"solution.basis in that library")
        if np.shape(params)[-1:] != (self.dim,):
            raise ValueError(f"params: expected a last axis of length {self.dim} (one per free parameter), got "
                             f"shape {np.shape(params)}")
        flat = anp.dot(params, self.basis.reshape(self.dim, -1))
        return anp.reshape(flat, np.shape(params)[:-1] + self.target.shape)

    def symbolic(self, name: str = "t") -> np.ndarray:
        """The general solution with exact coefficients in the free parameters ``t_0, t_1, ...``."""
        if self.exact_basis is None:
            raise ValueError("symbolic: needs an exact basis, but this solution took the numeric path; "
                             "call solve(constraints, method='exact')")
        params = sympy.symbols(f"{name}_0:{self.dim}", real=True)
        general = np.full(self.target.shape, sympy.Integer(0), dtype=object)
        for t, vector in zip(params, self.exact_basis):
            general = general + t * vector
        return general

    def __repr__(self):
        return f"<Solution ({self.method}) of dimension {self.dim} for {self.target}>"


def _reduced(vector: list) -> list:
    """`vector` scaled to end in 1.  A nullspace vector from a reduced row echelon form ends at its own free
    unknown, so this is the reduced basis (`algebra.linear.nullspace` leaves the scale open)."""
    last = next(v for v in reversed(vector) if v != 0)
    if last == 1:
        return vector
    return [v if v == 0 else sympy.radsimp(v / last) for v in vector]


def _exact(constraints: Constraints) -> Solution:
    vectors = [_reduced(v) for v in linear.nullspace(constraints.rows, constraints.size)]
    exact = tuple(np.array(v, dtype=object).reshape(constraints.target.shape) for v in vectors)
    basis = np.array([[float(c) for c in v] for v in vectors], dtype=float).reshape(len(vectors), constraints.size)
    return Solution(constraints, "exact", basis, exact)


def _numeric(constraints: Constraints) -> Solution:
    matrix = constraints.matrix()
    if matrix.nnz == 0:
        return Solution(constraints, "numeric", np.eye(constraints.size))
    dense = matrix.toarray()
    if dense.shape[0] > dense.shape[1]:
        # A = QR with orthonormal Q: R has A's null space and singular values, and is square.
        dense = scipy.linalg.qr(dense, mode="r")[0][:dense.shape[1]]
    return Solution(constraints, "numeric", scipy.linalg.null_space(dense).T)


def solve(constraints: Constraints, method: str = "auto") -> Solution:
    """A basis of the solutions of `constraints`: exact or numeric (see the module docstring)."""
    if not isinstance(constraints, Constraints):
        raise TypeError(f"constraints: expected the result of equivariant_constraints, got "
                        f"{type(constraints).__name__}")
    if method not in METHODS:
        raise ValueError(f"method: expected one of {', '.join(map(repr, METHODS))}, got {method!r}")
    if method == "auto":
        limit = EXACT_RATIONAL_LIMIT if constraints.is_rational() else EXACT_ALGEBRAIC_LIMIT
        method = "exact" if constraints.size <= limit else "numeric"
    return _exact(constraints) if method == "exact" else _numeric(constraints)
