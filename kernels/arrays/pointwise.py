"""Pointwise maps of the plans, numeric: applied coefficient by coefficient, on any engine (`kernels.arrays.registry`;
numpy with autograd by default).

>>> import numpy as np
>>> sorted(FUNCTIONS)
['exp', 'relu', 'sigmoid', 'silu', 'softplus', 'tanh']
>>> FUNCTIONS["sigmoid"](np.array([0.0])), FUNCTIONS["softplus"](np.array([0.0]))
(array([0.5]), array([0.69314718]))
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .registry import Engine


def _engine(engine: Engine | None) -> Engine:
    if engine is None:
        from .registry import NUMPY
        return NUMPY
    return engine


def sigmoid(x: Any, engine: Engine | None = None) -> Any:
    """1 / (1 + exp(-x)), through tanh (no overflow for large |x|)."""
    return 0.5 * (_engine(engine).tanh(0.5 * x) + 1.0)


def softplus(x: Any, engine: Engine | None = None) -> Any:
    """log(1 + exp(x)), without overflow."""
    e = _engine(engine)
    return e.logaddexp(e.zeros((), x), x)


def silu(x: Any, engine: Engine | None = None) -> Any:
    """x sigmoid(x)."""
    return x * sigmoid(x, engine)


def relu(x: Any, engine: Engine | None = None) -> Any:
    """max(x, 0)."""
    e = _engine(engine)
    return e.maximum(x, e.zeros((), x))


def exp(x: Any, engine: Engine | None = None) -> Any:
    """e^x."""
    return _engine(engine).exp(x)


def tanh(x: Any, engine: Engine | None = None) -> Any:
    """tanh x."""
    return _engine(engine).tanh(x)


#: Name -> function(x, engine=None), for the `Map` step of a plan.
FUNCTIONS: dict[str, Callable[[Any, Engine | None], Any]] = {"sigmoid": sigmoid, "softplus": softplus, "silu": silu, "exp": exp, "relu": relu, "tanh": tanh}
