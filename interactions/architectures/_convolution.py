"""Convolution: O_K(X) = K X in a translation algebra, with channels through a relation of channel factors.

1-D: X in translation(n) (x) position(c_out) (x) position(c_in), constant (g_0) along the output channels;
K has `size` taps on the translation factor.  The translation product convolves, the position factors pair each
output channel with each input channel, and the reduction over input channels sums them:
z_{m,o} = sum_{k,i} K_{k,o,i} x_{m-k,i}.  2-D uses translation(h) (x) translation(w).

``cyclic=True`` is the circular convolution (Z_n); ``cyclic=False`` the zero-padded one on the truncated
translation algebra (only shifts >= 0: a causal "full" convolution cut to n samples).

>>> import numpy as np
>>> model = convolution(channels_in=1, channels_out=1, size=2, cyclic=True)
>>> model.order()
1
>>> out = model.apply({"K": np.array([[[1.]], [[1.]]])}, np.array([[[1.], [2.], [3.]]]))
>>> out[0, :, 0]
array([4., 3., 5.])
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ...algebra import position, tensor_product, translation

from ..expression import Expr, Parameter, Signal
from ..structural import Reduce
from ...algebra.algebra import check_flag
from .model import Model, check_width


class Convolution(Model):
    """See the module docstring.  Parameter ``K``: (size, c_out, c_in) in 1-D, (size, size, c_out, c_in) in 2-D.
    Inputs (batch, n, c_in) or (batch, h, w, c_in)."""

    def __init__(self, channels_in: int, channels_out: int, size: int, dims: int, cyclic: bool,
                 shape: Iterable[int] | None) -> None:
        super().__init__()
        for value, argument in ((channels_in, "channels_in"), (channels_out, "channels_out"), (size, "size")):
            check_width(value, argument)
        if isinstance(dims, (bool, np.bool_)) or not isinstance(dims, (int, np.integer)) or dims not in (1, 2):
            raise ValueError(f"dims: expected 1 or 2, got {dims!r:.60}")
        self.channels_in, self.channels_out, self.size = int(channels_in), int(channels_out), int(size)
        self.dims, self.cyclic = int(dims), check_flag(cyclic, "cyclic")
        if shape is not None and (not isinstance(shape, (tuple, list)) or len(shape) != dims):
            raise ValueError(f"shape: expected {dims} lattice size(s), got {shape!r:.60}")
        self.geometry = (max(4, self.size),) * self.dims if shape is None else tuple(
            check_width(n, f"shape[{i}] (at least size)", self.size) for i, n in enumerate(shape))
        self.scales = {"K": 1.0 / np.sqrt(self.channels_in * self.size ** dims)}

    def build(self, geometry: tuple[int, ...]) -> tuple[Expr, Signal]:
        if any(n < self.size for n in geometry):
            raise ValueError(f"x: spatial size {geometry} is smaller than the filter size {self.size}")
        lattice = [translation(n, cyclic=self.cyclic) for n in geometry]
        algebra = tensor_product(*lattice, position(self.channels_out), position(self.channels_in))
        X = Signal("x", algebra, units=[self.dims])
        taps = {axis: range(self.size) for axis in range(self.dims)}
        K = Parameter("K", algebra, support=taps)
        return Reduce(K * X, factor=self.dims + 1), X

    def geometry_of(self, x: Any) -> tuple[int, ...]:
        if np.ndim(x) < self.dims + 1 or np.shape(x)[-1] != self.channels_in:
            raise ValueError(f"x: expected shape (..., {'h, w' if self.dims == 2 else 'n'}, {self.channels_in}),"
                             f" got {np.shape(x)}")
        return tuple(np.shape(x)[-self.dims - 1:-1])


def convolution(channels_in: int = 1, channels_out: int = 1, size: int = 3, dims: int = 1, cyclic: bool = True,
                shape: Iterable[int] | None = None) -> Convolution:
    """A convolution layer; `shape` only sets the inspected expression."""
    return Convolution(channels_in, channels_out, size, dims, cyclic, shape)
