"""`expression_model`: one's own expression as a `Model`, without subclassing.

It gives what every built-in architecture has: parameters read off the expression, ``init`` by fan-in (``scales``
overrides it by name), ``apply`` on numpy, torch and JAX, ``to_torch()``, ``order()``, ``formula()``,
``explain()`` and rich display.  Two ways in:

* ``expression_model(expr)``: the expression and its one input `Signal`, compiled once.  Its plan serves every size
  of the position factors that no constant depends on (``explain()`` lists them); along the others the input must
  have the size the expression was built at.
* ``expression_model(build, geometry=(n, ...))``: ``build(*geometry)`` returns ``(expr, signal)`` and is called
  for the inspected geometry, then for each input geometry that no kept plan serves.  The geometry is read off
  the input: entry i is the size of the signal's axes that grow with it (found by building at the geometry and at
  one more along each entry), unless ``geometry_of(x)`` is given.  A parameter must not change shape with the
  geometry: make it constant along the position factors (``units``).

>>> import numpy as np
>>> from product_interactions.algebra import complex_numbers, position, tensor_product
>>> from product_interactions.interactions import Parameter, Signal
>>> def build(n):
...     A = tensor_product(position(n), complex_numbers())
...     X = Signal("x", A)
...     return Parameter("k", A, units=[0]) * X, X            # the same k at every position
>>> model = expression_model(build, geometry=(3,), name="Rotate")
>>> model
<Rotate: 1 parameters (2 numbers), input x in position(3) ⊗ complex_numbers at geometry (3,), order 1>
>>> model.apply({"k": np.array([0., 1.])}, np.array([[[1., 2.], [3., 4.]]]))     # i z at 2 positions
array([[[-2.,  1.],
        [-4.,  3.]]])
>>> expression_model(build(3)[0]).apply({"k": np.array([0., 1.])}, np.ones((1, 5, 2)))[0, 0]   # any length
array([-1.,  1.])
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...algebra.algebra import check_count
from ..expression import Expr, Parameter, Signal, check_expression
from ..scan import Placeholder
from .model import Model, check_positive

#: What `build` returns: the expression and its input signal.
Built = tuple[Expr, Signal]


def input_signals(expr: Expr) -> list[Signal]:
    """The user inputs of an expression (its signals, placeholders of scans left out), each once."""
    return [node for node in expr.walk() if isinstance(node, Signal) and not isinstance(node, Placeholder)]


def parameter_shapes(expr: Expr) -> dict[str, tuple[int, ...]]:
    """Parameter name -> array shape, read off the expression."""
    return {node.name: node.shape for node in expr.walk() if isinstance(node, Parameter)}


def check_built(value: object, geometry: tuple[int, ...]) -> Built:
    """What ``build(*geometry)`` returned, when it is an expression and the one Signal it is built on, else a
    TypeError or ValueError naming `build` with what came and the fix."""
    call = f"build({', '.join(map(str, geometry))})"
    if not isinstance(value, tuple) or len(value) != 2:
        raise TypeError(f"build: expected {call} to return (expression, its input Signal), got "
                        f"{type(value).__name__} {value!r:.60}")
    expr, signal = value
    if not isinstance(expr, Expr) or not isinstance(signal, Signal):
        raise TypeError(f"build: expected {call} to return (expression, its input Signal), got "
                        f"({type(expr).__name__}, {type(signal).__name__}); return expr, X")
    check_expression(expr, "build")
    signals = input_signals(expr)
    if len(signals) != 1:
        raise ValueError(f"build: the expression of {call} has input signals {[s.name for s in signals]}; a model "
                         f"takes one")
    if signals[0] is not signal:
        same = "a different Signal of the same name" if signals[0].name == signal.name else f"{signal.name!r}"
        raise ValueError(f"build: {call} returned {same}, but the expression is built on the signal "
                         f"{signals[0].name!r} in {signals[0].algebra.name}; return the Signal the expression "
                         f"multiplies")
    return expr, signal


class ExpressionModel(Model):
    """A `Model` whose expression comes from `build` (see the module docstring and `expression_model`)."""

    def __init__(self, build: Callable[..., Built], geometry: tuple[int, ...], name: str,
                 scales: Mapping[str, float] | None, geometry_of: Callable[[Any], tuple[int, ...]] | None,
                 fixed: bool) -> None:
        super().__init__()
        self._build, self._geometry_of, self.fixed, self.geometry = build, geometry_of, fixed, geometry
        self._name: str = name
        self._shapes: dict[str, tuple[int, ...]] | None = None
        expr, signal = self._built()
        self._shapes = parameter_shapes(expr)
        self.scales = self._check_scales(scales)
        self._axes = {} if fixed or geometry_of is not None else self._geometry_axes(signal)

    @property
    def name(self) -> str:
        return self._name

    def _check_scales(self, scales: Mapping[str, float] | None) -> dict[str, float]:
        if scales is None:
            return {}
        if not isinstance(scales, Mapping):
            raise TypeError(f"scales: expected a dict parameter name -> standard deviation, got "
                            f"{type(scales).__name__}")
        unknown = sorted(set(scales) - set(self.parameters))
        if unknown:
            raise ValueError(f"scales: unknown parameter(s) {unknown} (the parameters: {sorted(self.parameters)})")
        return {name: check_positive(value, f"scales[{name!r}]") for name, value in scales.items()}

    # ------------------------------------------------------------------ expression
    def build(self, geometry: tuple[int, ...]) -> Built:
        """``build(*geometry)``, checked: the expression, its one input signal, and the model's parameters."""
        expr, signal = check_built(self._build(*geometry), geometry)
        shapes = parameter_shapes(expr)
        if self._shapes is not None and shapes != self._shapes:
            changed = sorted(name for name in set(shapes) | set(self._shapes)
                             if shapes.get(name) != self._shapes.get(name))
            name = changed[0]
            raise ValueError(f"build: parameter {name!r} has shape {self._shapes.get(name, 'none')} at geometry "
                             f"{self.geometry} but {shapes.get(name, 'none')} at {geometry}; a learned parameter "
                             f"must be the same at every length: make it constant along the position factors "
                             f"(Parameter(name, algebra, units=[...]))")
        return expr, signal

    def _geometry_axes(self, signal: Signal) -> dict[int, list[int]]:
        """For each geometry entry, the axes of the signal's array whose size it is (building at one more)."""
        axes = {}
        for entry, n in enumerate(self.geometry):
            grown = self.geometry[:entry] + (n + 1,) + self.geometry[entry + 1:]
            other = self.build(grown)[1].shape
            changed = [a for a, (m, k) in enumerate(zip(signal.shape, other)) if m != k]
            if len(other) != len(signal.shape) or not changed or any(
                    signal.shape[a] != n or other[a] != n + 1 for a in changed):
                raise ValueError(f"build: the signal has shape {signal.shape} at geometry {self.geometry} and "
                                 f"{other} at {grown}; geometry[{entry}] must be the size of the axes it grows "
                                 f"(build(*geometry) builds at that length), or give geometry_of")
            axes[entry] = changed
        return axes

    def geometry_of(self, x: Any) -> tuple[int, ...]:
        """The geometry of an input (see the module docstring), or a ValueError naming `x` with the shape
        expected."""
        if self._geometry_of is not None:
            return tuple(self._geometry_of(x))
        shape, own = tuple(np.shape(x)), self.signal.shape
        found = shape[len(shape) - len(own):] if len(shape) >= len(own) else None
        if self.fixed:
            expected = self._fixed_sizes()
            if found is None or any(e is not None and e != f for e, f in zip(expected, found)):
                text = ", ".join("n" if e is None else str(e) for e in expected)
                raise ValueError(f"x: expected shape (..., {text}), got {shape}; the expression was built at these "
                                 f"sizes{' (n: any)' if None in expected else ''}: to serve others, build it from a "
                                 f"function of the length, expression_model(build, geometry=...)")
            return ()
        geometry = tuple(found[axes[0]] for axes in self._axes.values()) if found is not None else ()
        wanted: list[int | str] = list(own)
        for entry, axes in self._axes.items():
            for a in axes:
                wanted[a] = f"n{entry}" if len(self.geometry) > 1 else "n"
        if found is None or any(found[a] != geometry[entry] for entry, axes in self._axes.items() for a in axes) \
                or any(isinstance(e, int) and e != f for e, f in zip(wanted, found)):
            raise ValueError(f"x: expected shape (..., {', '.join(map(str, wanted))}), got {shape}")
        return geometry

    def _fixed_sizes(self) -> list[int | None]:
        """Per axis of the signal's array, its size when the plan pins it, else None (any size)."""
        axes: tuple[Any, ...] = self.plan().signals[self.signal.name].axes          # Dims, or ints
        return [None if getattr(axis, "parametric", False) else int(getattr(axis, "size", axis)) for axis in axes]


