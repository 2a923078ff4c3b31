"""F: nonlinearities applied coefficient by coefficient, F(X) = sum_J F(X_J) e_J.

F acts on the structurally nonzero components (a projection's dropped components stay zero).  ``softmax``
normalises over one factor (the keys), optionally within a mask over (query, key) pairs: the masked softmax of
causal attention, whose masked entries are left out (`kernels.arrays.masked_softmax`).  The numeric maps are those of
`kernels.arrays.pointwise`; this module keeps their symbolic meaning.

>>> from product_interactions.algebra import position
>>> from product_interactions.interactions import Signal
>>> X = Signal("x", position(2))
>>> Pointwise("sigmoid", X).formula()[0]
sigmoid(x_{0})
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import sympy

from ..algebra import Element, tensor_product
from ..algebra.algebra import check_choice
from ..kernels import Mask
from ..kernels.arrays import POINTWISE as NUMERIC
from ..kernels.plans import Register
from . import masks
from .expression import Expr, Signal, Unary, check_factor, check_expression

if TYPE_CHECKING:
    from ..kernels.plans import Value
    from .compiler import Lowering
    from .formulas import SymbolicContext


class _Named(sympy.Function):
    """A nonlinearity kept by name in formulas (so its argument's degree stays readable); evaluates and rewrites
    through its closed form."""

    nargs = 1

    @classmethod
    def closed_form(cls, x: sympy.Expr) -> sympy.Expr:
        raise NotImplementedError

    def _eval_rewrite_as_exp(self, x: sympy.Expr, **hints: Any) -> sympy.Expr:
        return self.closed_form(x)

    def _eval_evalf(self, precision: int) -> sympy.Expr:
        return self.closed_form(self.args[0])._eval_evalf(precision)

    def _eval_is_real(self) -> bool | None:
        return self.args[0].is_real


class sigmoid(_Named):  # noqa: N801  (sympy function names are lower case)
    closed_form = classmethod(lambda cls, x: 1 / (1 + sympy.exp(-x)))


class softplus(_Named):  # noqa: N801
    closed_form = classmethod(lambda cls, x: sympy.log(1 + sympy.exp(x)))


class silu(_Named):  # noqa: N801
    closed_form = classmethod(lambda cls, x: x / (1 + sympy.exp(-x)))


class relu(_Named):  # noqa: N801
    closed_form = classmethod(lambda cls, x: sympy.Max(0, x))


class softmax(sympy.Function):  # noqa: N801
    """softmax(k, s_0, ..., s_(n-1)) = exp(s_k) / sum_j exp(s_j): the weight of key k among one query's scores,
    kept by name in formulas (``formula(..., softmax="symbolic")``); one score alone gives 1.

    >>> a, b = sympy.symbols("a b")
    >>> softmax(0, a), softmax(1, a, b).rewrite(sympy.exp)
    (1, exp(b)/(exp(a) + exp(b)))
    """

    @classmethod
    def eval(cls, k: sympy.Expr, *scores: sympy.Expr) -> sympy.Expr | None:
        return sympy.Integer(1) if len(scores) == 1 else None

    @classmethod
    def closed_form(cls, k: sympy.Expr, *scores: sympy.Expr) -> sympy.Expr:
        return sympy.exp(scores[int(k)]) / sum(sympy.exp(s) for s in scores)

    def _eval_rewrite_as_exp(self, *args: sympy.Expr, **hints: Any) -> sympy.Expr:
        return self.closed_form(*args)

    def _eval_evalf(self, precision: int) -> sympy.Expr:
        return self.closed_form(*self.args)._eval_evalf(precision)


SYMBOLIC = {"sigmoid": sigmoid, "softplus": softplus, "silu": silu, "exp": sympy.exp, "relu": relu,
            "tanh": sympy.tanh}
FUNCTIONS = tuple(sorted(NUMERIC)) + ("softmax",)


class Pointwise(Unary):
    """F(X) for F in FUNCTIONS; ``softmax`` needs `factor` (normalised over it) and takes an optional `mask`
    over (query factor `query`, factor)."""

    def __init__(self, function: str, X: Expr, factor: int | None = None, mask: masks.MaskLike | Signal | None = None,
                 query: int = 0) -> None:
        check_choice(function, FUNCTIONS, "function")
        X = check_expression(X, "X")
        if function == "softmax":
            if factor is None:
                raise ValueError("factor: softmax needs the factor to normalise over")
            factor = check_factor(X, factor)
            if mask is not None:
                query = check_factor(X, query, "query")
                if query == factor:
                    raise ValueError(f"query: expected a factor other than the normalised one ({factor})")
                mask = _check_mask(mask, X, query, factor)
        elif factor is not None or mask is not None:
            raise ValueError(f"factor, mask: only softmax takes them, not {function}")
        super().__init__(X.algebra, X.units - ({factor} if mask is None and factor is not None else {factor, query}))
        self.function, self.factor, self.mask, self.query = function, factor, mask, query
        self.children = (X, mask) if isinstance(mask, Signal) else (X,)

    def _describe(self) -> str:
        return f"Pointwise[{self.function}]"

    def _latex(self, children: list[str]) -> str:
        name = f"\\mathrm{{{self.function}}}" + (f"_{{{self.factor}}}" if self.factor is not None else "")
        return f"{name}({children[0]})"

    def _symbolic(self, context: SymbolicContext) -> Element:
        coefficients = context.value(self.children[0]).coefficients
        if self.function != "softmax":
            apply = SYMBOLIC[self.function]
            return Element(self.algebra, np.vectorize(lambda c: c if c == 0 else apply(c), otypes=[object])(
                coefficients))
        moved = np.moveaxis(coefficients, (self.query, self.factor), (-2, -1))  # type: ignore[arg-type]  # softmax's
        weights = np.ones(moved.shape[-2:], dtype=int) if self.mask is None else \
            context.value(self.mask).coefficients if isinstance(self.mask, Signal) else \
            self.mask.array(*moved.shape[-2:]).astype(int)
        present = np.any(moved != 0, axis=-1, keepdims=True)        # fibres a projection left nonzero
        if context.softmax == "symbolic":
            result = np.zeros(moved.shape, dtype=object)
            for index in np.ndindex(moved.shape[:-1]):
                kept = [j for j in range(moved.shape[-1]) if weights[index[-1], j]]
                for position, j in enumerate(kept):
                    result[index + (j,)] = softmax(position, *(moved[index + (i,)] for i in kept))
            result = np.where(present, result, 0)
        else:
            exps = np.vectorize(sympy.exp, otypes=[object])(moved) * weights
            result = np.where(present, exps / np.sum(exps, axis=-1, keepdims=True), 0)
        return Element(self.algebra, np.moveaxis(result, (-2, -1), (self.query, self.factor)))  # type: ignore[arg-type]

    def _lower(self, lowering: Lowering) -> Value:
        value = lowering.value(self.children[0])
        if self.function != "softmax":
            return lowering.builder.map(value, self.function)
        mask: Mask | Signal | Register | None = self.mask
        if isinstance(mask, Signal):
            mask = Register(lowering.value(mask).operands[0].source.index)
        return lowering.builder.softmax(value, self.factor,  # type: ignore[arg-type]  # softmax has its factor
                                        mask, self.query if mask is not None else None)


def _check_mask(mask: masks.MaskLike | Signal, X: Expr, query: int, factor: int) -> Mask | Signal:
    """A `Mask` (a rule, or a 0/1 array) over (query, factor), or a Signal of such masks (one per batch entry)."""
    if isinstance(mask, Signal):
        pair = tensor_product(X.factors[query], X.factors[factor])
        if mask.algebra != pair or mask.units:
            raise ValueError(f"mask: expected a Signal in {pair.name} varying along both factors, got {mask!r} in "
                             f"{mask.algebra.name}")
        return mask
    return masks.as_mask(mask, X.factors[query].dim, X.factors[factor].dim)
