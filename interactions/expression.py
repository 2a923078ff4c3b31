"""The expression language: signals and parameters in algebras, products, linear maps, nonlinearities.

An expression is a small DAG whose every node has a value in a tensor product of algebras (`node.algebra`,
its factors `node.factors`).  A value may be *constant along* a position-like factor: there it is the unit
g_0 = sum_a g_a (the paper's X = sum_k x^(k) g_k (x) g_0 (x) e); `node.units` lists those factors, and arrays
carry no axis for them.  Every node knows three semantics, kept side by side in its class:

* ``_symbolic``: exact sympy elements (`interactions.formulas`),
* ``_degrees``: the degrees in given signals, behind the self-interaction order (`interactions.orders`);
  products and most nodes add their children's, so only leaves, sums, one-argument nodes and scans define it,
* ``_lower``: the numeric lowering into a plan, through `kernels.plans.builder` (`interactions.compiler`).

>>> from product_interactions.algebra import position, diagonal, tensor_product
>>> A = tensor_product(position(3), diagonal(2))
>>> X = Signal("x", A)
>>> W = Parameter("w", A)
>>> (W * X).algebra.shape
(3, 2)
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import sympy

from ..algebra import Algebra, Diagonal, Element, tensor_product
from ..algebra.exact import ExactLike, to_exact
from .degrees import Degrees, Profile, pareto, plus, zero

if TYPE_CHECKING:
    from ..kernels.plans import Value
    from ..kernels import Plan
    from .compiler import Lowering
    from .formulas import SymbolicContext


#: `repr` and `Expr.latex` show a subexpression longer than this many characters as its node name with dots.
TEXT_LIMIT = 2000


# ---------------------------------------------------------------------- factor facts used by several nodes
@functools.lru_cache(maxsize=256)
def unit_is_all_ones(factor: Algebra) -> bool:
    """True for position-like factors, whose unit g_0 has every coefficient 1 (so it can be broadcast)."""
    if isinstance(factor, Diagonal):
        return True
    unit = factor.unit()
    return unit is not None and unit == factor.element([1] * factor.dim)


def _as_algebra(algebra: object, argument: str) -> Algebra:
    if not isinstance(algebra, Algebra):
        raise TypeError(f"{argument}: expected an Algebra, got {type(algebra).__name__}")
    return algebra


def _check_units(algebra: Algebra, units: Iterable[int], argument: str) -> frozenset[int]:
    count = len(algebra.factors)
    if not isinstance(units, (list, tuple, set, frozenset, range)):
        raise TypeError(f"{argument}: expected a list of factor indices, got {type(units).__name__} {units!r}")
    for u in units:
        if isinstance(u, (bool, np.bool_)) or not isinstance(u, (int, np.integer)) or not -count <= u < count:
            raise ValueError(f"{argument}: expected factor indices in {-count}..{count - 1}, got {u!r}")
    units = frozenset(int(u) % count for u in units)
    for u in units:
        if not unit_is_all_ones(algebra.factors[u]):
            raise ValueError(f"{argument}: factor {u} ({algebra.factors[u].name}) has no unit g_0 = sum of its "
                             f"basis; only position-like factors can be constant")
    return units


def check_factor(node: Expr, factor: object, argument: str = "factor") -> int:
    """A factor index of `node` (negative ones count from the end), or a ValueError naming `argument`."""
    n = len(node.factors)
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)) or not -n <= factor < n:
        raise ValueError(f"{argument}: expected a factor index in {-n}..{n - 1} of {node.algebra.name}, "
                         f"got {factor!r}")
    return int(factor) % n


# ---------------------------------------------------------------------- base
class Expr:
    """A node of an expression DAG (see the module docstring)."""

    children: tuple[Expr, ...] = ()

    def __init__(self, algebra: Algebra, units: Iterable[int] = frozenset()) -> None:
        self.algebra = algebra
        self.units = frozenset(units)
        self.support: dict[int, tuple[int, ...]] = {}  # factor -> components a leaf's array enumerates (default: all)

    if TYPE_CHECKING:   # the semantics each node class defines (see the module docstring)
        def _symbolic(self, context: SymbolicContext) -> Element | np.ndarray: ...

        def _lower(self, lowering: Lowering) -> Value | int: ...

    @property
    def factors(self) -> tuple[Algebra, ...]:
        return self.algebra.factors

    @property
    def shape(self) -> tuple[int, ...]:
        """The array shape of a value (without batch axes): one axis per factor that is not constant."""
        return tuple(f.dim for i, f in enumerate(self.factors) if i not in self.units)

    def __mul__(self, other: Expr | ExactLike) -> Expr:
        """K * X (the algebra product), or c * X for a number c (`Scale`)."""
        return Mul(self, other) if isinstance(other, Expr) else Scale(self, other)

    def __rmul__(self, other: ExactLike) -> Expr:
        return Scale(self, other)

    def __truediv__(self, other: ExactLike) -> Expr:
        divisor = to_exact(other, "divisor")
        if divisor == 0:
            raise ZeroDivisionError("divisor: cannot divide an expression by zero")
        return Scale(self, 1 / divisor)

    def __neg__(self) -> Expr:
        return Scale(self, -1)

    def __add__(self, other: Expr) -> Add:
        return Add(self, other)

    def __sub__(self, other: Expr) -> Add:
        """K - X: K + (-1) X (the same checks as +)."""
        return Add(self, Scale(check_expression(other, "X"), -1))

    def compile(self, strategy: str = "auto") -> Plan:
        """This expression as a numeric `kernels.plans.plan.Plan`, built once (see `interactions.compiler`)."""
        from .compiler import compile as compile_expression
        return compile_expression(self, strategy)

    @overload
    def formula(self, *, latex: Literal[False] = False, softmax: str = "expand",
                max_terms: int = ...) -> np.ndarray: ...
    @overload
    def formula(self, *, latex: Literal[True], softmax: str = "expand", max_terms: int = ...) -> str: ...
    @overload
    def formula(self, *, latex: bool, softmax: str = "expand", max_terms: int = ...) -> np.ndarray | str: ...
    def formula(self, **options: Any) -> np.ndarray | str:
        """Exact component formula (see `interactions.formulas.formula`)."""
        from .formulas import formula
        return formula(self, **options)

    def walk(self) -> list[Expr]:
        """Every node once, children before parents."""
        seen: set[int] = {id(self)}
        order: list[Expr] = []
        stack: list[tuple[Expr, int]] = [(self, 0)]          # depth-first, iterative: any depth
        while stack:
            node, next_child = stack.pop()
            if next_child < len(node.children):
                stack.append((node, next_child + 1))
                child = node.children[next_child]
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                order.append(node)
        return order

    def _describe(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return self._written(lambda node, children: node._text(children), "{}(...)")

    def _text(self, children: list[str]) -> str:
        return f"{self._describe()}({', '.join(children)})" if self.children else repr(self)

    def latex(self) -> str:
        """The operator form in LaTeX, e.g. ``P^{1}_{c}(\\mathrm{softmax}_{1}(Q\\,T(K)) V)``; a subexpression
        longer than `TEXT_LIMIT` characters is shown as its node name with dots."""
        return self._written(lambda node, children: node._latex(children), "\\operatorname{{{}}}(\\dots)")

    def _written(self, write: Callable[[Expr, list[str]], str], cut: str) -> str:
        """Every node written from its children's texts, bottom up (no recursion, however deep); a text longer than
        `TEXT_LIMIT` characters is replaced by `cut` with the node's name."""
        written: dict[int, str] = {}
        for node in self.walk():
            text = write(node, [written[id(child)] for child in node.children])
            written[id(node)] = text if len(text) <= TEXT_LIMIT else cut.format(type(node).__name__)
        return written[id(self)]

    def _repr_latex_(self) -> str:
        return f"${self.latex()}$"

    def _latex(self, children: list[str]) -> str:
        """This node in LaTeX given its children's (the generic form: a leaf's name as a symbol, another node's
        name applied to its children)."""
        if not self.children:
            return sympy.latex(sympy.Symbol(repr(self)))
        return f"\\operatorname{{{type(self).__name__}}}({', '.join(children)})"

    def _degrees(self, signals: tuple[Signal, ...], degrees: Degrees) -> Profile:
        """The profile in `signals` (`interactions.degrees`): a product's, and by default any node's, is the sum of
        its children's (a leaf has degree 0)."""
        result = zero(len(signals))
        for child in self.children:
            result = plus(result, degrees.of(child, signals))
        return result


