"""`compile(expr)`: an expression of `interactions` as a numeric callable on arrays.

Each node lowers itself onto a `kernels.fused.Fused` value: products, flips, reductions, projections and
linear maps extend one lazy contraction, and only nonlinearities and the output evaluate it, each with one
opt_einsum call.  Arrays may be numpy or autograd arrays, so ``autograd.grad`` flows through.

Inputs: a signal's array has batch axes, then one axis per factor it varies along (``signal.shape``); a
parameter's array has exactly its ``shape``.  The output has batch axes, then ``expr.shape``.

>>> import numpy as np
>>> from product_interactions.algebra import complex_numbers
>>> from product_interactions.interactions import Signal, Parameter
>>> C = complex_numbers()
>>> X, K = Signal("x", C), Parameter("k", C)
>>> f = compile(K * X)
>>> f(np.array([[1., 2.]]), {"k": np.array([0., 1.])})      # i * (1 + 2i) = -2 + i
array([[-2.,  1.]])
"""
from __future__ import annotations

import autograd.numpy as anp
import numpy as np

from .factor import Factor
from .fused import Fused, Labels, multiply


def _is_array(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


class NumericContext:
    """The lowered value of every node of one evaluation (each node lowered once)."""

    def __init__(self, signals: dict, parameters: dict, labels: Labels | None = None, bindings=None):
        self.labels = labels or Labels()
        self._signals, self._parameters, self._lowered = signals, parameters, {}
        self._bindings = bindings or {}

    def child(self, bindings: dict) -> "NumericContext":
        """A context for an enclosed body (a Scan step) with placeholders bound to arrays."""
        return NumericContext(self._signals, self._parameters, self.labels, {id(k): v for k, v in bindings.items()})

    def bound(self, placeholder):
        try:
            return self._bindings[id(placeholder)]
        except KeyError:
            raise ValueError(f"{placeholder.name}: a placeholder used outside the node that binds it") from None

    def full_array(self, node, units=frozenset()):
        """The node's value as an array with batch axes and one full axis per factor not in `units`."""
        return _scatter(self.lowered(node), node, units)

    def lowered(self, node) -> Fused:
        if id(node) not in self._lowered:
            self._lowered[id(node)] = node._lower(self)
        return self._lowered[id(node)]

    def signal_array(self, signal):
        return self._signals[signal.name]

    def parameter_array(self, parameter):
        return self._parameters[parameter.name]

    def leaf(self, node, array, batched: bool) -> Fused:
        if node.algebra is None:                     # a plain array parameter: its own labels
            return Fused([(array, "".join(self.labels.new() for _ in np.shape(array)), False, False)], (), ())
        out = [None if f in node.units else self.labels.new() for f in range(len(node.factors))]
        support = [None if f in node.units else node.support.get(f, range(factor.dim))
                   for f, factor in enumerate(node.factors)]
        return Fused.leaf(array, out, support, batched=batched)

    def multiply(self, K: Fused, X: Fused, algebras) -> Fused:
        return multiply(K, X, [Factor.from_algebra(a) for a in algebras], self.labels)

    def linear(self, W: Fused, X: Fused, sources, source_dims, target_dims) -> Fused:
        """W, read as (target dims..., source dims...), applied to the source factors, which it replaces."""
        for factor, dim in zip(sources, source_dims):
            X = X.labelled(factor, dim, self.labels)
        (matrix, _, _, _), = W.operands
        block = anp.reshape(matrix, tuple(target_dims) + tuple(source_dims))
        for axis, factor in enumerate(sources):
            support = list(X.support[factor])
            if len(support) != source_dims[axis]:
                block = anp.take(block, support, axis=len(target_dims) + axis)
        new = [self.labels.new() for _ in target_dims]
        operand = (block, "".join(new) + "".join(X.out[f] for f in sources), False, False)
        first, last = sources[0], sources[-1]
        out = X.out[:first] + tuple(new) + X.out[last + 1:]
        support = X.support[:first] + tuple(tuple(range(d)) for d in target_dims) + X.support[last + 1:]
        return Fused(X.operands + [operand], out, support)

    def apply(self, value: Fused, function) -> Fused:
        """Evaluate `value` and apply an elementwise (or axis-wise) function to its array."""
        evaluated = value.materialised(self.labels)
        (array, labels, batched, _), = evaluated.operands
        return Fused([(function(array), labels, batched, False)], evaluated.out, evaluated.support)


class Compiled:
    """A compiled expression: ``compiled(inputs, parameters)`` (see the module docstring)."""

    def __init__(self, expr):
        self.expr = expr
        from ..interactions.expression import Expr, Parameter, Signal
        from ..interactions.scan import Placeholder
        if not isinstance(expr, Expr) or expr.algebra is None:
            raise TypeError(f"expr: expected an expression with a value in an algebra, got {expr!r}")
        nodes = expr.walk()
        self.signals, self.parameters = {}, {}
        for kind, table in ((Signal, self.signals), (Parameter, self.parameters)):
            for node in nodes:
                if isinstance(node, Placeholder) or not isinstance(node, kind):
                    continue
                if table.setdefault(node.name, node) is not node:
                    raise ValueError(f"expr: two different {kind.__name__.lower()}s are named {node.name!r}")

    def _check_inputs(self, inputs) -> dict:
        if _is_array(inputs) or isinstance(inputs, (list, tuple)):
            if len(self.signals) != 1:
                raise ValueError(f"inputs: the expression has signals {sorted(self.signals)}; pass a dict")
            inputs = {next(iter(self.signals)): inputs}
        if not isinstance(inputs, dict):
            raise TypeError(f"inputs: expected an array or a dict of arrays, got {type(inputs).__name__}")
        missing = sorted(set(self.signals) - set(inputs))
        if missing:
            raise ValueError(f"inputs: missing signal(s) {missing}")
        checked = {}
        for name, signal in self.signals.items():
            array = inputs[name] if _is_array(inputs[name]) else np.asarray(inputs[name], dtype=float)
            shape, expected = tuple(np.shape(array)), signal.shape
            if len(shape) < len(expected) or shape[len(shape) - len(expected):] != expected:
                raise ValueError(f"inputs[{name!r}]: expected shape (..., {', '.join(map(str, expected))}) "
                                 f"(batch axes, then one axis per factor of {signal.algebra.name} that is not "
                                 f"constant), got {shape}")
            _check_real(array, f"inputs[{name!r}]")
            checked[name] = array
        return checked

    def _check_parameters(self, parameters) -> dict:
        if not (hasattr(parameters, "keys") and hasattr(parameters, "__getitem__")):   # dicts, autograd DictBox
            raise TypeError(f"parameters: expected a dict name -> array, got {type(parameters).__name__}")
        missing = sorted(set(self.parameters) - set(parameters.keys()))
        if missing:
            raise ValueError(f"parameters: missing {missing} (expected shapes "
                             f"{ {n: self.parameters[n].shape for n in missing} })")
        checked = {}
        for name, parameter in self.parameters.items():
            array = parameters[name] if _is_array(parameters[name]) else np.asarray(parameters[name], dtype=float)
            if tuple(np.shape(array)) != parameter.shape:
                raise ValueError(f"parameters[{name!r}]: expected shape {parameter.shape}, got {np.shape(array)}")
            _check_real(array, f"parameters[{name!r}]")
            checked[name] = array
        return checked

    def __call__(self, inputs, parameters=None):
        context = NumericContext(self._check_inputs(inputs), self._check_parameters(parameters or {}))
        value = context.lowered(self.expr)
        return _scatter(value, self.expr)


def _check_real(array, argument: str):
    dtype = getattr(array, "dtype", None)
    if dtype is not None and not np.issubdtype(dtype, np.floating) and dtype != object:
        raise TypeError(f"{argument}: expected a real floating-point array, got dtype {dtype}")


def _scatter(value: Fused, expr, units=None):
    """Evaluate; place supported components into full factor axes (zeros elsewhere) and repeat the value along
    constant factors that are not in `units` (default: the expression's own constant factors)."""
    units = expr.units if units is None else units
    array = value.evaluate()
    present = [f for f in range(len(expr.factors)) if value.out[f] is not None]
    batch = np.ndim(array) - len(present)
    for factor in range(len(expr.factors)):
        if factor in units:
            continue
        dim, axis = expr.factors[factor].dim, batch + sum(1 for f in present if f < factor)
        if value.out[factor] is None:
            array = anp.repeat(anp.expand_dims(array, axis), dim, axis=axis)
            present = sorted(present + [factor])
            continue
        support = list(value.support[factor])
        if support != list(range(dim)):
            scatter = np.zeros((len(support), dim), dtype=array.dtype)
            scatter[np.arange(len(support)), support] = 1
            array = anp.moveaxis(anp.tensordot(array, scatter, axes=([axis], [0])), -1, axis)
    return array


def compile(expr, **options):
    """Compile an expression to a `Compiled` callable (see the module docstring)."""
    if options:
        raise TypeError(f"compile: unexpected options {sorted(options)}")
    return Compiled(expr)
