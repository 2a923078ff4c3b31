"""Tensor Field Network layer: O_K(S) = P(K T(S)) on position (x) position (x) CG(lmax) (x) channels.

S = sum_a s(r_a) g_a (x) g_0 (x) e^l_m lives in position(n) (x) position(n) (x) clebsch_gordan(lmax), with channel
factors position(c_out) (x) position(c_in) (S constant along the output channels).  The filter
K(r_a - r_b) = R(|r_ab|) Y(r_hat_ab) puts, on each pair of points, the real spherical harmonics of the direction
times a learnable radial function per (filter degree l, output channel, input channel): a small MLP on Gaussian
radial features, cut off smoothly at `radius` (so the reduction over keys is the neighbourhood reduction P^N).
The Clebsch-Gordan product couples filter and feature degrees; the reductions sum over input channels and
neighbours.  Rotating the cloud and the features by R rotates the output by D(R); translations change nothing.

>>> import numpy as np
>>> model = tfn(lmax=1, channels_in=2, channels_out=3)
>>> model.order()
1
>>> params = model.init(seed=0)
>>> points = np.random.default_rng(1).standard_normal((2, 5, 3))
>>> features = np.random.default_rng(2).standard_normal((2, 5, 4, 2))       # (batch, points, (lmax+1)^2, c_in)
>>> model.apply(params, points, features).shape
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

from ..expression import Expr, Signal
from ..structural import Flip, Reduce
from .model import Model, check_params
from .radial import RadialFilter, check_cloud


class TensorFieldNetwork(Model):
    """See the module docstring.  Parameters: the radial MLP ``K_W_radial`` (hidden, basis), ``K_b_radial``
    (hidden,) and ``K_W_out`` ((lmax + 1) * c_out * c_in, hidden)."""

    def __init__(self, lmax: int, channels_in: int, channels_out: int, radius: float, basis: int, hidden: int,
                 points: int) -> None:
        super().__init__()
        self.filter = RadialFilter("K", lmax, channels_out, channels_in, radius, basis, hidden)
        self.lmax, self.channels_in, self.channels_out = lmax, channels_in, channels_out
        self.geometry = (check_count(points, "points"),)

    def build(self, geometry: tuple[int, ...]) -> tuple[Expr, Signal]:
        (n,) = geometry
        algebra = tensor_product(position(n), position(n), clebsch_gordan(self.lmax), position(self.channels_out),
                                 position(self.channels_in))
        S = Signal("s", algebra, units=[1, 3])
        K = Signal("k", algebra)
        return Reduce(Reduce(K * Flip(S), factor=4), factor=1), S

    @property
    def parameters(self) -> dict[str, tuple[int, ...]]:
        return self.filter.parameters

    @with_jax_defaults
    def apply(self, params: Mapping[str, Any], points: Any,  # type: ignore[override]  # a point cloud, not x
              features: Any) -> Any:
        """Features (batch, n, (lmax+1)^2, c_in) at points (batch, n, 3) -> (batch, n, (lmax+1)^2, c_out)."""
        check_params(params, self.parameters)
        points = check_cloud(points, features, self.lmax, self.channels_in)
        dtype = np.result_type(features, np.float32) if isinstance(features, np.ndarray) else None
        inputs = {"s": features, "k": self.filter(params, points, dtype)}
        plan, call = self.checked((points.shape[-2],), inputs, {})
        return plan.run(call)


def tfn(lmax: int = 2, channels_in: int = 4, channels_out: int = 4, radius: float = 2.0, basis: int = 8,
        hidden: int = 16, points: int = 4) -> TensorFieldNetwork:
    """A TFN layer; `points` only sets the inspected expression."""
    return TensorFieldNetwork(lmax, channels_in, channels_out, radius, basis, hidden, points)
