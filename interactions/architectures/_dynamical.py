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

from collections.abc import Mapping
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
from ._ssm import StateSpaceModel

if TYPE_CHECKING:
    from ...kernels.arrays import Engine

INPUT_ORDERS, HIDDEN_ORDERS = (1, 2, 3), (1, 2)


class Dynamical(StateSpaceModel):
    """The layer of the module docstring on (batch, length, d_model).  Parameters (d_model, d_model): ``W_g``,
    ``W_u``, ``W_c``, ``W_o``, ``W_h`` (H = 2), ``W_b`` (I >= 2); ``A_log`` (d_model,), initialised to 0."""

    def __init__(self, d_model: int, input_order: int, hidden_order: int, length: int) -> None:
        super().__init__()
        self.width = check_width(d_model, "d_model")
        if not isinstance(input_order, (int, np.integer)) or isinstance(input_order, bool) or \
                input_order not in INPUT_ORDERS:
            raise ValueError(f"input_order: expected one of {INPUT_ORDERS} (the paper's I), got {input_order!r}")
        if not isinstance(hidden_order, (int, np.integer)) or isinstance(hidden_order, bool) or \
                hidden_order not in HIDDEN_ORDERS:
            raise ValueError(f"hidden_order: expected one of {HIDDEN_ORDERS} (the paper's H), got {hidden_order!r}")
        self.input_order, self.hidden_order = int(input_order), int(hidden_order)
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

        def linear(name: str, value: Expr) -> Linear:
            return Linear(Parameter(name, (self.width, self.width)), value)

        def step(h: Expr, x_t: Expr) -> tuple[Expr, Expr]:
            gate = Pointwise("sigmoid", linear("W_g", x_t))
            K = gate if self.hidden_order == 1 else gate * Pointwise("sigmoid", linear("W_h", x_t))
            decay = Scale(Pointwise("exp", Parameter("A_log", A)), -1)
            term: Expr = linear("W_u", x_t)
            if self.input_order > 1:
                term = linear("W_b", x_t) * term
            if self.input_order > 2:
                term = gate * term
            return h + K * (decay * h), term

        H = self.recurrence(step, X, A)
        return linear("W_o", linear("W_c", X) * H), X

    def fast(self, engine: Engine, params: Mapping[str, Any], x: Any, method: str) -> Any:
        p = params
        xt = engine.swapaxes(x, 0, 1)                                              # (L, batch, d_model)
        linear = lambda name: xt @ engine.swapaxes(p[name], 0, 1)  # noqa: E731
        gate = sigmoid(linear("W_g"), engine)
        K = gate if self.hidden_order == 1 else gate * sigmoid(linear("W_h"), engine)
        term = linear("W_u")
        if self.input_order > 1:
            term = linear("W_b") * term
        if self.input_order > 2:
            term = gate * term
        states = linear_scan(1 - K * engine.exp(p["A_log"]), term, method=method)
        return engine.swapaxes((linear("W_c") * states) @ engine.swapaxes(p["W_o"], 0, 1), 0, 1)


def dynamical(d_model: int = 64, input_order: int = 3, hidden_order: int = 2, length: int = 3) -> Dynamical:
    """The dynamical layer at the grid point (I, H) = (`input_order`, `hidden_order`); defaults to the paper's
    best, (3, 2).  `length` only sets the inspected expression."""
    return Dynamical(d_model, input_order, hidden_order, length)
