"""Mamba's block around a dynamical layer: the frame that `mamba` and `dynamical_block` share.

On (batch, length, d_model), with d_inner = expand * d_model:

    x, z = W_x X, W_z X;   u = silu(sum_k conv_k x_{t-k} + conv_bias)            (causal depthwise, d_conv taps)
    y = dynamics(u);       out = W_out (y * silu(z))

Everything but ``dynamics`` is the frame: the input projection with expansion, the causal depthwise convolution,
the SiLU gate y * silu(z) and the output projection.  A subclass supplies the dynamical layer twice, as an
expression (`dynamics`, a Scan on u: `StateSpaceModel.order` reads its input and hidden terms) and as a fast
numeric path on time-major arrays (`dynamics_fast`), and the factors its state has besides the channels
(`hidden`, constant in the input: Mamba's diagonal(d_state); none for the simplified algebra).  Mamba is the
frame around the selective SSM; `dynamical_block` the same frame around the paper's Section 5.1 recurrence.

>>> from product_interactions.interactions.architectures import dynamical_block, mamba
>>> ours, theirs = dynamical_block(d_model=4).parameters, mamba(d_model=4).parameters
>>> sorted(name for name, shape in ours.items() if theirs.get(name) == shape)     # the frame's, shared
['W_out', 'W_x', 'W_z', 'conv_0', 'conv_1', 'conv_2', 'conv_3', 'conv_bias']
>>> ours["A_log"], theirs["A_log"]                  # the state: d_inner numbers against d_inner x d_state
((8,), (8, 16))
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ...algebra import Algebra, diagonal, position, tensor_product
from ...algebra.algebra import check_count
from ...kernels.arrays import silu
from ..expression import Expr, Linear, Parameter, Signal
from ..pointwise import Pointwise
from ..structural import Lag
from .model import check_width
from ._ssm import StateSpaceModel

if TYPE_CHECKING:
    from ...kernels.arrays import Engine


def project(name: str, value: Expr, into: Algebra, factor: int = 1) -> Linear:
    """The learned linear map `name` (into.dim, size of `factor`) from factor `factor` of `value` into `into`."""
    W = Parameter(name, (into.dim, value.factors[factor].dim))
    return Linear(W, value, factor=factor, into=into)


class GatedBlock(StateSpaceModel):
    """The frame of the module docstring.  Parameters: ``W_x``, ``W_z`` (d_inner, d_model); ``conv_k``
    (k < d_conv) and ``conv_bias`` (d_inner,); ``W_out`` (d_model, d_inner); and the dynamical layer's own.
    Subclasses define `dynamics`, `dynamics_fast` and, where the state has more factors than the channels,
    `hidden`."""

    #: The state's factors after the channels, constant in the block's input.
    hidden: tuple[Algebra, ...] = ()

    def __init__(self, d_model: int, expand: int, d_conv: int, length: int) -> None:
        super().__init__()
        self.width = check_width(d_model, "d_model")
        self.d_inner = check_width(expand, "expand") * self.width
        self.d_conv = check_width(d_conv, "d_conv")
        self.geometry = (check_count(length, "length"),)
        taps = 1.0 / np.sqrt(self.d_conv)
        self.scales = {**{f"conv_{k}": taps for k in range(self.d_conv)}, "conv_bias": taps}

    def dynamics(self, u: Expr) -> Expr:
        """The dynamical layer's output y, in u's algebra position(L) (x) diagonal(d_inner) (x) `hidden`."""
        raise NotImplementedError

    def dynamics_fast(self, engine: Engine, params: Mapping[str, Any], u: Any, method: str) -> Any:
        """y of `dynamics` on time-major u (L, batch, d_inner)."""
        raise NotImplementedError

    def build(self, geometry: tuple[int, ...]) -> tuple[Expr, Signal]:
        (length,) = geometry
        channels, constant = diagonal(self.d_inner), list(range(2, 2 + len(self.hidden)))
        X = Signal("x", tensor_product(position(length), diagonal(self.width), *self.hidden), units=constant)
        x = project("W_x", X, channels)
        taps = [Parameter(f"conv_{k}", x.algebra, units=[0, *constant]) * (Lag(x, k) if k else x)
                for k in range(self.d_conv)]
        u = Pointwise("silu", sum(taps[1:], taps[0]) + Parameter("conv_bias", x.algebra, units=[0, *constant]))
        y = self.dynamics(u)
        return project("W_out", y * Pointwise("silu", project("W_z", X, channels)), diagonal(self.width)), X

    def fast(self, engine: Engine, params: Mapping[str, Any], x: Any, method: str) -> Any:
        p, lag = params, self.d_conv - 1
        T = lambda name: engine.swapaxes(p[name], 0, 1)                              # noqa: E731
        xt = engine.swapaxes(x, 0, 1)                                                # (L, batch, d_model)
        x_in = xt @ T("W_x")
        padded = engine.concatenate([engine.zeros((lag,) + tuple(x_in.shape[1:]), x_in), x_in], axis=0)
        length = x_in.shape[0]
        conv = sum(p[f"conv_{k}"] * padded[lag - k:lag - k + length] for k in range(self.d_conv))
        y = self.dynamics_fast(engine, p, silu(conv + p["conv_bias"], engine), method)
        return engine.swapaxes((y * silu(xt @ T("W_z"), engine)) @ T("W_out"), 0, 1)
