"""Pointwise maps of the plans, numeric: applied coefficient by coefficient (numpy and autograd arrays).

>>> import numpy as np
>>> sorted(FUNCTIONS)
['exp', 'relu', 'sigmoid', 'silu', 'softplus', 'tanh']
>>> FUNCTIONS["sigmoid"](np.array([0.0])), FUNCTIONS["softplus"](np.array([0.0]))
(array([0.5]), array([0.69314718]))
"""
from __future__ import annotations

import autograd.numpy as anp


def sigmoid(x):
    """1 / (1 + exp(-x)), through tanh (no overflow for large |x|)."""
    return 0.5 * (anp.tanh(0.5 * x) + 1.0)


def softplus(x):
    """log(1 + exp(x)), without overflow."""
    return anp.logaddexp(0.0, x)


def silu(x):
    """x sigmoid(x)."""
    return x * sigmoid(x)


def relu(x):
    """max(x, 0)."""
    return anp.maximum(x, 0.0)


#: Name -> function, for the `Map` step of a plan.
FUNCTIONS = {"sigmoid": sigmoid, "softplus": softplus, "silu": silu, "exp": anp.exp, "relu": relu,
             "tanh": anp.tanh}
