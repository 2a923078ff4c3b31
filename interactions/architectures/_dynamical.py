"""The simplified-algebra dynamical layer (the paper's Section 5.1), with a selectable (I, H) order grid.

    H(s) - H(s-1) = O_K(W(H(s-1))) + I(s),      Y(s) = O_{X(s)}(H(s))

on the feature algebra A = diagonal(d) alone: the state has d components per token, not Mamba's d * d_state.
Products in A are elementwise; learnable maps on either side give them learnable structure constants, e.g.
(W_b X)(W_u X) is X T(X) with lambda^k_ab = W_b[k, a] W_u[k, b].  With G = sigmoid(W_g X), the gate F(W_g X):

* the hidden term O_K(W(H)) = K (a H), W = diag(a), a = -exp(A_log) (so H(s) = (1 + K a) H(s-1) + I(s), stable
  while exp(A_log) <= 2):  H = 1: K = G;  H = 2: K = G sigmoid(W_h X), two multiplication operators composed;
* the input term:  I = 1: W_u X;  I = 2: (W_b X)(W_u X) = X T(X);  I = 3: G (W_b X)(W_u X), Mamba's
  O_{F(W_g X)}(X T(X)) on the simpler algebra;
* the output Y = W_o((W_c X) H).

Each number is the self-interaction order in X of that term, per step, H(s-1) counted as order 0; `order()`
reads them off the expression, with the output's order max(I, H) + 1.  The recurrence is linear in H with a
diagonal transition, so the fast path is one `kernels.scans.recurrence`.

`dynamical` is the bare layer on d_model features.  `dynamical_block` is the paper's experiment, Vision Mamba
with its dynamical layer replaced: the block of `mamba` (the `GatedBlock` frame: W_x and W_z with expansion to
d_inner, the causal depthwise convolution and SiLU giving u, the gate y * silu(z), W_out) around the same
recurrence on u, with y = (W_c u) H, so the state has d_inner components per token where Mamba's has
d_inner * d_state.  It has no skip D u: the paper's output is Y(s) = O_{X(s)}(H(s)) alone, and Mamba's D u is
part of the selective SSM that is replaced (its y = C h + D u), not of the block around it.  The block's orders
are (I, H, max(I, H) + 2): the gate silu(z) adds one.

>>> import numpy as np
>>> model = dynamical(d_model=4, input_order=3, hidden_order=2)
>>> model.order()
Orders(input=3, hidden=2, output=4)
>>> params = model.init(seed=0)
>>> x = np.random.default_rng(1).standard_normal((2, 5, 4))
>>> bool(np.allclose(model.apply(params, x), model.apply(params, x, method="expression")))
True
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike

from ...algebra import diagonal, position, tensor_product
from ...algebra.algebra import check_count
from ...kernels import linear_scan

from ..expression import Expr, Linear, Parameter, Scale, Signal
from ...kernels.arrays import sigmoid
from ..pointwise import Pointwise
from .model import check_width
from ._gated_block import GatedBlock
from ._ssm import StateSpaceModel

if TYPE_CHECKING:
    from ...kernels.arrays import Engine

INPUT_ORDERS, HIDDEN_ORDERS = (1, 2, 3), (1, 2)


def _check_orders(input_order: object, hidden_order: object) -> tuple[int, int]:
    """(I, H) as ints of the grid, or a ValueError naming the argument."""
    for value, argument, allowed, letter in ((input_order, "input_order", INPUT_ORDERS, "I"),
                                             (hidden_order, "hidden_order", HIDDEN_ORDERS, "H")):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value not in allowed:
            raise ValueError(f"{argument}: expected one of {allowed} (the paper's {letter}), got {value!r}")
    return int(input_order), int(hidden_order)  # type: ignore[call-overload]  # checked just above


def _step(width: int, input_order: int, hidden_order: int) -> Callable[[Expr, Expr], tuple[Expr, Expr]]:
    """The recurrence's step on `width` features: (h, x_t) -> (hidden term, input term) of the module docstring."""
    A = diagonal(width)

    def linear(name: str, value: Expr) -> Linear:
        return Linear(Parameter(name, (width, width)), value)

    def step(h: Expr, x_t: Expr) -> tuple[Expr, Expr]:
        gate = Pointwise("sigmoid", linear("W_g", x_t))
        K = gate if hidden_order == 1 else gate * Pointwise("sigmoid", linear("W_h", x_t))
        decay = Scale(Pointwise("exp", Parameter("A_log", A)), -1)
        term: Expr = linear("W_u", x_t)
        if input_order > 1:
            term = linear("W_b", x_t) * term
        if input_order > 2:
            term = gate * term
        return h + K * (decay * h), term
    return step


def _linear(engine: Engine, params: Mapping[str, Any], name: str, xt: Any) -> Any:
    return xt @ engine.swapaxes(params[name], 0, 1)


def _states(engine: Engine, params: Mapping[str, Any], xt: Any, input_order: int, hidden_order: int,
            method: str) -> Any:
    """H(s) for every s of time-major xt (L, batch, width), by one `linear_scan`."""
    gate = sigmoid(_linear(engine, params, "W_g", xt), engine)
    K = gate if hidden_order == 1 else gate * sigmoid(_linear(engine, params, "W_h", xt), engine)
    term = _linear(engine, params, "W_u", xt)
    if input_order > 1:
        term = _linear(engine, params, "W_b", xt) * term
    if input_order > 2:
        term = gate * term
    return linear_scan(1 - K * engine.exp(params["A_log"]), term, method=method)


