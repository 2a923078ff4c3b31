"""`compile(expr)`: an expression lowered into a `kernels.plans.plan.Plan`, node by node, once.

Each node lowers itself (its ``_lower``) through the public builder API of `kernels` (`kernels.plans.builder`), so the
plan is built when the expression is compiled, never per call; `Plan.explain()` prints it.  Inputs: a signal's
array has batch axes, then one axis per factor it varies along (``signal.shape``); a parameter's array has
exactly its ``shape``.  The output has batch axes, then ``expr.shape``.

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

from collections.abc import Mapping
from typing import Any

from ..kernels.plans import PlanBuilder, Value
from ..kernels import Plan
from .expression import Expr, Parameter, Signal, check_expression
from .scan import Placeholder


class Lowering:
    """The lowered value of every node of one expression (each node lowered once), and the builder they go to;
    a scan's body gets a child with its placeholders bound."""

    def __init__(self, builder: PlanBuilder, root: Lowering | None = None,
                 bindings: Mapping[Expr, Value] | None = None) -> None:
        self.builder, self._root = builder, root or self
        self._values: dict[int, Any] = {id(node): value for node, value in (bindings or {}).items()}
        self._inputs: dict[str, Any] | None = {} if root is None else None   # the root's: one per input name

    def child(self, builder: PlanBuilder, bindings: Mapping[Expr, Value]) -> Lowering:
        """A lowering for an enclosed body (a Scan step) with placeholders bound to values."""
        return Lowering(builder, self._root, bindings)

    def value(self, node: Expr) -> Any:
        """The node's lowered value (a `kernels.plans.builder.Value`, or a register for a matrix parameter)."""
        if id(node) not in self._values:
            if isinstance(node, Placeholder):
                raise ValueError(f"{node.name}: a placeholder used outside the node that binds it")
            self._values[id(node)] = node._lower(self)
        return self._values[id(node)]

    def input(self, node: Signal | Parameter) -> Any:
        """The value of a signal or parameter, declared once per name in the whole plan."""
        inputs: dict[str, Any] = self._root._inputs  # type: ignore[assignment]  # the root has its inputs
        if node.name not in inputs:
            builder = self._root.builder
            if isinstance(node, Signal):
                inputs[node.name] = builder.signal(node.name, node.factors, node.units, node.support,
                                                   f" (batch axes, then one axis per factor of {node.algebra.name} "
                                                   f"that is not constant)")
            elif node.algebra is None:
                inputs[node.name] = builder.matrix(node.name, node.array_shape)
            else:
                inputs[node.name] = builder.parameter(node.name, node.factors, node.units, node.support)
        return inputs[node.name]


def _check_names(expr: Expr) -> None:
    nodes = expr.walk()
    for kind in (Signal, Parameter):
        table: dict[str, Expr] = {}
        for node in nodes:
            if isinstance(node, Placeholder) or not isinstance(node, kind):
                continue
            if table.setdefault(node.name, node) is not node:
                raise ValueError(f"expr: two different {kind.__name__.lower()}s are named {node.name!r}")


def compile(expr: Expr, strategy: str = "auto") -> Plan:
    """Compile an expression to a `kernels.plans.plan.Plan` (see the module docstring); `strategy` forces one lowering
    strategy on every product factor it applies to ("auto": the cheapest by the cost model)."""
    check_expression(expr, "expr")
    _check_names(expr)
    builder = PlanBuilder(strategy=strategy)
    value = Lowering(builder).value(expr)
    return builder.finish(value, expr.factors, expr.units, name=repr(expr)[:80])