class Unary(Expr):
    """A node of one expression argument (children[0]) that keeps its self-interaction order."""

    def _degrees(self, signals: tuple[Signal, ...], degrees: Degrees) -> Profile:
        return degrees.of(self.children[0], signals)


class Signal(Expr):
    """A named input in `algebra`; constant (the unit g_0) along the factors listed in `units`.

    Its array has batch axes, then one axis per factor not in `units`.
    """

    def __init__(self, name: str, algebra: Algebra, units: Iterable[int] = ()) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"name: expected an identifier, got {name!r}")
        algebra = _as_algebra(algebra, "algebra")
        super().__init__(algebra, _check_units(algebra, units, "units"))
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def _degrees(self, signals: tuple[Signal, ...], degrees: Degrees) -> Profile:
        return frozenset({tuple(int(self is s) for s in signals)})

    def _symbolic(self, context: SymbolicContext) -> Element:
        return context.signal_element(self)

    def _lower(self, lowering: Lowering) -> Value:
        return lowering.input(self)


class Parameter(Expr):
    """A learnable element of `algebra` (constant along `units`), or a learnable array of a given shape.

    `support` restricts the element to some components of some factors, e.g. a convolution filter with
    three taps: ``support={0: (0, 1, 2)}``; the array then has one entry per supported component.

    >>> Parameter("W_Q", (4, 8)).shape
    (4, 8)
    >>> from product_interactions.algebra import translation
    >>> Parameter("k", translation(16), support={0: (0, 1, 2)}).shape
    (3,)
    """

    algebra: Algebra | None  # type: ignore[assignment]  # None for a shape parameter (an array)

    def __init__(self, name: str, algebra_or_shape: Algebra | Iterable[int], units: Iterable[int] = (),
                 support: Mapping[int, Iterable[int]] | None = None) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"name: expected an identifier, got {name!r}")
        self.name = name
        if isinstance(algebra_or_shape, Algebra):
            super().__init__(algebra_or_shape, _check_units(algebra_or_shape, units, "units"))
            self.array_shape = None
            self.support = self._check_support({} if support is None else support)
        else:
            shape = tuple(algebra_or_shape) if hasattr(algebra_or_shape, "__iter__") and getattr(
                algebra_or_shape, "ndim", 1) != 0 else None
            if not shape or not all(isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_))
                                    and n > 0 for n in shape):
                raise ValueError(f"algebra_or_shape: expected an Algebra or a shape of positive ints, "
                                 f"got {algebra_or_shape!r}")
            if support is not None or not isinstance(units, (list, tuple, set, frozenset, range)) or len(units):
                raise ValueError("support, units: only for parameters that are elements of an algebra")
            super().__init__(None)  # type: ignore[arg-type]  # a shape parameter is an array, in no algebra
            self.array_shape = tuple(int(n) for n in shape)

    def _check_support(self, support: Mapping[int, Iterable[int]]) -> dict[int, tuple[int, ...]]:
        if not isinstance(support, Mapping):
            raise TypeError(f"support: expected a mapping {{factor: component indices}}, got "
                            f"{type(support).__name__} {support!r:.60}")
        checked = {}
        for factor, components in support.items():
            factor = check_factor(self, factor, "support")
            dim = self.factors[factor].dim
            if isinstance(components, str) or not hasattr(components, "__iter__") or not all(
                    isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_)) for c in components):
                raise ValueError(f"support[{factor}]: expected a tuple of int component indices, got {components!r}")
            components = tuple(int(c) for c in components)
            if factor in self.units:
                raise ValueError(f"support, units: factor {factor} is in units (constant: the unit g_0), so support "
                                 f"cannot restrict its components")
            if not components or len(set(components)) != len(components) or not all(
                    0 <= c < dim for c in components):
                raise ValueError(f"support[{factor}]: expected distinct component indices in 0..{dim - 1} of a "
                                 f"factor the parameter varies along, got {components}")
            checked[factor] = tuple(sorted(components))
        return checked

    @property
    def shape(self) -> tuple[int, ...]:
        if self.algebra is None:
            return self.array_shape  # type: ignore[return-value]  # set with the algebra None
        return tuple(len(self.support.get(i, range(f.dim))) for i, f in enumerate(self.factors)
                     if i not in self.units)

    @property
    def factors(self) -> tuple[Algebra, ...]:
        if self.algebra is None:
            raise TypeError(f"{self.name}: a shape parameter is an array, not an element of an algebra")
        return super().factors

    def __repr__(self) -> str:
        return self.name

    def _symbolic(self, context: SymbolicContext) -> Element | np.ndarray:
        return context.parameter_value(self)

    def _lower(self, lowering: Lowering) -> Value | int:
        return lowering.input(self)


