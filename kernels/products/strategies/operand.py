"""How a factor enters a plan's contraction, for the strategies that need no level of their own there.

A plan (`kernels.plans.builder`) multiplies two values factor by factor inside one lazy contraction.  A strategy
that can put its factor there declares, besides its `Kernel` lowering:

* ``operand_unsupported(factor)``: why it cannot, or None;
* ``operand_cost(factor)``: its `kernels.products.cost.Cost` per batch row there;
* ``operand(factor)``: one of the forms below, for the factor restricted to the components the two values hold
  (`Factor.restricted`: rows, columns and outputs renumbered from 0).

A strategy without them (fft, codegen, graded, compiled, scatter) runs the whole product of a plan as a level,
through a `Kernel` step: so every strategy serves both `kernels.product` and compiled expressions, and
`kernels.products.select.in_plan` chooses among them by the same costs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Shared:
    """The factor's axis is one index shared by both values and the result (identify); `coefficients` scale its
    components (None: all 1)."""
    coefficients: np.ndarray | None


@dataclass(frozen=True)
class Block:
    """A constant block of the structure constants over (x components, y components, outputs) joins the
    contraction (dense); `outputs` are the output components its last axis holds (those with a nonzero term)."""
    values: np.ndarray
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class Gathered:
    """The y side is gathered along the factor's axis, one y component per (x component r, output m): ``index[r,
    m]``, times ``weight[r, m]``, left out where not ``valid[r, m]`` (gather)."""
    index: np.ndarray
    weight: np.ndarray
    valid: np.ndarray
