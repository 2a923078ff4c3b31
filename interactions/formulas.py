"""Exact component formulas of expressions over generic signals and parameters (small dimensions).

Signals become elements with symbolic coefficients x_{k,a} (one index per factor they vary along; along a
constant factor the coefficients repeat), parameters W_{i,j}; every node then computes its exact value.

>>> from product_interactions.algebra import complex_numbers
>>> from product_interactions.interactions import Signal, Parameter
>>> C = complex_numbers()
>>> X, K = Signal("x", C), Parameter("k", C)
>>> formula(K * X)
array([k_{0}*x_{0} - k_{1}*x_{1}, k_{0}*x_{1} + k_{1}*x_{0}], dtype=object)
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal, overload

import numpy as np
import sympy

from ..algebra import Element
from ..algebra.algebra import check_choice, check_count, check_flag

from .expression import Expr, Parameter, Signal, check_expression, symbol_array


#: The most components a formula writes out.
MAX_COMPONENTS = 4096
#: The default of ``max_terms``: the most terms (summands, over all components) one node's value may hold.
MAX_TERMS = 10_000


class SymbolicContext:
    """Exact values of the nodes of one expression, computed once each."""

    def __init__(self, bindings: Mapping[Expr, Element] | None = None, softmax: str = "expand",
                 max_terms: int = MAX_TERMS) -> None:
        self._values: dict[int, Any] = {id(node): value for node, value in (bindings or {}).items()}
        #: "expand": softmax weights as exp(s_k) / sum_j exp(s_j); "symbolic": kept as softmax(k, s_0, ...).
        self.softmax = softmax
        #: The most terms one node's value may hold (summands of a sum, 1 for another nonzero coefficient).
        self.max_terms = max_terms

    def child(self, bindings: Mapping[Expr, Element]) -> SymbolicContext:
        """A context for an enclosed body (a Scan step) with placeholders bound to elements."""
        return SymbolicContext(bindings, self.softmax, self.max_terms)

    def value(self, node: Expr) -> Any:
        """The node's exact value: an `Element`, or a symbol array for a shape parameter; a ValueError naming
        ``max_terms`` as soon as one node's value holds more terms than that (before its parents are built)."""
        if id(node) not in self._values:
            value = node._symbolic(self)
            coefficients = value.coefficients if isinstance(value, Element) else value
            terms = sum(len(c.args) if isinstance(c, sympy.Add) else int(c != 0) for c in coefficients.flat)
            if terms > self.max_terms:
                text = repr(node)
                raise ValueError(f"max_terms: {text[:60]}{'...' * (len(text) > 60)} holds {terms:,} terms over its "
                                 f"components, more than max_terms = {self.max_terms:,}; use smaller sizes "
                                 f"(dimensions, lengths), softmax=\"symbolic\" if it has a softmax, or a larger "
                                 f"max_terms")
            self._values[id(node)] = value
        return self._values[id(node)]

    @staticmethod
    def _element(node: Expr, name: str) -> Element:
        coefficients = symbol_array(name, node.shape)
        for axis, factor in enumerate(node.factors):
            if axis in node.units:
                coefficients = np.expand_dims(coefficients, axis)
            elif axis in node.support:
                full = np.zeros(coefficients.shape[:axis] + (factor.dim,) + coefficients.shape[axis + 1:], object)
                full[(slice(None),) * axis + (list(node.support[axis]),)] = coefficients
                coefficients = full
        coefficients = np.broadcast_to(coefficients, node.algebra.shape)
        return Element(node.algebra, coefficients)

    def signal_element(self, signal: Signal) -> Element:
        return self._element(signal, signal.name)

    def parameter_value(self, parameter: Parameter) -> Element | np.ndarray:
        if parameter.algebra is None:
            return symbol_array(parameter.name, parameter.array_shape)  # type: ignore[arg-type]  # a shape parameter
        return self._element(parameter, parameter.name)


@overload
def formula(expr: Expr, latex: Literal[False] = False, softmax: str = "expand",
            max_terms: int = MAX_TERMS) -> np.ndarray: ...