def expression_model(build: Expr | Callable[..., Built], signal: Signal | None = None, *,
                     geometry: tuple[int, ...] | None = None, name: str = "ExpressionModel",
                     scales: Mapping[str, float] | None = None,
                     geometry_of: Callable[[Any], tuple[int, ...]] | None = None) -> ExpressionModel:
    """A `Model` from an expression (with its input `signal`, found when omitted) or from a function of the geometry
    (`build`, with the `geometry` to inspect it at); `scales` maps parameter names to the standard deviation of
    their initialisation (default 1 / sqrt(fan-in)).  See the module docstring."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name: expected an identifier such as 'MyLayer', got {name!r:.60}")
    if isinstance(build, Expr):
        if geometry is not None or geometry_of is not None:
            raise ValueError("geometry, geometry_of: only for a function of the geometry; an expression is built "
                             "at its own sizes")
        expr = check_expression(build, "build")
        signals = input_signals(expr)
        if len(signals) != 1:
            raise ValueError(f"build: the expression has input signals {[s.name for s in signals]}; a model takes "
                             f"one")
        if signal is not None and signal is not signals[0]:
            raise ValueError(f"signal: expected the Signal the expression is built on ({signals[0].name!r} in "
                             f"{signals[0].algebra.name}), got {signal!r:.60}; leave it out to use that one")
        return ExpressionModel(lambda: (expr, signals[0]), (), name, scales, None, fixed=True)
    if not callable(build):
        raise TypeError(f"build: expected an expression or a function of the geometry returning (expr, signal), "
                        f"got {type(build).__name__}")
    if signal is not None:
        raise ValueError("signal: a function of the geometry returns its signal with the expression")
    if geometry is None or isinstance(geometry, (str, bytes)) or not hasattr(geometry, "__iter__"):
        raise TypeError(f"geometry: expected the sizes to inspect build at, e.g. geometry=(4,) for build(n), got "
                        f"{geometry!r:.60}")
    geometry = tuple(check_count(n, f"geometry[{i}]") for i, n in enumerate(geometry))
    try:
        inspect.signature(build).bind(*geometry)
    except TypeError as error:
        raise TypeError(f"geometry: build is called as build(*geometry) with {len(geometry)} argument(s), which it "
                        f"does not take ({error})") from None
    except ValueError:                                           # a builtin without a signature: called as it is
        pass
    if geometry_of is not None and not callable(geometry_of):
        raise TypeError(f"geometry_of: expected a function of the input returning its geometry, got "
                        f"{type(geometry_of).__name__}")
    return ExpressionModel(build, geometry, name, scales, geometry_of, fixed=False)
