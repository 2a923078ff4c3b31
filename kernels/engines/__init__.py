"""Engines run plans and kernels, one array library each: numpy with autograd (the default, core install), torch
and JAX (extras).  Results come back in the inputs' library, dtype and device.

The rule for mixed inputs: the non-numpy arrays decide the engine, and must all be of one library and on one
device; numpy arrays (parameters, constants) are then converted into it, on that device and in the floating dtype
of the first such array.  Arrays of two non-numpy libraries, or on two devices, are refused with an error naming
them.  Nothing is converted to numpy and back.

>>> import numpy as np
>>> engine_of({"x": np.ones(3)}).name
'numpy'
"""
from __future__ import annotations

import numpy as np

from .base import Engine
from .jax_engine import JAX
from .numpy_engine import NUMPY
from .torch_engine import TORCH

#: Every engine, by name.
ENGINES = {engine.name: engine for engine in (NUMPY, TORCH, JAX)}

__all__ = ["ENGINES", "Engine", "JAX", "NUMPY", "TORCH", "adopt", "engine_of"]


def engine_of(arrays: dict) -> Engine:
    """The engine of a call's arrays ({argument name: array}), by the rule of the module docstring."""
    found = {}
    for argument, array in arrays.items():
        for engine in (TORCH, JAX):
            if engine.owns(array):
                found.setdefault(engine.name, argument)
    if len(found) > 1:
        described = " and ".join(f"{name} ({argument})" for name, argument in found.items())
        raise TypeError(f"{', '.join(found.values())}: expected arrays of one library (numpy ones are converted), "
                        f"got {described}")
    engine = ENGINES[next(iter(found))] if found else NUMPY
    devices = {}
    for argument, array in arrays.items():
        device = engine.device(array) if engine.owns(array) else None
        if device is not None:
            devices.setdefault(device, argument)
    if len(devices) > 1:
        described = " and ".join(f"{device} ({argument})" for device, argument in devices.items())
        raise ValueError(f"{', '.join(devices.values())}: expected arrays on one device, got {described}")
    return engine


def adopt(arrays: dict):
    """``(engine, arrays)``: the engine of the arrays ({name: array or None}), and the arrays with the numpy ones
    converted into its library (the rule of the module docstring)."""
    engine = engine_of({name: a for name, a in arrays.items() if a is not None})
    if engine is NUMPY:
        return engine, arrays
    like = next(a for a in arrays.values() if a is not None and engine.owns(a))
    return engine, {name: a if a is None or engine.owns(a) else engine.convert(np.asarray(a), like)
                    for name, a in arrays.items()}
