"""Mamba: the selective SSM block, an SSM whose step size, B and C are read from the input.

On (batch, length, d_model), with d_inner = expand * d_model:

    x, z = W_x X, W_z X;   u = silu(sum_k conv_k x_{t-k} + conv_bias)            (causal depthwise, d_conv taps)
    Delta_t = softplus(W_dt W_delta u_t + dt_bias),  B_t = u_t W_B,  C_t = u_t W_C,  A = -exp(A_log)
    h_t = exp(Delta_t A) h_{t-1} + Delta_t B_t u_t,   y_t = C_t h_t + D u_t,   out = W_out (y * silu(z))

with A real (d_inner, d_state), initialised to -(1..d_state).  In the algebra position(L) (x) diagonal(channels)
(x) diagonal(d_state) the input is X (x) f_0 (the unit of the hidden algebra); B_t = P(W_B u_t) and C_t = P(W_C u)
reduce the channels, the step is O_{exp(Delta A)}(H) + O_Delta(O_B(u_t)): the paper's discrete rule of Mamba.
`order()`: the input term Delta(u) B(u) u has order 3 (the paper's "Mamba is order 3"), the hidden term
exp(Delta A) H order 1, and the block order 5 (C_t h_t adds 1, the gate silu(z) 1).

The block is the `GatedBlock` frame (projections, convolution, gate) around the selective SSM; `dynamical_block`
puts the same frame around the paper's simplified dynamical layer.  The fast path runs the selective scan of
`kernels.scans.selective_ssm` (re-exported here) on time-major arrays: cache-sized chunks of time, a
hand-written gradient.

>>> import numpy as np
>>> model = mamba(d_model=4, d_state=3)
>>> model.order()
Orders(input=3, hidden=1, output=5)
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

from ...algebra import diagonal, tensor_product
from ...kernels.arrays import softplus
from ...kernels.scans import selective_scan, time_major
from ..expression import Expr, Parameter, Scale
from ..pointwise import Pointwise
from ..structural import Reduce
from .model import check_seed, check_width
from ._gated_block import GatedBlock, project
from ._ssm import check_steps

if TYPE_CHECKING:
    from ...kernels.arrays import Engine

__all__ = ["Mamba", "mamba", "selective_scan"]

class Mamba(GatedBlock):
    """The Mamba block of the module docstring: the `GatedBlock` frame around the selective SSM.  Parameters:
    the frame's (``W_x``, ``W_z``, ``conv_k``, ``conv_bias``, ``W_out``); ``W_delta`` (dt_rank, d_inner),
    ``W_dt`` (d_inner, dt_rank), ``dt_bias`` (d_inner,); ``A_log``, ``W_B``, ``W_C`` (d_inner, d_state); ``D``
    (d_inner,)."""

    def __init__(self, d_model: int, d_state: int, expand: int, d_conv: int, dt_rank: int | None, dt_min: float,
                 dt_max: float, length: int) -> None:
        super().__init__(d_model, expand, d_conv, length)
        self.d_state = check_width(d_state, "d_state")
        self.hidden = (diagonal(self.d_state),)
        self.dt_rank = check_width(-(-self.width // 16) if dt_rank is None else dt_rank, "dt_rank")
        self.dt_min, self.dt_max = check_steps(dt_min, dt_max, "dt_min", "dt_max")
        self.scales.update({"W_B": 1.0 / np.sqrt(self.d_inner), "W_C": 1.0 / np.sqrt(self.d_inner)})

    def init(self, seed: int | np.random.Generator = 0, dtype: DTypeLike = np.float64) -> dict[str, np.ndarray]:
        """Normal weights (`scales`), A = -(1..d_state), D = 1, and dt_bias the inverse softplus of steps drawn
        log-uniformly in [dt_min, dt_max]."""
        rng = check_seed(seed)
        params = super().init(rng, dtype)
        step = np.exp(rng.uniform(np.log(self.dt_min), np.log(self.dt_max), self.d_inner))
        params["dt_bias"] = (step + np.log(-np.expm1(-step))).astype(dtype)
        params["A_log"] = np.log(np.tile(np.arange(1, self.d_state + 1), (self.d_inner, 1))).astype(dtype)
        params["D"] = np.ones(self.d_inner, dtype)
        return params

    def dynamics(self, u: Expr) -> Expr:
        channels = diagonal(self.d_inner)

        def step(h: Expr, u_t: Expr) -> tuple[Expr, Expr]:
            low = project("W_delta", u_t, diagonal(self.dt_rank), factor=0)
            delta = Pointwise("softplus", project("W_dt", low, channels, factor=0)
                              + Parameter("dt_bias", u_t.algebra, units=[1]))
            A = Scale(Pointwise("exp", Parameter("A_log", u_t.algebra)), -1)
            B = Reduce(Parameter("W_B", u_t.algebra) * u_t, factor=0, query=1)    # (no mask: query is unused)
            return Pointwise("exp", delta * A) * h, delta * B * u_t

        H = self.recurrence(step, u, tensor_product(channels, *self.hidden))
        C = Reduce(Parameter("W_C", u.algebra, units=[0]) * u, factor=1)
        return Reduce(C * H, factor=2) + Parameter("D", u.algebra, units=[0, 2]) * u

    def dynamics_fast(self, engine: Engine, params: Mapping[str, Any], u: Any, method: str) -> Any:
        p = params
        T = lambda name: engine.swapaxes(p[name], 0, 1)                              # noqa: E731
        delta = softplus((u @ T("W_delta")) @ T("W_dt") + p["dt_bias"], engine)
        return time_major(u, delta, -engine.exp(p["A_log"]), u @ p["W_B"], u @ p["W_C"], p["D"], None, method)


def mamba(d_model: int = 64, d_state: int = 16, expand: int = 2, d_conv: int = 4, dt_rank: int | None = None,
          dt_min: float = 1e-3, dt_max: float = 1e-1, length: int = 3) -> Mamba:
    """A Mamba block on (batch, length, d_model); dt_rank defaults to ceil(d_model / 16); `length` only sets the
    inspected expression."""
    return Mamba(d_model, d_state, expand, d_conv, dt_rank, dt_min, dt_max, length)
