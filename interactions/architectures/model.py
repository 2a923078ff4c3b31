"""`Model`: an architecture as an expression with named parameters, initialisation and a compiled apply.

Architectures build their expression from the nodes of `interactions`; `Model` compiles it into a plan and
checks parameters by name and shape.  A plan whose position sizes are parametric serves every input geometry
(sequence length, number of points), so most models compile once; a geometry no kept plan accepts is compiled
anew, and at most `PLANS_KEPT` plans are kept (the least recently used goes first).
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..expression import Parameter
from ..orders import order as self_interaction_order

#: Compiled plans a model keeps (for geometries no other kept plan serves).
PLANS_KEPT = 8


class Model:
    """Subclasses define ``build(geometry) -> (expr, signal)``, ``geometry_of(x)`` and the default `geometry`.

    `scales` maps a parameter name to the standard deviation of its normal initialisation (default
    1 / sqrt(fan-in), the last axis).
    """

    geometry: tuple = ()
    scales: dict = {}

    def __init__(self):
        self._default = None
        self._plans = OrderedDict()

    # ------------------------------------------------------------------ expression
    def build(self, geometry):
        raise NotImplementedError

    def geometry_of(self, x) -> tuple:
        raise NotImplementedError

    def _built(self):
        if self._default is None:
            self._default = self.build(self.geometry)
        return self._default

    @property
    def expr(self):
        """The expression at the default geometry (small, for inspection and formulas)."""
        return self._built()[0]

    @property
    def signal(self):
        """The input Signal of `expr`."""
        return self._built()[1]

    def plan(self, geometry=None, probe=None):
        """The compiled plan for an input geometry (default: the inspected one): a kept plan that accepts the
        `probe` inputs ``(inputs, parameters)``, else a new one (see the module docstring)."""
        geometry = self.geometry if geometry is None else tuple(geometry)
        plan = self._plans.get(geometry)
        if plan is None and probe is not None:
            plan = next((kept for kept in reversed(self._plans.values()) if kept.accepts(*probe)), None)
        if plan is None:
            plan = (self._built()[0] if geometry == self.geometry else self.build(geometry)[0]).compile()
            plan.name = f"{type(self).__name__} at {geometry}"
        self._plans[geometry] = plan
        self._plans.move_to_end(geometry)
        while len(set(map(id, self._plans.values()))) > PLANS_KEPT or len(self._plans) > 4 * PLANS_KEPT:
            self._plans.popitem(last=False)
        return plan

    def explain(self, geometry=None) -> str:
        """The compiled plan, step by step (`kernels.plan.Plan.explain`)."""
        return self.plan(geometry).explain()

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

    def to_torch(self, seed=0, dtype=np.float64):
        """This model as a `torch.nn.Module` whose parameters start at ``init(seed, dtype)``
        (`interactions.torch_module`)."""
        from ..torch_module import to_torch
        return to_torch(self, seed, dtype)

    # ------------------------------------------------------------------ numerics
    def apply(self, params, x):
        """The model on a batch of inputs (autograd arrays welcome)."""
        return self.plan(self.geometry_of(x), (x, params))(x, params)
