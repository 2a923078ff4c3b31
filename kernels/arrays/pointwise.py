"""Pointwise maps of the plans, numeric: applied coefficient by coefficient by an engine's operations (numpy with
autograd, torch, JAX: `kernels.arrays.engine`).

>>> import numpy as np
>>> from product_interactions.kernels.arrays import NUMPY
>>> sorted(FUNCTIONS)
['exp', 'relu', 'sigmoid', 'silu', 'softplus', 'tanh']
>>> FUNCTIONS["sigmoid"](np.array([0.0]), NUMPY), FUNCTIONS["softplus"](np.array([0.0]), NUMPY)
(array([0.5]), array([0.69314718]))
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Engine


def sigmoid(x: Any, engine: Engine) -> Any:
    """1 / (1 + exp(-x)), through tanh (no overflow for large |x|)."""
    return 0.5 * (engine.tanh(0.5 * x) + 1.0)


def softplus(x: Any, engine: Engine) -> Any:
    """log(1 + exp(x)), without overflow."""
    return engine.logaddexp(engine.zeros((), x), x)


def silu(x: Any, engine: Engine) -> Any:
    """x sigmoid(x)."""
    return x * sigmoid(x, engine)


def relu(x: Any, engine: Engine) -> Any:
    """max(x, 0)."""
    return engine.maximum(x, engine.zeros((), x))


def exp(x: Any, engine: Engine) -> Any:
    """e^x."""
    return engine.exp(x)


def tanh(x: Any, engine: Engine) -> Any:
    """tanh x."""
    return engine.tanh(x)


#: Name -> function(x, engine), for the `Map` step of a plan.
FUNCTIONS: dict[str, Callable[[Any, Engine], Any]] = {"sigmoid": sigmoid, "softplus": softplus, "silu": silu,
                                                      "exp": exp, "relu": relu, "tanh": tanh}