@overload
def formula(expr: Expr, latex: Literal[True], softmax: str = "expand", max_terms: int = MAX_TERMS) -> str: ...
@overload
def formula(expr: Expr, latex: bool, softmax: str = "expand", max_terms: int = MAX_TERMS) -> np.ndarray | str: ...
def formula(expr: Expr, latex: bool = False, softmax: str = "expand", max_terms: int = MAX_TERMS) -> np.ndarray | str:
    """The exact coefficients of `expr` as an object array of shape ``expr.algebra.shape`` (constant factors
    included), or of a shape parameter's shape (its symbols); with ``latex=True`` a LaTeX string of the nonzero
    components instead.  ``softmax="symbolic"`` keeps each softmax weight as ``softmax(k, s_0, ...)``
    (`interactions.pointwise.softmax`) instead of expanding it into exponentials.

    Every node's expanded value may hold at most `max_terms` terms over its components (the summands of each
    sum, 1 for another nonzero coefficient); the first node beyond it stops the evaluation with a ValueError.

    >>> from product_interactions.algebra import complex_numbers
    >>> from product_interactions.interactions import Signal
    >>> X = Signal("x", complex_numbers())
    >>> formula(X * X * X, max_terms=3)
    Traceback (most recent call last):
    ...
    ValueError: max_terms: Mul(Mul(x, x), x) holds 4 terms over its components, more than max_terms = 3; ...
    """
    softmax = check_choice(softmax, ("expand", "symbolic"), "softmax")
    max_terms = check_count(max_terms, "max_terms")
    if not isinstance(expr, Parameter):                     # a shape parameter too: its symbols
        check_expression(expr, "expr")
    for node in expr.walk():                                # every node's value is written out on the way
        size = math.prod(node.shape) if node.algebra is None else node.algebra.dim
        if size > MAX_COMPONENTS:
            where = f"{node!r:.40} has shape {node.shape}" if node.algebra is None else \
                f"{node!r:.40} is in {node.algebra.name}"
            raise ValueError(f"expr: {where}, {size:,} components; formulas are for small dimensions (at most "
                             f"MAX_COMPONENTS = {MAX_COMPONENTS:,})")
        numeric = [f for f in (node.algebra.factors if node.algebra is not None else ()) if f.tol is not None]
        if numeric:
            raise TypeError(f"expr: {node!r:.40} is in {numeric[0].describe()}; formulas are exact and need exact "
                            f"algebras (.exact(), where the constants are simple numbers)")
    latex = check_flag(latex, "latex")
    value = SymbolicContext(softmax=softmax, max_terms=max_terms).value(expr)
    coefficients = value if expr.algebra is None else value.coefficients     # a shape parameter: its symbols
    if not latex:
        return coefficients
    lines = [f"{_component_latex(expr, index)} &= {to_latex(c)}" for index, c in np.ndenumerate(coefficients)
             if c != 0 and not any(index[axis] for axis in expr.units)]     # constant factors repeat: show one
    return "\\begin{aligned}" + " \\\\ ".join(lines) + "\\end{aligned}"


def to_latex(value: object) -> str:
    """`sympy.latex`, with a parameter name holding an underscore braced: W_Q_{0,0} -> {W_Q}_{0,0} (LaTeX refuses
    a double subscript).

    >>> to_latex(sympy.Symbol("W_Q_{0,1}") * sympy.Symbol("x_{1}"))
    '{W_Q}_{0,1} x_{1}'
    """
    names: dict[sympy.Symbol, str] = {}
    for symbol in getattr(value, "free_symbols", ()):
        cut = symbol.name.rfind("_{")
        if "_" in symbol.name[:cut]:
            names[symbol] = f"{{{symbol.name[:cut]}}}{symbol.name[cut:]}"
    return sympy.latex(value, symbol_names=names)


def _component_latex(expr: Expr, index: tuple[int, ...]) -> str:
    return "z_{" + ",".join(str(i) for axis, i in enumerate(index) if axis not in expr.units) + "}"