def check_expression(node: object, argument: str) -> Expr:
    """`node` if it is an expression with a value in an algebra, else a TypeError naming `argument`."""
    if not isinstance(node, Expr) or node.algebra is None:
        raise TypeError(f"{argument}: expected an expression with a value in an algebra, got {node!r}")
    return node


def _factor_hint(small: Expr, large: Expr, name: str) -> str:
    """When `small`'s algebra is one factor of `large`'s tensor product, how to write `small` over the whole."""
    factors = large.factors
    if len(factors) < 2 or small.algebra not in factors:
        return ""
    place = factors.index(small.algebra)
    others = [f for f in range(len(factors)) if f != place]
    return (f"; hint: {name} = {small!r:.40} is in {small.algebra.name}, factor {place} of {large.algebra.name}: "
            f"build it over {large.algebra.name} with units={others} (constant along the other factors), e.g. "
            f"Parameter(name, tensor_product(...), units={others})")


class _Binary(Expr):
    """Two expressions in the same algebra; constant along the factors where both are."""

    mismatch = "cannot combine an element of {} with one of {}"

    #: How the operation is written between its operands in messages.
    symbol = ","

    def __init__(self, K: Expr, X: Expr) -> None:
        K, X = check_expression(K, "K"), check_expression(X, "X")
        if K.algebra != X.algebra:
            raise ValueError(f"K, X: {self.mismatch.format(K.algebra.name, X.algebra.name)} (in {K!r:.40} "
                             f"{self.symbol} {X!r:.40}){_factor_hint(K, X, 'K')}{_factor_hint(X, K, 'X')}")
        super().__init__(K.algebra, K.units & X.units)
        self.children = (K, X)


