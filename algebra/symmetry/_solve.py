"""`solve(constraints)`: a basis of the solution space and the parametrisation it gives.

The system is first split into independent blocks (`blocks`: unknowns that share no equation), and each block is
solved apart.  Two paths, reported in ``Solution.method``:

- ``"exact"``: exact elimination (`algebra.linear.nullspace`, sparse, over the smallest exact sympy domain).  The
  basis is the reduced one: vector b has a 1 at its own free unknown and 0 at the other free unknowns.
- ``"numeric"``: ``scipy.linalg.null_space`` of each block's float system (of its R factor when it has more
  equations than unknowns), an orthonormal basis (float64).

`estimate` gives the cost of both before any elimination (unknowns, nonzeros, blocks, the work of elimination,
the numeric path's dense bytes).  ``method="auto"`` takes the exact path when it is cheap: when every coefficient
is rational (translations, permutations) and no block has more than `EXACT_RATIONAL_LIMIT` unknowns, or when some
are irrational (the square roots of SO(3): arithmetic in a number field) and the elimination work is at most
`EXACT_ALGEBRAIC_WORK`; else the numeric path when its dense matrices fit `algebra.limits.MAX_DENSE_BYTES`; else
exact elimination when it stays rational (sparse, slow but bounded); else it refuses with a ValueError that gives
the sizes.  A solve that lasts more than `PROGRESS_DELAY` seconds shows a progress bar (tqdm, on stderr) unless
``progress=False``.

A solution is a parametrisation: ``solution(params)`` maps free parameters to the unknowns, with numpy or
autograd arrays (so a model can learn the parameters of an exactly equivariant operator).

>>> from product_interactions.algebra import translation
>>> from product_interactions.algebra.symmetry import bilinear_map, equivariant_constraints, filter_of, translations
>>> solution = solve(equivariant_constraints(translations(3), filter_of(translation(3))))
>>> solution.method, solution.dim, solution([1.0, 2.0, 3.0])
('exact', 3, array([1., 2., 3.]))
>>> cost = estimate(equivariant_constraints(translations(32), bilinear_map(32)))
>>> cost.unknowns, cost.blocks, cost.largest_block, cost.dense_bytes, cost.choose()
(32768, 1024, 32, 32768, 'exact')
"""
from __future__ import annotations

import autograd.numpy as anp
from autograd.tracer import getval
import numpy as np
import scipy.linalg
import sympy

from typing import Any, NamedTuple

from tqdm.auto import tqdm

from .. import limits, linear
from ..algebra import check_choice, check_flag
from ..blocks import Block, blocks
from .constraints import Constraints

#: Largest block (unknowns) solved exactly by method="auto" when all coefficients are rational.
EXACT_RATIONAL_LIMIT = 4096
#: Most elimination work (`Cost.work`) done exactly by method="auto" when some coefficient is irrational: about
#: 1.5 us each in the number fields of SO(3) (CG(2)'s bilinear maps: 0.7e6, 1 s; CG(3)'s: 23e6, 40 s).
EXACT_ALGEBRAIC_WORK = 2 * 10**6
#: Seconds a solve runs before it shows a progress bar.
PROGRESS_DELAY = 1.0

METHODS = ("auto", "exact", "numeric")


class Cost(NamedTuple):
    """What solving a system takes, from its float pattern (exact blocks may be finer, never coarser)."""

    unknowns: int
    equations: int
    nonzeros: int
    blocks: int
    #: Unknowns in the largest block.
    largest_block: int
    #: Elimination work: the sum over blocks of equations x unknowns^2.
    work: int
    rational: bool
    #: The numeric path's peak: the largest block's dense float64 system, its R factor and its SVD.
    dense_bytes: int

    def choose(self, method: str = "auto") -> str:
        """The path `method` takes for this system ("exact" or "numeric"), or a ValueError when none fits."""
        numeric_fits = self.dense_bytes <= limits.MAX_DENSE_BYTES
        if method == "auto":
            cheap = self.largest_block <= EXACT_RATIONAL_LIMIT if self.rational else self.work <= EXACT_ALGEBRAIC_WORK
            if cheap or self.rational and not numeric_fits:         # rational elimination is slow, never stuck
                return "exact"
            if numeric_fits:
                return "numeric"
        elif method == "exact" or numeric_fits:
            return method
        kind = "rational" if self.rational else "irrational"
        raise ValueError(
            f"constraints: the largest independent block has {self.largest_block:,} unknowns with {kind} "
            f"coefficients; the numeric path needs {self.dense_bytes:,} bytes of dense matrices, more than "
            f"algebra.limits.MAX_DENSE_BYTES = {limits.MAX_DENSE_BYTES:,}"
            + ("" if method == "numeric" and self.rational else
               f", and exact elimination with irrational coefficients takes {self.work:,} steps, more than "
               f"EXACT_ALGEBRAIC_WORK = {EXACT_ALGEBRAIC_WORK:,}")
            + "; solve a smaller target, raise the limit, or ask for method='exact' and wait")


