"""Gating: O_{F(W X)}(X) = F(W X) X on the diagonal feature algebra (order 2).

X lives in position(length) (x) diagonal(channels); W is a channel-linear map and F a nonlinearity, so each
channel of each token is multiplied by its own gate: z_{t,i} = F(sum_j W_ij x_{t,j}) x_{t,i}.

>>> import numpy as np
>>> model = gating(channels=3)
>>> model.order()
2
>>> params = model.init(seed=0)
>>> x = np.random.default_rng(1).standard_normal((2, 5, 3))
>>> gate = 1 / (1 + np.exp(-x @ params["W"].T))
>>> bool(np.allclose(model.apply(params, x), gate * x))
True
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...algebra import diagonal, position, tensor_product
from ...algebra.algebra import check_count

from ..expression import Expr, Linear, Parameter, Signal
from ..pointwise import FUNCTIONS, Pointwise
from .model import Model, check_width


class Gating(Model):
    """See the module docstring.  Parameters: ``W`` (channels, channels)."""

    def __init__(self, channels: int, function: str = "sigmoid", length: int = 4) -> None:
        super().__init__()
        if not isinstance(function, str) or function not in FUNCTIONS or function == "softmax":
            raise ValueError(f"function: expected an elementwise nonlinearity, got {function!r}")
        self.channels, self.function = check_width(channels, "channels"), function
        self.geometry = (check_count(length, "length"),)

    def build(self, geometry: tuple[int, ...]) -> tuple[Expr, Signal]:
        (length,) = geometry
        X = Signal("x", tensor_product(position(length), diagonal(self.channels)))
        gate = Pointwise(self.function, Linear(Parameter("W", (self.channels, self.channels)), X))
        return gate * X, X

    def geometry_of(self, x: Any) -> tuple[int, ...]:
        if np.ndim(x) < 2:
            raise ValueError(f"x: expected shape (..., length, {self.channels}), got {np.shape(x)}")
        return (np.shape(x)[-2],)


def gating(channels: int = 64, function: str = "sigmoid", length: int = 4) -> Gating:
    """A gating layer on (batch, length, channels) inputs; `length` only sets the inspected expression."""
    return Gating(channels, function, length)