class Dynamical(StateSpaceModel):
    """The bare layer of the module docstring on (batch, length, d_model).  Parameters (d_model, d_model):
    ``W_g``, ``W_u``, ``W_c``, ``W_o``, ``W_h`` (H = 2), ``W_b`` (I >= 2); ``A_log`` (d_model,), initialised to
    0."""

    def __init__(self, d_model: int, input_order: int, hidden_order: int, length: int) -> None:
        super().__init__()
        self.width = check_width(d_model, "d_model")
        self.input_order, self.hidden_order = _check_orders(input_order, hidden_order)
        self.geometry = (check_count(length, "length"),)

    def init(self, seed: int | np.random.Generator = 0, dtype: DTypeLike = np.float64) -> dict[str, np.ndarray]:
        """Normal weights with standard deviation 1/sqrt(d_model); A_log = 0 (a = -1)."""
        params = super().init(seed, dtype)
        params["A_log"] = np.zeros(self.width, dtype)
        return params

    def build(self, geometry: tuple[int, ...]) -> tuple[Expr, Signal]:
        (length,) = geometry
        A = diagonal(self.width)
        X = Signal("x", tensor_product(position(length), A))
        H = self.recurrence(_step(self.width, self.input_order, self.hidden_order), X, A)
        W = lambda name: Parameter(name, (self.width, self.width))                   # noqa: E731
        return Linear(W("W_o"), Linear(W("W_c"), X) * H), X

    def fast(self, engine: Engine, params: Mapping[str, Any], x: Any, method: str) -> Any:
        xt = engine.swapaxes(x, 0, 1)                                              # (L, batch, d_model)
        states = _states(engine, params, xt, self.input_order, self.hidden_order, method)
        return engine.swapaxes(_linear(engine, params, "W_o", _linear(engine, params, "W_c", xt) * states), 0, 1)


class DynamicalBlock(GatedBlock):
    """The dynamical layer in Mamba's block (the paper's experiment): the `GatedBlock` frame of `mamba` (``W_x``,
    ``W_z`` (d_inner, d_model), ``conv_k``, ``conv_bias`` (d_inner,), ``W_out`` (d_model, d_inner)) around the
    recurrence of the module docstring on u, d_inner features: parameters ``W_g``, ``W_u``, ``W_c``, ``W_h``
    (H = 2), ``W_b`` (I >= 2), (d_inner, d_inner), and ``A_log`` (d_inner,), initialised to 0.  Its output is
    y = (W_c u) H, gated and projected by the frame: W_out plays the bare layer's W_o."""

    def __init__(self, d_model: int, input_order: int, hidden_order: int, expand: int, d_conv: int,
                 length: int) -> None:
        super().__init__(d_model, expand, d_conv, length)
        self.input_order, self.hidden_order = _check_orders(input_order, hidden_order)

    def init(self, seed: int | np.random.Generator = 0, dtype: DTypeLike = np.float64) -> dict[str, np.ndarray]:
        """Normal weights (the frame's `scales`, else 1/sqrt(fan-in)); A_log = 0 (a = -1)."""
        params = super().init(seed, dtype)
        params["A_log"] = np.zeros(self.d_inner, dtype)
        return params

    def dynamics(self, u: Expr) -> Expr:
        channels = diagonal(self.d_inner)
        H = self.recurrence(_step(self.d_inner, self.input_order, self.hidden_order), u, channels)
        return Linear(Parameter("W_c", (self.d_inner, self.d_inner)), u) * H

    def dynamics_fast(self, engine: Engine, params: Mapping[str, Any], u: Any, method: str) -> Any:
        states = _states(engine, params, u, self.input_order, self.hidden_order, method)
        return _linear(engine, params, "W_c", u) * states


def dynamical(d_model: int = 64, input_order: int = 3, hidden_order: int = 2, length: int = 3) -> Dynamical:
    """The bare dynamical layer at the grid point (I, H) = (`input_order`, `hidden_order`); defaults to the
    paper's best, (3, 2).  `length` only sets the inspected expression."""
    return Dynamical(d_model, input_order, hidden_order, length)


def dynamical_block(d_model: int = 64, input_order: int = 3, hidden_order: int = 2, expand: int = 2,
                    d_conv: int = 4, length: int = 3) -> DynamicalBlock:
    """The dynamical layer at (I, H) in Mamba's block (`DynamicalBlock`), with Mamba's `expand` and `d_conv`.

    A builder of its own, not an option of `dynamical`: the block has arguments (`expand`, `d_conv`) that mean
    nothing to the bare layer, and a different parameter set (W_x, W_z, the convolution and W_out where the bare
    layer has W_o).  `length` only sets the inspected expression.

    >>> import numpy as np
    >>> block = dynamical_block(d_model=4, input_order=3, hidden_order=1, expand=2, d_conv=3)
    >>> block.order(), block.parameters["W_g"], block.parameters["A_log"]
    (Orders(input=3, hidden=1, output=5), (8, 8), (8,))
    >>> params, x = block.init(seed=0), np.random.default_rng(1).standard_normal((2, 5, 4))
    >>> bool(np.allclose(block.apply(params, x), block.apply(params, x, method="expression")))
    True
    """
    return DynamicalBlock(d_model, input_order, hidden_order, expand, d_conv, length)
