"""`Element`: coefficients over an algebra, with the algebra product as ``*``.

The coefficients are the algebra's scalars (`algebra.scalars`): exact sympy values, or floats in a numeric
algebra, where ``==`` holds within the algebra's tolerance.

>>> from product_interactions.algebra import clifford
>>> H = clifford(0, 2)                      # the quaternions on the blades 1, e1, e2, e12
>>> i, j = H.basis_element("e1"), H.basis_element("e2")
>>> i * j, j * i
(e12, -e12)
>>> (i + 2 * j)["e2"]
2
"""
from __future__ import annotations

import math

import numbers
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import sympy
from numpy.typing import ArrayLike, DTypeLike

from .exact import ExactLike, check_dtype, object_array
from .labels import Key, Label
from .limits import check_size

if TYPE_CHECKING:
    from .algebra import Algebra

#: The largest exponent of ``x ** n`` (n - 1 products, left to right).
MAX_POWER = 1024


def check_element_size(algebra: Algebra, what: str) -> None:
    """Refuse (ValueError naming `what`) exact elements of more than `MAX_ENTRIES` coefficients."""
    check_size(algebra.dim, what, f"coefficients in an element of {algebra.name}",
               "elements hold one Python number each; use the kernels on numeric arrays")


def _label_text(label: Label) -> str:
    return "⊗".join(label) if isinstance(label, tuple) else str(label)


