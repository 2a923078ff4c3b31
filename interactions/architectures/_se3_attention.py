"""SE(3)-attention as a three-level product interaction on position (x) position (x) CG(lmax) (x) channels.

Edge keys and values K = O_{W^K}(S) = W^K T(S) and V = O_{W^V}(S) with learned radial filters (summed over input
channels); queries Q = a channel-linear map of S (an element whose feature part is the unit e^0_0); scores
P^0(Q K) summed over channels (the invariant inner product of the Clebsch-Gordan algebra); A = the softmax over
each point's neighbours (pairs within `radius`, a mask signal per cloud); output P^N(A V).  Order 3 in S, like
attention.

>>> import numpy as np
>>> model = se3_attention(lmax=1, channels_in=2, channels=3)
>>> model.order()
3
>>> points = np.random.default_rng(1).standard_normal((2, 5, 3))
>>> features = np.random.default_rng(2).standard_normal((2, 5, 4, 2))
>>> model.apply(model.init(seed=0), points, features).shape
(2, 5, 4, 3)
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...algebra import position, tensor_product
from ...algebra.algebra import check_count
from ...algebra.so3 import clebsch_gordan
from ...kernels.arrays import with_jax_defaults

from ..expression import Expr, Parameter, Signal
from ..pointwise import Pointwise
from ..structural import Flip, Reduce, ScalarProjection
from .model import Model, check_params, check_width
from .radial import RadialFilter, check_cloud


class SE3Attention(Model):
    """See the module docstring.  Parameters: ``W_Q`` (1, channels, channels_in) and the radial MLPs of the key
    and value filters (``K_*``, ``V_*``)."""

    def __init__(self, lmax: int, channels_in: int, channels: int, radius: float, basis: int, hidden: int,
                 points: int) -> None:
        super().__init__()
        channels = check_width(channels, "channels")
        self.keys = RadialFilter("K", lmax, channels, channels_in, radius, basis, hidden)
        self.values = RadialFilter("V", lmax, channels, channels_in, radius, basis, hidden)
        self.lmax, self.channels_in, self.channels = lmax, channels_in, channels
        self.geometry = (check_count(points, "points"),)

    def build(self, geometry: tuple[int, ...]) -> tuple[Expr, Signal]:
        (n,) = geometry
        algebra = tensor_product(position(n), position(n), clebsch_gordan(self.lmax), position(self.channels),
                                 position(self.channels_in))
        S = Signal("s", algebra, units=[1, 3])
        K = Reduce(Signal("w_k", algebra) * Flip(S), factor=4)                     # edges (a, b, lm, c)
        V = Reduce(Signal("w_v", algebra) * Flip(S), factor=4)
        W_Q = Parameter("W_Q", algebra, units=[0, 1], support={2: (0,)})           # channel map, feature part 1
        Q = Reduce(W_Q * S, factor=4)                                                # (a, lm, c)
        scores = Reduce(ScalarProjection(Q * K, factor=2), factor=3)               # (a, b), invariant
        neighbours = Signal("neighbours", tensor_product(position(n), position(n)))
        weights = Pointwise("softmax", scores, factor=1, mask=neighbours)
        return Reduce(weights * V, factor=1), S

    @property
    def parameters(self) -> dict[str, tuple[int, ...]]:
        return {"W_Q": (1, self.channels, self.channels_in), **self.keys.parameters, **self.values.parameters}

    @with_jax_defaults
    def apply(self, params: Mapping[str, Any], points: Any,  # type: ignore[override]  # a point cloud, not x
              features: Any) -> Any:
        """Features (batch, n, (lmax+1)^2, c_in) at points (batch, n, 3) -> (batch, n, (lmax+1)^2, channels)."""
        check_params(params, self.parameters)
        points = check_cloud(points, features, self.lmax, self.channels_in)
        dtype = np.result_type(features, np.float32) if isinstance(features, np.ndarray) else None
        inputs = {"s": features, "w_k": self.keys(params, points, dtype), "w_v": self.values(params, points, dtype),
                  "neighbours": self.keys.neighbours(points)}
        weights = {"W_Q": params["W_Q"]}
        plan, call = self.checked((points.shape[-2],), inputs, weights)
        return plan.run(call)


def se3_attention(lmax: int = 2, channels_in: int = 4, channels: int = 4, radius: float = 2.0, basis: int = 8,
                  hidden: int = 16, points: int = 4) -> SE3Attention:
    """An SE(3)-attention layer; `points` only sets the inspected expression."""
    return SE3Attention(lmax, channels_in, channels, radius, basis, hidden, points)
