"""Targets: the unknowns an equivariance constraint is put on.

- `linear_map(domain, codomain)`: a matrix W (y = W x), unknown array of shape (*codomain, *domain).
- `bilinear_map(x, y, out)`: structure constants lam[i, j, k] of B(e_i, e_j) = sum_k lam[i, j, k] e_k, unknown
  array of shape (*x, *y, *out).  ``bilinear_map(A)`` is an unknown product on the space of the algebra A.
- `filter_of(A)`: the filter K of O_K(x) = K * x with A's product fixed, unknown array of shape A.shape.

Each target turns the matrices of one generator (one per slot: the spaces in the order above) into the
linear map from its unknowns to the residual of the symmetry principle O T_g = T_g O:

- linear map:  T_out W - W T_in  (the same for a Lie generator: J_out W - W J_in);
- bilinear:    T_out B(x, y) - B(T_x x, T_y y), and for a Lie generator J_out B(x, y) - B(J_x x, y) - B(x, J_y y);
- filter:      the linear-map residual of W = L(K), the matrix of x -> K * x: T L(K) - L(K) T.

On the unknowns flattened in C order the first two are Kronecker sums; the filter's is the linear map's
composed with K -> L(K).

>>> from product_interactions.algebra import translation
>>> filter_of(translation(3)).shape, bilinear_map(2, 3, 4).shape, linear_map(2, (3, 4)).shape
((3,), (2, 3, 4), (3, 4, 2))
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import sympy

from ..algebra import Algebra
from .action import DISCRETE
from .space import Space, SpaceLike, as_space
from .sparse import Sparse


class Target:
    """Unknowns on one or more spaces (slots); see the module docstring."""

    #: The name of the unknown, used for its symbols (e.g. ``lam_0_1_2``).
    symbol = "u"
    #: One name per slot, in the order actions are matched to them.
    slots: tuple[str, ...] = ()

    def __init__(self, spaces: Iterable[Space]) -> None:
        self.spaces = tuple(spaces)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the unknown array."""
        raise NotImplementedError

    @property
    def size(self) -> int:
        """The number of unknowns."""
        return math.prod(self.shape)

    def operator(self, matrices: Sequence[Sparse], kind: str, convert: Callable[[Any], Any]) -> Sparse:
        """The residual of one generator as a (rows, size) matrix; `matrices` has one Sparse per slot and
        `convert` turns the target's own fixed numbers (a filter's structure constants) into the entry type."""
        raise NotImplementedError

    def coefficients(self) -> list[sympy.Expr]:
        """The fixed numbers the target carries into its constraints (none, except a filter's lam)."""
        return []

    def symbols(self) -> np.ndarray:
        """The unknowns as real sympy symbols in an object array of shape `shape`."""
        array = np.empty(self.shape, dtype=object)
        for index in itertools.product(*map(range, self.shape)):
            array[index] = sympy.Symbol("_".join([self.symbol, *map(str, index)]), real=True)
        return array

    def __repr__(self) -> str:
        slots = ", ".join(f"{slot}={space.name}" for slot, space in zip(self.slots, self.spaces))
        return f"{type(self).__name__}({slots})"


class LinearMap(Target):
    """An unknown linear map W: domain -> codomain, W of shape (*codomain, *domain)."""

    symbol = "W"
    slots = ("domain", "codomain")

    @property
    def shape(self) -> tuple[int, ...]:
        return self.spaces[1].shape + self.spaces[0].shape

    def operator(self, matrices: Sequence[Sparse], kind: str, convert: Callable[[Any], Any]) -> Sparse:
        return _commutator(*matrices)


class BilinearMap(Target):
    """Unknown structure constants lam of a bilinear map x (x) y -> out, lam of shape (*x, *y, *out)."""

    symbol = "lam"
    slots = ("x", "y", "out")

    @property
    def shape(self) -> tuple[int, ...]:
        return sum((space.shape for space in self.spaces), ())

    def operator(self, matrices: Sequence[Sparse], kind: str, convert: Callable[[Any], Any]) -> Sparse:
        t_x, t_y, t_out = matrices
        i_x, i_y, i_out = (Sparse.identity(t.shape[0]) for t in matrices)
        if kind == DISCRETE:
            moved = t_x.T.kron(t_y.T).kron(i_out)
        else:
            moved = t_x.T.kron(i_y).kron(i_out) + i_x.kron(t_y.T).kron(i_out)
        return i_x.kron(i_y).kron(t_out) - moved


class Filter(Target):
    """The unknown filter K of O_K(x) = K * x in a fixed algebra; K of shape algebra.shape."""

    symbol = "K"
    slots = ("algebra",)

    def __init__(self, algebra: Algebra) -> None:
        super().__init__([as_space(algebra, "algebra")])
        self.algebra = algebra

    @property
    def shape(self) -> tuple[int, ...]:
        return self.algebra.shape

    def coefficients(self) -> list[sympy.Expr]:
        return [c for *_, c in self.algebra.entries()]

    def operator(self, matrices: Sequence[Sparse], kind: str, convert: Callable[[Any], Any]) -> Sparse:
        d = self.algebra.dim
        left = Sparse((d * d, d), {(k * d + j, i): convert(c) for i, j, k, c in self.algebra.entries()})
        return _commutator(matrices[0], matrices[0]) @ left


def _commutator(t_in: Sparse, t_out: Sparse) -> Sparse:
    """W -> T_out W - W T_in on W flattened in C order (rows: codomain, columns: domain)."""
    return t_out.kron(Sparse.identity(t_in.shape[0])) - Sparse.identity(t_out.shape[0]).kron(t_in.T)


def linear_map(domain: SpaceLike, codomain: SpaceLike | None = None) -> LinearMap:
    """An unknown linear map from `domain` to `codomain` (default: the same space); each an int, a shape or an
    algebra."""
    space = as_space(domain, "domain")
    return LinearMap([space, space if codomain is None else as_space(codomain, "codomain")])


def bilinear_map(x: SpaceLike, y: SpaceLike | None = None, out: SpaceLike | None = None) -> BilinearMap:
    """Unknown structure constants of a bilinear map x (x) y -> out (y and out default to x's space)."""
    space = as_space(x, "x")
    return BilinearMap([space, space if y is None else as_space(y, "y"),
                        space if out is None else as_space(out, "out")])


def filter_of(algebra: Algebra) -> Filter:
    """The unknown filter K of the multiplication operator O_K(x) = K * x of `algebra` (lam fixed)."""
    if not isinstance(algebra, Algebra):
        raise TypeError(f"algebra: expected an Algebra (its product is kept fixed), got "
                        f"{type(algebra).__name__} {algebra!r}")
    if algebra.tol is not None:
        raise ValueError(f"algebra: {algebra.name} is numeric; the symmetry solver decides ranks by its own "
                         f"methods, not within the algebra's tolerance, so solve on an exact algebra (.exact())")
    return Filter(algebra)
