"""The lowering strategies, one module each.  Every module has ``NAME`` and ``unsupported(factor)`` (why it
cannot represent a factor, or None).  identify and dense factors form the leaf (`leaf`); gather and codegen
factors are levels around it, each consuming its own axis and multiplying through the level inside.

>>> sorted(STRATEGIES)
['codegen', 'dense', 'gather', 'identify']
"""
from __future__ import annotations

import math

from . import codegen, dense, gather, identify

STRATEGIES = {module.NAME: module for module in (identify, gather, codegen, dense)}

#: Strategies that are levels around the leaf, outermost first (the FFT is gather's, and goes first).
LEVELS = (codegen.NAME, gather.NAME)


def leaf(parts, dtype):
    """The leaf for `parts`, a list of (factor, strategy name) with strategy identify or dense."""
    if all(name == identify.NAME and not identify.scaled(factor) for factor, name in parts):
        return identify.Elementwise(math.prod(factor.shape[0] for factor, _ in parts))
    return dense.Contraction(parts, dtype)


def level(factor, name: str, axis: int, inner):
    """The level of strategy `name` for `factor` on `axis` around `inner`."""
    return gather.level(factor, axis, inner) if name == gather.NAME else codegen.Codegen(factor, axis, inner)


def nesting(factor, name: str) -> int:
    """Sort key of levels: the FFT outermost (one transform for all), then codegen, then gather."""
    return -1 if name == gather.NAME and gather.uses_fourier(factor) else LEVELS.index(name)
