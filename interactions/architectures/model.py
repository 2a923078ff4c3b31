"""`Model`: an architecture as an expression with named parameters, initialisation and a compiled apply.

Architectures build their expression from the nodes of `interactions`; `Model` compiles it once per input
geometry (sequence length, image size) and checks parameters by name and shape.
"""
from __future__ import annotations

import numpy as np

from ..expression import Parameter
from ..orders import order as self_interaction_order


class Model:
    """Subclasses define ``build(geometry) -> (expr, signal)``, ``geometry_of(x)`` and the default `geometry`.

    `scales` maps a parameter name to the standard deviation of its normal initialisation (default
    1 / sqrt(fan-in), the last axis).
    """

    geometry: tuple = ()
    scales: dict = {}

    def __init__(self):
        self._built = {}

    # ------------------------------------------------------------------ expression
    def build(self, geometry):
        raise NotImplementedError

    def geometry_of(self, x) -> tuple:
        raise NotImplementedError

    def _get(self, geometry):
        if geometry not in self._built:
            expr, signal = self.build(geometry)
            self._built[geometry] = (expr, signal, expr.compile())
        return self._built[geometry]

    @property
    def expr(self):
        """The expression at the default geometry (small, for inspection and formulas)."""
        return self._get(self.geometry)[0]

    @property
    def signal(self):
        """The input Signal of `expr`."""
        return self._get(self.geometry)[1]

    def order(self) -> int:
        """The self-interaction order in the input."""
        return self_interaction_order(self.expr, self.signal)

    def formula(self, **options):
        """The component formula at the default geometry."""
        return self.expr.formula(**options)

    # ------------------------------------------------------------------ parameters
    @property
    def parameters(self) -> dict:
        """Parameter name -> array shape."""
        return {node.name: node.shape for node in self.expr.walk() if isinstance(node, Parameter)}

    def init(self, seed=0, dtype=np.float64) -> dict:
        """Seeded random parameters: normal with standard deviation `scales[name]` or 1/sqrt(last axis)."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        params = {}
        for name, shape in self.parameters.items():
            scale = self.scales.get(name, 1.0 / np.sqrt(shape[-1]))
            params[name] = (scale * rng.standard_normal(shape)).astype(dtype)
        return params

    # ------------------------------------------------------------------ numerics
    def apply(self, params, x):
        """The model on a batch of inputs (autograd arrays welcome)."""
        _, _, compiled = self._get(self.geometry_of(x))
        return compiled(x, params)