class Solution:
    """The solution space of a `Constraints` system (see the module docstring)."""

    def __init__(self, constraints: Constraints, method: str, basis: np.ndarray,
                 exact_basis: tuple[np.ndarray, ...] | None = None) -> None:
        self.constraints = constraints
        self.target = constraints.target
        self.method = method
        #: The basis as a float array of shape ``(dim, *target.shape)``.
        self.basis = basis.reshape((len(basis), *self.target.shape))
        #: The exact basis (object arrays of shape target.shape), or None on the numeric path.
        self.exact_basis = exact_basis

    @property
    def dim(self) -> int:
        """The dimension of the solution space (the number of free parameters)."""
        return len(self.basis)

    def __call__(self, params: Any) -> Any:
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

    def __repr__(self) -> str:
        return f"<Solution ({self.method}) of dimension {self.dim} for {self.target}>"


def estimate(constraints: Constraints) -> Cost:
    """The cost of solving `constraints` (see `Cost`), found without elimination."""
    _check(constraints)
    matrix = constraints.matrix()
    return _estimate(constraints, matrix, blocks(matrix))


def _estimate(constraints: Constraints, matrix: scipy.sparse.csr_array, found: list[Block]) -> Cost:
    shapes = [(len(block.equations), len(block.unknowns)) for block in found]
    largest = max(unknowns for _, unknowns in shapes)
    work = sum(rows * unknowns * unknowns for rows, unknowns in shapes)
    dense = max(8 * (rows * unknowns + 3 * unknowns * unknowns) for rows, unknowns in shapes)
    return Cost(constraints.size, int(np.count_nonzero(np.diff(matrix.indptr))), int(matrix.nnz), len(found),
                largest, work, constraints.is_rational(), dense)


def _exact(constraints: Constraints, bar: tqdm) -> Solution:
    vectors = linear.sparse_nullspace(constraints.rows, constraints.size, bar.update)
    _check_basis_fits(len(vectors), constraints.size, copies=2)            # floats and object references
    exact = np.full((len(vectors), constraints.size), sympy.Integer(0), dtype=object)
    basis = np.zeros(exact.shape)
    for n, vector in enumerate(vectors):
        exact[n, list(vector)] = list(vector.values())
        basis[n, list(vector)] = [float(v) for v in vector.values()]
    return Solution(constraints, "exact", basis, tuple(row.reshape(constraints.target.shape) for row in exact))


def _numeric(constraints: Constraints, matrix: scipy.sparse.csr_array, found: list[Block], bar: tqdm) -> Solution:
    matrix = matrix.tocsr()
    parts = []
    for block in found:
        dense = matrix[block.equations][:, block.unknowns].toarray()
        if dense.shape[0] > dense.shape[1]:
            # A = QR with orthonormal Q: R has A's null space and singular values, and is square.
            dense = scipy.linalg.qr(dense, mode="r")[0][:dense.shape[1]]
        parts.append((block.unknowns, scipy.linalg.null_space(dense) if dense.size else np.eye(len(block.unknowns))))
        bar.update(len(block.unknowns))
    dims = [null.shape[1] for _, null in parts]
    _check_basis_fits(sum(dims), constraints.size, copies=1)
    basis = np.zeros((sum(dims), constraints.size))
    for start, (unknowns, null) in zip(np.cumsum([0] + dims), parts):
        basis[start:start + null.shape[1], unknowns] = null.T
    return Solution(constraints, "numeric", basis)


def _check_basis_fits(dim: int, size: int, copies: int) -> None:
    """Refuse a solution space whose dense basis (`copies` arrays of dim x size) would pass the memory limit."""
    needed = 8 * copies * dim * size
    if needed > limits.MAX_DENSE_BYTES:
        raise ValueError(f"constraints: the solution space has dimension {dim:,}; its basis over {size:,} unknowns "
                         f"needs {needed:,} bytes, more than algebra.limits.MAX_DENSE_BYTES = "
                         f"{limits.MAX_DENSE_BYTES:,}; constrain a smaller target or add symmetries")


def _check(constraints: object) -> None:
    if not isinstance(constraints, Constraints):
        raise TypeError(f"constraints: expected the result of equivariant_constraints, got "
                        f"{type(constraints).__name__}")


def solve(constraints: Constraints, method: str = "auto", progress: bool = True) -> Solution:
    """A basis of the solutions of `constraints`: exact or numeric (see the module docstring).

    `progress`: show a progress bar when the solve lasts more than `PROGRESS_DELAY` seconds."""
    _check(constraints)
    method = check_choice(method, METHODS, "method")
    progress = check_flag(progress, "progress")
    matrix = constraints.matrix()
    found = blocks(matrix)
    method = _estimate(constraints, matrix, found).choose(method)
    with tqdm(total=constraints.size, desc=f"solve ({method})", unit="unknown", delay=PROGRESS_DELAY,
              leave=False, disable=not progress) as bar:
        return _exact(constraints, bar) if method == "exact" else _numeric(constraints, matrix, found, bar)
