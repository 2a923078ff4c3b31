"""Structural operators: the flip T, the reductions P, P^c, P^N, and the projections P^0, P^R.

On a relation algebra B (x) B (query factor, key factor):

* ``Flip``:  x (x) g_0  ->  g_0 (x) x  (moves a signal from the query slot to the key slot);
* ``Reduce``: g_k (x) g_l -> mask[k, l] g_k (x) g_0 (sum over keys); ``CausalReduce`` keeps l <= k,
  ``NeighbourhoodReduce`` a neighbourhood given by a mask, a radius on the lattice, or a radius around points;
  the pairs a mask drops are left out of the sum, never multiplied by zero (a NaN there reaches no output);
* ``ScalarProjection`` keeps the e_0 component of a factor, ``RankProjection`` the first R components;
* ``Lag``: x_t -> x_{t-k} on a position factor (zero for t < k), the causal lattice translation.

>>> from product_interactions.algebra import position, diagonal, tensor_product
>>> from product_interactions.interactions import Signal
>>> A = tensor_product(position(4), position(4), diagonal(2))
>>> X = Signal("x", A, units=[1])
>>> CausalReduce(X * Flip(X)).units
frozenset({1})
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import sympy
from numpy.typing import ArrayLike

from ..algebra import Element
from ..algebra.algebra import check_count
from ..kernels import Mask
from . import masks
from .expression import Expr, Unary, check_factor, check_expression, unit_is_all_ones

if TYPE_CHECKING:
    from ..kernels.plans import Value
    from .compiler import Lowering
    from .formulas import SymbolicContext


class Flip(Unary):
    """T: moves the content of factor `source` to factor `target`, where the value must be constant (g_0)."""

    def __init__(self, X: Expr, source: int = 0, target: int = 1) -> None:
        X = check_expression(X, "X")
        source, target = check_factor(X, source, "source"), check_factor(X, target, "target")
        if source == target or X.factors[source] != X.factors[target]:
            raise ValueError(f"source, target: expected two distinct factors holding the same algebra, got "
                             f"{source} ({X.factors[source].name}) and {target} ({X.factors[target].name})")
        if target not in X.units or source in X.units:
            raise ValueError(f"X: Flip moves factor {source} into factor {target}, so X must vary along {source} "
                             f"and be constant (g_0) along {target}; its constant factors are {sorted(X.units)}")
        super().__init__(X.algebra, X.units - {target} | {source})
        self.children, self.source, self.target = (X,), source, target

    def _describe(self) -> str:
        return "Flip"

    def _latex(self, children: list[str]) -> str:
        return f"T({children[0]})"

    def _symbolic(self, context: SymbolicContext) -> Element:
        X = context.value(self.children[0])
        return Element(self.algebra, np.swapaxes(X.coefficients, self.source, self.target))

    def _lower(self, lowering: Lowering) -> Value:
        return lowering.builder.swap(lowering.value(self.children[0]), self.source, self.target)


class Reduce(Unary):
    """P: sums factor `factor` (keys) into g_0, weighting the pair (query component, key component) by `mask`.

    `mask` is an (n_query, n_key) 0/1 array or a `kernels.plans.masks.Mask` rule over factors (`query`, `factor`);
    None sums everything.
    """

    def __init__(self, X: Expr, factor: int = 1, mask: masks.MaskLike | None = None, query: int = 0) -> None:
        X = check_expression(X, "X")
        factor, query = check_factor(X, factor), check_factor(X, query, "query")
        if not unit_is_all_ones(X.factors[factor]):
            raise ValueError(f"factor: reduction needs a position-like factor (unit g_0 = sum of the basis), "
                             f"factor {factor} is {X.factors[factor].name}")
        if mask is not None:
            if query == factor:
                raise ValueError(f"query: expected a factor other than the reduced one ({factor})")
            mask = masks.as_mask(mask, X.factors[query].dim, X.factors[factor].dim)
        super().__init__(X.algebra, X.units | {factor})
        self.children, self.factor, self.query, self.mask = (X,), factor, query, mask

    def _describe(self) -> str:
        return f"{type(self).__name__}[factor {self.factor}]"

    #: The subscript of P in `latex` (the paper's P^c, P^N); a plain Reduce shows M when it has a mask.
    subscript = "M"

    def _latex(self, children: list[str]) -> str:
        sub = f"_{{{self.subscript}}}" if self.mask is not None else ""
        return f"P^{{{self.factor}}}{sub}({children[0]})"

    def _symbolic(self, context: SymbolicContext) -> Element:
        coefficients = context.value(self.children[0]).coefficients
        if self.mask is None:
            summed = np.sum(coefficients, axis=self.factor, keepdims=True)
            return Element(self.algebra, np.broadcast_to(summed, coefficients.shape))
        moved = np.moveaxis(coefficients, (self.query, self.factor), (-2, -1))
        summed = np.sum(moved * self.mask.array(*moved.shape[-2:]).astype(int), axis=-1, keepdims=True)
        result = np.broadcast_to(summed, moved.shape)
        return Element(self.algebra, np.moveaxis(result, (-2, -1), (self.query, self.factor)))

    def _lower(self, lowering: Lowering) -> Value:
        return lowering.builder.reduce(lowering.value(self.children[0]), self.factor, self.mask, self.query)


class CausalReduce(Reduce):
    """P^c: g_k (x) g_l -> g_k (x) g_0 for l <= k, 0 for l > k (the rule `Mask.causal()`: any length)."""

    subscript = "c"

    def __init__(self, X: Expr, factor: int = 1, query: int = 0) -> None:
        super().__init__(X, factor, Mask.causal(), query)


class NeighbourhoodReduce(Reduce):
    """P^N: keeps the keys in a neighbourhood of each query: a `mask`, or a `radius` (on the lattice, or around
    `points` of shape (n, dims))."""

    subscript = "N"

    def __init__(self, X: Expr, mask: masks.MaskLike | None = None, radius: float | None = None,
                 points: ArrayLike | None = None, factor: int = 1, query: int = 0) -> None:
        X = check_expression(X, "X")
        n = X.factors[check_factor(X, factor)].dim
        if (mask is None) == (radius is None):
            raise ValueError("mask, radius: give exactly one of them")
        if radius is not None:
            band = Mask.band(radius)                                      # checks the radius
            mask = band if points is None else masks.radius(n, band.radius, points)  # type: ignore[arg-type]
        elif points is not None:
            raise ValueError("points: only used with radius=")
        super().__init__(X, factor, mask, query)


class _Projection(Unary):
    def __init__(self, X: Expr, components: Iterable[int], factor: int) -> None:
        X = check_expression(X, "X")
        factor = check_factor(X, factor)
        if factor in X.units:
            raise ValueError(f"factor: X is constant (g_0) along factor {factor}; project a factor it varies along")
        super().__init__(X.algebra, X.units)
        self.children, self.factor, self.components = (X,), factor, tuple(components)

    def _describe(self) -> str:
        return f"{type(self).__name__}[factor {self.factor}]"

    def _symbolic(self, context: SymbolicContext) -> Element:
        coefficients = np.moveaxis(context.value(self.children[0]).coefficients, self.factor, -1).copy()
        dropped = [i for i in range(coefficients.shape[-1]) if i not in self.components]
        coefficients[..., dropped] = 0
        return Element(self.algebra, np.moveaxis(coefficients, -1, self.factor))

    def _lower(self, lowering: Lowering) -> Value:
        return lowering.builder.select(lowering.value(self.children[0]), self.factor, self.components)


class ScalarProjection(_Projection):
    """P^0: keeps the e_0 component of factor `factor` (default: the last, the feature algebra)."""

    def __init__(self, X: Expr, factor: int = -1) -> None:
        super().__init__(X, (0,), factor)


class RankProjection(_Projection):
    """P^R: keeps the first `rank` components of factor `factor` (R score channels)."""

    def __init__(self, X: Expr, rank: int, factor: int = -1) -> None:
        X = check_expression(X, "X")
        dim = X.factors[check_factor(X, factor)].dim
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 1 <= rank <= dim:
            raise ValueError(f"rank: expected an int in 1..{dim} (the factor's dimension), got {rank!r}")
        super().__init__(X, range(int(rank)), factor)
        self.rank = int(rank)


class Lag(Unary):
    """T_k on a position factor: x_t -> x_{t-k}, zero for t < k (the causal lattice translation), e.g. the taps of
    a causal depthwise convolution sum_k conv_k T_k(x).

    >>> from product_interactions.algebra import position
    >>> from product_interactions.interactions import Signal
    >>> Lag(Signal("x", position(3)), 1).formula()
    array([0, x_{0}, x_{1}], dtype=object)
    """

    def __init__(self, X: Expr, lag: int, factor: int = 0) -> None:
        X = check_expression(X, "X")
        factor = check_factor(X, factor)
        if factor in X.units:
            raise ValueError(f"factor: X is constant along factor {factor}; lag a factor it varies along")
        super().__init__(X.algebra, X.units)
        self.children, self.lag, self.factor = (X,), check_count(lag, "lag"), factor

    def _describe(self) -> str:
        return f"Lag[{self.lag}]"

    def _latex(self, children: list[str]) -> str:
        return f"L^{{{self.lag}}}({children[0]})"

    def _symbolic(self, context: SymbolicContext) -> Element:
        coefficients = context.value(self.children[0]).coefficients
        n = coefficients.shape[self.factor]
        head = (slice(None),) * self.factor
        shifted = np.full(coefficients.shape, sympy.Integer(0), dtype=object)
        shifted[head + (slice(min(self.lag, n), n),)] = coefficients[head + (slice(0, max(n - self.lag, 0)),)]
        return Element(self.algebra, shifted)

    def _lower(self, lowering: Lowering) -> Value:
        return lowering.builder.lag(lowering.value(self.children[0]), self.factor, self.lag, self.units)