class Mul(_Binary):
    """The algebra product K X, factor by factor on a tensor product.

    Where one side is constant (g_0) along a factor the product there is the other side (g_0 is the unit).
    """

    mismatch = "cannot multiply an element of {} by one of {}"
    symbol = "*"

    def _latex(self, children: list[str]) -> str:
        return "\\,".join(f"({c})" if isinstance(child, Add) else c for c, child in zip(children, self.children))

    def _symbolic(self, context: SymbolicContext) -> Element:
        K, X = (context.value(child) for child in self.children)
        return K * X

    def _lower(self, lowering: Lowering) -> Value:
        K, X = (lowering.value(child) for child in self.children)
        return lowering.builder.multiply(K, X, self.factors)


class Add(_Binary):
    """K + X (a factor where only one side is constant is expanded)."""

    mismatch = "cannot add an element of {} to one of {}"
    symbol = "+"

    def _latex(self, children: list[str]) -> str:
        return " + ".join(children)

    def _degrees(self, signals: tuple[Signal, ...], degrees: Degrees) -> Profile:
        return pareto(v for child in self.children for v in degrees.of(child, signals))

    def _symbolic(self, context: SymbolicContext) -> Element:
        K, X = (context.value(child) for child in self.children)
        return K + X

    def _lower(self, lowering: Lowering) -> Value:
        K, X = (lowering.value(child) for child in self.children)
        return lowering.builder.add(K, X, self.units)