class Element:
    """An element sum_i c_i e_i of an algebra; immutable."""

    __slots__ = ("_algebra", "_flat")
    #: numpy defers to the operators here: ``np.float64(0.5) + x`` is 0.5 * 1 + x, not an array of coefficients.
    __array_ufunc__ = None

    def __init__(self, algebra: Algebra, coefficients: ArrayLike) -> None:
        from .algebra import Algebra
        if not isinstance(algebra, Algebra):
            raise TypeError(f"algebra: expected an Algebra, got {type(algebra).__name__} {algebra!r:.60}")
        check_element_size(algebra, "coefficients")
        array = object_array(coefficients, "coefficients", f"numbers of shape {algebra.shape}")
        if array.shape not in (algebra.shape, (algebra.dim,)):
            raise ValueError(f"coefficients: expected shape {algebra.shape} for {algebra.name}, got {array.shape}")
        flat = array.reshape(-1)
        self._algebra = algebra
        self._flat = tuple(algebra.scalars.convert(v, f"coefficients[{i}]") for i, v in enumerate(flat))

    # ------------------------------------------------------------------ access
    @property
    def algebra(self) -> Algebra:
        """The algebra the element belongs to (read-only)."""
        return self._algebra

    @property
    def flat(self) -> tuple[sympy.Expr, ...]:
        """The coefficients in basis order, a tuple (read-only)."""
        return self._flat

    @property
    def coefficients(self) -> np.ndarray:
        """The coefficients (sympy values, or floats) as an object array of shape ``algebra.shape``."""
        array = np.empty(len(self.flat), dtype=object)
        array[:] = self.flat
        return array.reshape(self.algebra.shape)

    def to_array(self, dtype: DTypeLike = float) -> np.ndarray:
        """The coefficients as a numeric numpy array of shape ``algebra.shape`` (a float or complex `dtype`)."""
        dtype = check_dtype(dtype)
        convert = complex if dtype.kind == "c" else float
        try:
            return np.array([convert(c) for c in self.flat], dtype=dtype).reshape(self.algebra.shape)
        except TypeError:
            free = sorted({str(s) for c in self.flat for s in c.free_symbols})
            raise TypeError(f"to_array: the element has symbolic coefficients ({', '.join(free)}); substitute "
                            f"values first with .subs()") from None

    def __getitem__(self, label: Key) -> sympy.Expr:
        if isinstance(label, tuple) and label and all(isinstance(i, (int, np.integer)) for i in label):
            label = cast("tuple[int, ...]", label)
            shape = self.algebra.shape
            if len(label) != len(shape):
                raise ValueError(f"label: expected {len(shape)} indices for shape {shape}, got {len(label)}")
            for axis, (i, n) in enumerate(zip(label, shape)):
                if not 0 <= i < n:
                    raise ValueError(f"label: index {i} out of range for axis {axis} of size {n}")
            return self.flat[int(np.ravel_multi_index(label, shape))]
        return self.flat[self.algebra.index(label)]

    def subs(self, *args: Any, **kwargs: Any) -> Element:
        """Substitute into every coefficient (sympy's ``subs``; exact algebras)."""
        self._require_exact("subs")
        return Element(self.algebra, [c.subs(*args, **kwargs) for c in self.flat])

    def expand(self) -> Element:
        """Expand every coefficient (exact algebras)."""
        self._require_exact("expand")
        return Element(self.algebra, [sympy.expand(c) for c in self.flat])

    def _require_exact(self, operation: str) -> None:
        if self.algebra.tol is not None:
            raise TypeError(f"{operation}: the element's algebra {self.algebra.name} is numeric (float coefficients); "
                            f"symbolic operations need an exact algebra")

    # ------------------------------------------------------------------ arithmetic
    def _same_algebra(self, other: object, operation: str) -> Element:
        if not isinstance(other, Element):
            raise TypeError(f"{operation}: expected an Element of {self.algebra.name}, got {type(other).__name__}")
        if other.algebra is not self.algebra and other.algebra != self.algebra:
            raise ValueError(f"{operation}: cannot combine an element of {self.algebra.describe()} with one of "
                             f"{other.algebra.describe()}")
        return other

    def _scalar(self, value: object, operation: str) -> Element | None:
        """The element c 1 for a scalar c (int, Fraction, float with a short binary expansion, sympy number or
        symbol), or None when `value` is no scalar (so Python tries the other operand's method).  0 needs no
        unit, so sum() of elements works in every algebra."""
        if isinstance(value, (Element, bool, np.bool_)) or not isinstance(value, (numbers.Number, sympy.Expr)):
            return None
        scalar = self.algebra.scalars.convert(value, "scalar")
        if not self.algebra.scalars.nonzero(scalar):
            return self.algebra.zero()
        unit = self.algebra.unit()
        if unit is None:
            raise ValueError(f"{operation}: {self.algebra.name} has no unit, so the scalar {scalar} is not one of "
                             f"its elements; add an element instead")
        return unit * scalar

    def _operand(self, other: object, operation: str) -> Element:
        """`other` as an element of this algebra (a scalar c as c 1), or a TypeError naming the operation."""
        operand = self._same_algebra(other, operation) if isinstance(other, Element) else self._scalar(other, operation)
        if operand is None:
            raise TypeError(f"{operation}: expected an Element of {self.algebra.name} or a number, got "
                            f"{type(other).__name__} {other!r:.60}")
        return operand

    def _result(self, values: list[Any], operation: str, other: object) -> Element:
        """The element with coefficients `values`, computed by `operation` from self and `other`: in a numeric
        algebra, a coefficient that overflowed float64 is refused naming the operation and its operands (not the
        coefficients the caller never passed)."""
        if self.algebra.tol is not None:
            for label, value in zip(self.algebra.basis, values):
                if not math.isfinite(value):
                    operand = "y" if isinstance(other, Element) else "scalar"
                    raise ValueError(f"{operation}: x {operation} {operand} overflows float64 (largest 1.8e308): its "
                                     f"coefficient of {_label_text(label)} is {value}; scale x or {operand} down")
        return Element(self.algebra, values)

    def __add__(self, other: Element | ExactLike) -> Element:
        operand = self._operand(other, "+")
        return self._result([a + b for a, b in zip(self.flat, operand.flat)], "+", other)

    __radd__ = __add__

    def __sub__(self, other: Element | ExactLike) -> Element:
        operand = self._operand(other, "-")
        return self._result([a - b for a, b in zip(self.flat, operand.flat)], "-", other)

    def __rsub__(self, other: ExactLike) -> Element:
        operand = self._operand(other, "-")
        return operand - self

    def __neg__(self) -> Element:
        return Element(self.algebra, [-a for a in self.flat])

    def __mul__(self, other: Element | ExactLike) -> Element:
        if isinstance(other, Element):
            other = self._same_algebra(other, "*")
            scalars = self.algebra.scalars
            return self._result([scalars.normal(c) for c in self.algebra._multiply(self.flat, other.flat)], "*",
                                other)
        scalar = self.algebra.scalars.convert(other, "scalar")
        return self._result([scalar * a for a in self.flat], "*", other)

    def __rmul__(self, other: ExactLike) -> Element:
        scalar = self.algebra.scalars.convert(other, "scalar")
        return self._result([scalar * a for a in self.flat], "*", other)

    def __truediv__(self, other: Element | ExactLike) -> Element:
        if isinstance(other, Element):
            return self * self._same_algebra(other, "/").inverse()
        scalar = self.algebra.scalars.convert(other, "divisor")
        if not self.algebra.scalars.nonzero(scalar):
            raise ZeroDivisionError("divisor: cannot divide an element by zero")
        return self._result([a / scalar for a in self.flat], "/", other)

    def __rtruediv__(self, other: ExactLike) -> Element:
        return self.algebra.scalars.convert(other, "dividend") * self.inverse()

    def inverse(self) -> Element:
        """The two-sided inverse y (x y = y x = 1), solved in the algebra's scalars (exactly, or by least squares
        within the tolerance of a numeric algebra); a ValueError when there is none.

        >>> from product_interactions.algebra import quaternions
        >>> i = quaternions().basis_element("i")
        >>> i.inverse(), 1 / (1 + i)
        (-i, 1/2*1 - 1/2*i)
        """
        unit = self.algebra.unit()
        if unit is None:
            raise ValueError(f"x: {self.algebra.name} has no unit, so no element has an inverse")
        if self.algebra.tol is not None and self == 0:         # one rule: what equals 0 has no inverse
            raise ValueError(f"x: {self!r} is 0 within the tolerance {self.algebra.tol:g} of {self.algebra.name} "
                             f"(every coefficient at most tol), so it has no inverse")
        left = self.algebra.left_regular(self)
        rows = [{j: left[i, j] for j in range(self.algebra.dim)} for i in range(self.algebra.dim)]
        solution = self.algebra.scalars.solve(rows, unit.flat, self.algebra.dim)
        if solution is None:
            raise ValueError(f"x: {self!r} is not invertible in {self.algebra.name} (x y = 1 has no solution: "
                             f"x is a zero divisor)")
        inverse = Element(self.algebra, solution)
        if not _within_rule(inverse * self, unit, inverse, self):
            raise ValueError(f"x: {self!r} has a right inverse in {self.algebra.name} but no two-sided one")
        return inverse

    def __pow__(self, exponent: int) -> Element:
        """x ** n: n - 1 products left to right for n > 0, the unit for n = 0, the inverse's power for n < 0."""
        if isinstance(exponent, bool) or not isinstance(exponent, (int, np.integer)):
            raise TypeError(f"exponent: expected an int (left-to-right powers), got "
                            f"{type(exponent).__name__} {exponent!r}")
        if not -MAX_POWER <= exponent <= MAX_POWER:
            raise ValueError(f"exponent: expected an int in -MAX_POWER..MAX_POWER = {MAX_POWER} (x ** n takes |n| - 1 "
                             f"products, left to right), got {exponent}")
        if exponent == 0:
            unit = self.algebra.unit()
            if unit is None:
                raise ValueError(f"exponent: x ** 0 is the unit, and {self.algebra.name} has no unit")
            return unit
        base = self if exponent > 0 else self.inverse()
        result = base
        for _ in range(abs(int(exponent)) - 1):
            result = result * base
        return result

    def __eq__(self, other: object) -> bool:
        """Equal coefficients (exactly, or within the tolerance of a numeric algebra); a scalar c stands for c 1
        (``x == 0`` needs no unit; an algebra without one has no element equal to another scalar, and no element of
        an exact algebra equals an inexact float such as nan or 0.1)."""
        try:
            operand = self._operand(other, "==")
        except (TypeError, ValueError):        # no number, an inexact float (nan, 0.1), or no unit to scale
            return False
        return all(self.algebra.scalars.is_zero(a - b) for a, b in zip(self.flat, operand.flat))

    # ------------------------------------------------------------------ containers
    def __iter__(self) -> Iterator[sympy.Expr]:
        """The coefficients in basis order."""
        return iter(self.flat)

    def __len__(self) -> int:
        return len(self.flat)

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        """``np.asarray(x)``: the coefficients as floats (in the algebra's shape), or a TypeError naming the
        symbolic one."""
        return self.to_array(float if dtype is None else dtype)

    __hash__ = None  # type: ignore[assignment]  # equal values may be written differently: no hash

    # ------------------------------------------------------------------ display
    def _is_unit_coefficient(self, c: sympy.Expr, sign: int) -> bool:
        """c == sign, within the tolerance for a float (a least-squares unit shows as its label, not 1*label)."""
        return self.algebra.scalars.is_zero(c - sign) if isinstance(c, float) else bool(c == sign)

    def _terms(self) -> list[tuple[sympy.Expr, str]]:
        return [(c, _label_text(self.algebra.label(i))) for i, c in enumerate(self.flat)
                if not self.algebra.scalars.is_zero(c)]

    def __repr__(self) -> str:
        terms = self._terms()
        if not terms:
            return "0"
        parts = []
        for c, label in terms:
            if self._is_unit_coefficient(c, 1):
                parts.append(label)
            elif self._is_unit_coefficient(c, -1):
                parts.append(f"-{label}")
            elif isinstance(c, float):
                parts.append(f"{c:.6g}*{label}")
            elif isinstance(c, (sympy.Symbol, sympy.Number)) or c.is_Pow or c.is_Mul and c.is_number:
                parts.append(f"{c}*{label}")
            else:
                parts.append(f"({c})*{label}")
        return " + ".join(parts).replace("+ -", "- ")

    def _repr_latex_(self) -> str:
        terms = self._terms()
        if not terms:
            return "$0$"
        parts = []
        for c, label in terms:
            label = _label_latex(label)
            coefficient = "" if self._is_unit_coefficient(c, 1) else "-" if self._is_unit_coefficient(c, -1) else \
                f"{c:.6g} " if isinstance(c, float) else \
                f"\\left({sympy.latex(c)}\\right) " if c.is_Add else f"{sympy.latex(c)} "
            parts.append(coefficient + label)
        text = parts[0] + "".join(f" - {p[1:].lstrip()}" if p.startswith("-") else f" + {p}" for p in parts[1:])
        return f"${text}$"


def _label_latex(label: str) -> str:
    """``e^1_-1`` -> ``\\mathrm{e}^{1}_{-1}``; tensor factors joined by \\otimes."""
    def part(text: str) -> str:
        base, sup, sub = re.fullmatch(  # type: ignore[union-attr]  # every text matches
            r"([^^_]*)(?:\^([^_]*))?(?:_(.*))?", text).groups()
        return f"\\mathrm{{{base}}}" + (f"^{{{sup}}}" if sup else "") + (f"_{{{sub}}}" if sub else "")
    return " \\otimes ".join(part(p) for p in label.split("⊗"))


def _within_rule(product: Element, expected: Element, x: Element, y: Element) -> bool:
    """``product == expected`` for the product x y: exactly, or for a numeric algebra within the rule of
    `algebra.scalars`: each constant moved by at most tol moves each coefficient of x y by at most
    tol * sum|x_i| * sum|y_j| (and `expected` itself may be off by tol)."""
    tol = product.algebra.tol
    if tol is None:
        return product == expected
    allowed = tol * (1 + sum(abs(float(v)) for v in x.flat) * sum(abs(float(v)) for v in y.flat))
    return all(abs(float(a) - float(b)) <= allowed for a, b in zip(product.flat, expected.flat))
