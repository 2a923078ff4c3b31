"""Attention as the cubic product interaction P^c(F(P^0(X T(X))) T(X)) on B (x) B (x) A.

X = sum_k x^(k) g_k (x) g_0 (x) e lives in position(n) (x) position(n) (x) features.  Per head the score is the
scalar projection of the product X T(X) whose structure constants are lam^0_ab = sum_i W_Q[i,a] W_K[i,b] /
sqrt(d_head): it is built as the sum over the head dimension (a reduction, i.e. the projection onto the unit of
the diagonal head algebra) of (W_Q X)(W_K T(X)), scaled.  F is the softmax over keys (within the causal mask),
the values are W_V T(X), P^c (or P) sums over keys, and W_O maps the heads back.

Heads are the factor diagonal(heads * rank): diagonal(h) (x) A is the direct sum of h copies of A, kept as a
factor so that heads are an array axis.  ``rank=R`` is the rank-R projection P^R: R score channels per head, each
with its own query, key and value of size d_head (parameters grow R-fold).

>>> import numpy as np
>>> model = attention(d_model=4, heads=2, causal=True)
>>> model.order(), sorted(model.parameters.items())
(3, [('W_K', (4, 4)), ('W_O', (4, 4)), ('W_Q', (4, 4)), ('W_V', (4, 4))])
"""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from ...algebra import diagonal, position, tensor_product
from ...algebra.algebra import check_count
from ...kernels import Mask

from ..expression import Expr, Linear, Parameter, Scale, Signal
from ..pointwise import Pointwise
from ..structural import CausalReduce, Flip, Reduce
from .model import Model, check_width


class Attention(Model):
    """Multi-head (rank-R) attention on (batch, length, d_model); see the module docstring.

    Parameters: ``W_Q``, ``W_K``, ``W_V`` of shape (heads * rank * d_head, d_model) and ``W_O`` of shape
    (d_model, heads * rank * d_head); d_head = d_model // heads unless given.
    """

    def __init__(self, d_model: int, heads: int, causal: bool, rank: int, d_head: int | None, length: int) -> None:
        super().__init__()
        self.d_model, self.heads, self.rank = (check_width(v, a) for v, a in
                                               ((d_model, "d_model"), (heads, "heads"), (rank, "rank")))
        if d_head is None:
            if d_model % heads:
                raise ValueError(f"heads: d_model = {d_model} is not divisible by heads = {heads}; give d_head")
            d_head = d_model // heads
        self.d_head = check_width(d_head, "d_head")
        if not isinstance(causal, bool):
            raise TypeError(f"causal: expected a bool, got {type(causal).__name__}")
        self.causal, self.geometry = causal, (check_count(length, "length"),)

    def stages(self, length: int) -> dict[str, Expr]:
        """The named sub-expressions at a sequence length: signal, scores, weights, output."""
        n = length
        channels, width = self.heads * self.rank, self.heads * self.rank * self.d_head
        features = diagonal(self.d_model)
        heads = tensor_product(diagonal(channels), diagonal(self.d_head))
        X = Signal("x", tensor_product(position(n), position(n), features), units=[1])

        def project(name: str) -> Linear:
            return Linear(Parameter(name, (width, self.d_model)), X, factor=2, into=heads)

        Q, K, V = project("W_Q"), project("W_K"), project("W_V")
        scores = Scale(Reduce(Q * Flip(K), factor=3), 1 / sympy.sqrt(self.d_head))     # (k, l, channel)
        weights = Pointwise("softmax", scores, factor=1, mask=Mask.causal() if self.causal else None)
        values = weights * Flip(V)
        attended = CausalReduce(values) if self.causal else Reduce(values)
        output = Linear(Parameter("W_O", (self.d_model, width)), attended, factor=(2, 3), into=features)
        return {"signal": X, "scores": scores, "weights": weights, "output": output}

    def build(self, geometry: tuple[int, ...]) -> tuple[Expr, Signal]:
        stages = self.stages(*geometry)
        return stages["output"], stages["signal"]  # type: ignore[return-value]  # the stage "signal" is X

    def geometry_of(self, x: Any) -> tuple[int, ...]:
        if np.ndim(x) < 2 or np.shape(x)[-1] != self.d_model:
            raise ValueError(f"x: expected shape (..., length, {self.d_model}), got {np.shape(x)}")
        return (np.shape(x)[-2],)


def attention(d_model: int = 64, heads: int = 4, causal: bool = True, rank: int = 1, d_head: int | None = None,
              length: int = 3) -> Attention:
    """Attention layer; `length` only sets the inspected expression (`expr`, `formula`)."""
    return Attention(d_model, heads, causal, rank, d_head, length)