class Linear(Expr):
    """A linear map W on one factor, or on several adjacent factors taken together.

    `factor` is an index or a tuple of adjacent indices; they are replaced by the factors of `into` (an algebra
    or a tensor product; default: the same factor, for a square map).  W is a matrix Parameter of shape
    (dim of into, product of the source dims), read row-major as (into dims..., source dims...).

    >>> from product_interactions.algebra import position, diagonal, tensor_product
    >>> X = Signal("x", tensor_product(position(5), diagonal(8)))
    >>> heads = tensor_product(diagonal(2), diagonal(4))
    >>> Linear(Parameter("W_Q", (8, 8)), X, into=heads).algebra.shape
    (5, 2, 4)
    """

    def __init__(self, W: Parameter, X: Expr, factor: int | tuple[int, ...] = -1,
                 into: Algebra | None = None) -> None:
        X = check_expression(X, "X")
        sources = tuple(sorted(check_factor(X, f) for f in (factor if isinstance(factor, tuple) else (factor,))))
        if not sources or sources != tuple(range(sources[0], sources[0] + len(sources))):
            raise ValueError(f"factor: expected one factor index or a tuple of adjacent ones, got {factor!r}")
        if not isinstance(W, Parameter) or W.array_shape is None or len(W.array_shape) != 2:
            raise TypeError(f"W: expected a matrix Parameter(name, (d_out, d_in)), got {W!r}")
        source_factors = [X.factors[f] for f in sources]
        if into is None and len(sources) > 1:
            raise ValueError("into: a map on several factors needs the algebra it maps into")
        targets = list(_as_algebra(into, "into").factors) if into is not None else source_factors
        self.source_dims = tuple(f.dim for f in source_factors)
        self.target_dims = tuple(f.dim for f in targets)
        expected = (int(np.prod(self.target_dims)), int(np.prod(self.source_dims)))
        if W.array_shape != expected:
            raise ValueError(f"W: expected shape {expected} to map factor(s) {list(sources)} "
                             f"({' ⊗ '.join(f.name for f in source_factors)}) into "
                             f"{' ⊗ '.join(f.name for f in targets)}, got {W.array_shape}")
        first, last, grow = sources[0], sources[-1], len(targets) - len(sources)
        factors = list(X.factors[:first]) + targets + list(X.factors[last + 1:])
        units = {u if u < first else u + grow for u in X.units if u not in sources}
        super().__init__(tensor_product(*factors), units)
        self.children, self.sources, self.targets = (W, X), sources, tuple(targets)

    def _describe(self) -> str:
        return f"Linear[factors {list(self.sources)}]"

    def _latex(self, children: list[str]) -> str:
        return f"{children[0]}\\,({children[1]})"

    def _symbolic(self, context: SymbolicContext) -> Element:
        W, X = (context.value(child) for child in self.children)
        W = np.asarray(W, dtype=object).reshape(self.target_dims + self.source_dims)
        first, k = self.sources[0], len(self.sources)
        moved = np.moveaxis(X.coefficients, self.sources, range(X.coefficients.ndim - k, X.coefficients.ndim))
        mapped = np.tensordot(moved, W, axes=(list(range(moved.ndim - k, moved.ndim)),
                                                list(range(len(self.target_dims), W.ndim))))
        targets = range(mapped.ndim - len(self.target_dims), mapped.ndim)
        return Element(self.algebra, np.moveaxis(mapped, targets, range(first, first + len(self.target_dims))))

    def _lower(self, lowering: Lowering) -> Value:
        W, X = (lowering.value(child) for child in self.children)
        return lowering.builder.linear(W, X, self.sources, self.source_dims, self.targets)


class Scale(Unary):
    """c X for an exact constant c (e.g. 1/sqrt(d) in attention scores).

    >>> from product_interactions.algebra import position
    >>> Scale(Signal("x", position(2)), 3).formula()
    array([3*x_{0}, 3*x_{1}], dtype=object)
    """

    def __init__(self, X: Expr, c: ExactLike) -> None:
        X = check_expression(X, "X")
        self.c = to_exact(c, "c")
        if self.c.free_symbols:
            raise ValueError(f"c: expected a number, got {self.c}")
        super().__init__(X.algebra, X.units)
        self.children = (X,)

    def _describe(self) -> str:
        return f"Scale[{self.c}]"

    def _latex(self, children: list[str]) -> str:
        return f"{sympy.latex(self.c)}\\,({children[0]})"

    def _symbolic(self, context: SymbolicContext) -> Element:
        return self.c * context.value(self.children[0])

    def _lower(self, lowering: Lowering) -> Value:
        return lowering.builder.scale(lowering.value(self.children[0]), float(self.c))


def multiplication_operator(K: Expr, L1: Callable[[Expr], Expr] | None = None,
                            L2: Callable[[Expr], Expr] | None = None) -> Callable[[Expr], Expr]:
    """O_K = L1(K L2(.)) as a function of X; L1 and L2 are callables on expressions (default: identity).

    >>> from product_interactions.algebra import position
    >>> X, K = Signal("x", position(3)), Parameter("k", position(3))
    >>> multiplication_operator(K)(X)
    Mul(k, x)
    """
    check_expression(K, "K")
    first = (lambda e: e) if L1 is None else L1
    second = (lambda e: e) if L2 is None else L2
    for argument, value in (("L1", first), ("L2", second)):
        if not callable(value):
            raise TypeError(f"{argument}: expected a callable on expressions, got {type(value).__name__}")

    def operator(X: Expr) -> Expr:
        return check_expression(first(Mul(K, check_expression(second(X), "L2"))), "L1")
    return operator


def symbol_array(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """An object array of real sympy symbols name_{i_j...} (used for generic signals and parameters)."""
    array = np.empty(shape, dtype=object)
    for index in np.ndindex(*shape):
        array[index] = sympy.Symbol(f"{name}_{{{','.join(map(str, index))}}}", real=True)
    return array
