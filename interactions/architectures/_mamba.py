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

The block's fast path runs the selective scan of `kernels.scans.selective_ssm` (re-exported here) on time-major
arrays: cache-sized chunks of time, a hand-written gradient.

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

from ...algebra import Algebra, diagonal, position, tensor_product
from ...algebra.algebra import check_count
from ...kernels.arrays import silu, softplus
from ...kernels.scans import selective_scan, time_major
from ..expression import Expr, Linear, Parameter, Scale, Signal
from ..pointwise import Pointwise
from ..structural import Lag, Reduce
from .model import check_seed, check_width
from ._ssm import StateSpaceModel, check_steps

if TYPE_CHECKING:
    from ...kernels.arrays import Engine

__all__ = ["Mamba", "mamba", "selective_scan"]

# ---------------------------------------------------------------------- the block
class Mamba(StateSpaceModel):
    """The Mamba block of the module docstring.  Parameters: ``W_x``, ``W_z`` (d_inner, d_model); ``conv_k``
    (k < d_conv) and ``conv_bias`` (d_inner,); ``W_delta`` (dt_rank, d_inner), ``W_dt`` (d_inner, dt_rank),
    ``dt_bias`` (d_inner,); ``A_log``, ``W_B``, ``W_C`` (d_inner, d_state); ``D`` (d_inner,); ``W_out``
    (d_model, d_inner)."""

    def __init__(self, d_model: int, d_state: int, expand: int, d_conv: int, dt_rank: int | None, dt_min: float,
                 dt_max: float, length: int) -> None:
        super().__init__()
        self.width, self.d_state = check_width(d_model, "d_model"), check_width(d_state, "d_state")
        self.d_inner = check_width(expand, "expand") * self.width
        self.d_conv = check_width(d_conv, "d_conv")
        self.dt_rank = check_width(-(-self.width // 16) if dt_rank is None else dt_rank, "dt_rank")
        self.dt_min, self.dt_max = check_steps(dt_min, dt_max, "dt_min", "dt_max")
        self.geometry = (check_count(length, "length"),)
        taps = 1.0 / np.sqrt(self.d_conv)
        self.scales = {**{f"conv_{k}": taps for k in range(self.d_conv)}, "conv_bias": taps,
                       "W_B": 1.0 / np.sqrt(self.d_inner), "W_C": 1.0 / np.sqrt(self.d_inner)}

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

    def build(self, geometry: tuple[int, ...]) -> tuple[Expr, Signal]:
        (length,) = geometry
        channels, hidden = diagonal(self.d_inner), diagonal(self.d_state)
        X = Signal("x", tensor_product(position(length), diagonal(self.width), hidden), units=[2])

        def project(name: str, value: Expr, into: Algebra, factor: int = 1) -> Linear:
            W = Parameter(name, (into.dim, value.factors[factor].dim))
            return Linear(W, value, factor=factor, into=into)

        x = project("W_x", X, channels)
        taps = [Parameter(f"conv_{k}", x.algebra, units=[0, 2]) * (Lag(x, k) if k else x)
                for k in range(self.d_conv)]
        u = Pointwise("silu", sum(taps[1:], taps[0]) + Parameter("conv_bias", x.algebra, units=[0, 2]))

        def step(h: Expr, u_t: Expr) -> tuple[Expr, Expr]:
            low = project("W_delta", u_t, diagonal(self.dt_rank), factor=0)
            delta = Pointwise("softplus", project("W_dt", low, channels, factor=0)
                              + Parameter("dt_bias", u_t.algebra, units=[1]))
            A = Scale(Pointwise("exp", Parameter("A_log", u_t.algebra)), -1)
            B = Reduce(Parameter("W_B", u_t.algebra) * u_t, factor=0, query=1)    # (no mask: query is unused)
            return Pointwise("exp", delta * A) * h, delta * B * u_t

        H = self.recurrence(step, u, tensor_product(channels, hidden))
        C = Reduce(Parameter("W_C", u.algebra, units=[0]) * u, factor=1)
        y = Reduce(C * H, factor=2) + Parameter("D", u.algebra, units=[0, 2]) * u
        return project("W_out", y * Pointwise("silu", project("W_z", X, channels)), diagonal(self.width)), X

    def fast(self, engine: Engine, params: Mapping[str, Any], x: Any, method: str) -> Any:
        p, lag = params, self.d_conv - 1
        T = lambda name: engine.swapaxes(p[name], 0, 1)                              # noqa: E731
        xt = engine.swapaxes(x, 0, 1)                                                # (L, batch, d_model)
        x_in = xt @ T("W_x")
        padded = engine.concatenate([engine.zeros((lag,) + tuple(x_in.shape[1:]), x_in), x_in], axis=0)
        length = x_in.shape[0]
        conv = sum(p[f"conv_{k}"] * padded[lag - k:lag - k + length] for k in range(self.d_conv))
        u = silu(conv + p["conv_bias"], engine)
        delta = softplus((u @ T("W_delta")) @ T("W_dt") + p["dt_bias"], engine)
        y = time_major(u, delta, -engine.exp(p["A_log"]), u @ p["W_B"], u @ p["W_C"], p["D"], xt @ T("W_z"),
                       method)
        return engine.swapaxes(y @ T("W_out"), 0, 1)


def mamba(d_model: int = 64, d_state: int = 16, expand: int = 2, d_conv: int = 4, dt_rank: int | None = None,
          dt_min: float = 1e-3, dt_max: float = 1e-1, length: int = 3) -> Mamba:
    """A Mamba block on (batch, length, d_model); dt_rank defaults to ceil(d_model / 16); `length` only sets the
    inspected expression."""
    return Mamba(d_model, d_state, expand, d_conv, dt_rank, dt_min, dt_max, length)
