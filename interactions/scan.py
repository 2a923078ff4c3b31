"""Scan: a recurrence over a position (time) factor, H(t) = step(H(t-1), X(t)).

`step` is a function of two placeholder expressions, the previous state ``h`` (in `state`) and the input at one
time ``x_t`` (X without its time factor), returning the new state: SSMs, Mamba and Seq2Tens are scans.  The scan's
value is the sequence of states (the time factor followed by the state's factors), or only the last state.

Its self-interaction order is the step's order in x_t with the state counted as order 0: the order of what one
step adds (the paper's convention: an SSM is order 1, Mamba order 3); ``order(..., per_step=False)`` unrolls
the recurrence instead.

>>> import numpy as np
>>> from product_interactions.algebra import position, diagonal, tensor_product
>>> from product_interactions.interactions import Signal, Parameter, Scan
>>> X = Signal("x", tensor_product(position(4), diagonal(2)))
>>> decay = Parameter("a", diagonal(2))
>>> H = Scan(lambda h, x_t: decay * h + x_t, X, state=diagonal(2))     # h_t = a h_{t-1} + x_t
>>> H.compile()(np.ones((1, 4, 2)), {"a": np.array([0.5, 1.0])})[0, :, 0]
array([1.   , 1.5  , 1.75 , 1.875])
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..algebra import Algebra, Element, tensor_product
from ..algebra.algebra import check_flag

from .degrees import Degrees, Profile, pareto, plus, power, zero
from .expression import Expr, Signal, check_factor, check_expression

if TYPE_CHECKING:
    from ..kernels.plans import Value
    from .compiler import Lowering
    from .formulas import SymbolicContext


class Placeholder(Signal):
    """A signal bound by an enclosing node (a Scan's state or current input), not a user input."""

    def _symbolic(self, context: SymbolicContext) -> Element:
        return context.signal_element(self)          # only reached when unbound: a generic element


class Scan(Expr):
    """H(t) = step(H(t-1), X(t)) along factor `time` of X; H(-1) = `initial` (default 0).

    `state` is the state's algebra; `initial` an expression in it without signals (e.g. a Parameter).  Its
    `order` counts per step (what one step adds, the state as order 0); ``order(H, X, per_step=False)`` is the
    total degree in the whole sequence.
    """

    def __init__(self, step: Callable[[Placeholder, Placeholder], Expr], X: Expr, state: Algebra, time: int = 0,
                 initial: Expr | None = None, return_sequences: bool = True) -> None:
        X = check_expression(X, "X")
        if not isinstance(state, Algebra):
            raise TypeError(f"state: expected an Algebra, got {type(state).__name__}")
        time = check_factor(X, time, "time")
        if time in X.units:
            raise ValueError(f"time: X is constant along factor {time}; scan a factor it varies along")
        if not callable(step):
            raise TypeError(f"step: expected a callable step(h, x_t) -> expression, got {type(step).__name__}")
        return_sequences = check_flag(return_sequences, "return_sequences")
        rest = [f for i, f in enumerate(X.factors) if i != time]
        if not rest:
            raise ValueError(f"X: expected a factor besides the time factor {time} (the input at one time), got "
                             f"{X.algebra.name}")
        self.h = Placeholder("h", state)
        self.x_t = Placeholder("x_t", tensor_product(*rest),
                               units=[u - (u > time) for u in X.units])
        body = step(self.h, self.x_t)
        if not isinstance(body, Expr) or body.algebra != state or body.units:
            raise ValueError(f"step: expected an expression in {state.name} varying along every factor, got "
                             f"{body!r}")
        if initial is not None and (not isinstance(initial, Expr) or initial.algebra != state or any(
                isinstance(n, Signal) for n in initial.walk())):
            raise ValueError(f"initial: expected an expression in {state.name} without signals, got {initial!r}")
        self.time, self.length, self.return_sequences = time, X.factors[time].dim, return_sequences
        algebra = tensor_product(X.factors[time], *state.factors) if self.return_sequences else state
        super().__init__(algebra)
        self.body, self.initial = body, initial
        self.children = (X, body) + ((initial,) if initial is not None else ())

    def _describe(self) -> str:
        return f"Scan[time {self.time}]"

    def _degrees(self, signals: tuple[Signal, ...], degrees: Degrees) -> Profile:
        """A step's monomial h^i x_t^j v adds j copies of the input's degrees and v's own; per step the state counts
        as a constant, unrolled it adds i copies of the previous state's degrees, step after step."""
        width = len(signals)
        inputs = degrees.of(self.children[0], signals)
        steps = degrees.of(self.body, (self.h, self.x_t) + signals)
        if degrees.per_step:
            return pareto(v for _, j, *own in steps for v in plus(power(inputs, j, width), frozenset({tuple(own)})))
        state = degrees.of(self.initial, signals) if self.initial is not None else zero(width)
        seen: set[tuple[int, ...]] = set()
        for _ in range(self.length):
            state = pareto(v for i, j, *own in steps
                           for v in plus(plus(power(state, i, width), power(inputs, j, width)), frozenset({tuple(own)})))
            seen |= state
        return pareto(seen) if self.return_sequences else state

    def _symbolic(self, context: SymbolicContext) -> Element:
        X = context.value(self.children[0]).coefficients
        h = context.value(self.initial) if self.initial is not None else self.h.algebra.zero()
        states = []
        for t in range(self.length):
            inner = context.child({self.h: h, self.x_t: Element(self.x_t.algebra, np.take(X, t, axis=self.time))})
            h = inner.value(self.body)
            states.append(h.coefficients)
        return Element(self.algebra, np.stack(states) if self.return_sequences else states[-1])

    def _lower(self, lowering: Lowering) -> Value:
        builder = lowering.builder
        X = lowering.value(self.children[0])
        initial = lowering.value(self.initial) if self.initial is not None else None
        body = builder.body()
        h = body.placeholder(self.h.factors)
        x_t = body.placeholder(self.x_t.factors, self.x_t.units)
        result = lowering.child(body, {self.h: h, self.x_t: x_t}).value(self.body)
        return builder.scan(X, self.time, initial, body, h, x_t, result, self.x_t.units, self.h.factors,
                            self.return_sequences)
