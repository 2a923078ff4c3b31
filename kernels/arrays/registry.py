"""The engines, listed once (`ENGINES`), and the one answer to which engine an array belongs to (`owner`).

Engines run plans and kernels, one array library each: numpy with autograd (the default, core install), torch
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

from typing import Any

import numpy as np

from .engine import Engine
from .jax_engine import JAX
from .numpy_engine import NUMPY
from .torch_engine import TORCH

#: Every engine, by name: the one place a new engine is added.  `owner` asks them in this order whether an array
#: is theirs, numpy last (it takes numbers and anything else).
ENGINES = {engine.name: engine for engine in (TORCH, JAX, NUMPY)}


#: Array types whose engine `owner` remembers (types, not arrays: a handful in any program).
TYPES_KEPT = 64
_OWNERS: dict[type, Engine] = {}


def owner(array: Any) -> Engine:
    """The engine whose library `array` belongs to: torch, JAX, or numpy (numpy and autograd arrays, numbers and
    anything else), remembered by the array's type."""
    kind = type(array)
    engine = _OWNERS.get(kind)
    if engine is None:
        engine = next(e for e in ENGINES.values() if e is NUMPY or e.owns(array))
        if len(_OWNERS) < TYPES_KEPT:
            _OWNERS[kind] = engine
    return engine


def engine_of(arrays: dict[str, Any]) -> Engine:
    """The engine of a call's arrays ({argument name: array}), by the rule of the module docstring."""
    found: Engine = NUMPY
    first: str | None = None
    place: Any = None
    for argument, array in arrays.items():
        engine = owner(array)
        if engine is NUMPY:
            continue
        if first is None:
            found, first, place = engine, argument, engine.device(array)
        elif engine is not found:
            raise TypeError(f"{first}, {argument}: expected arrays of one library (numpy ones are converted), got "
                            f"{found.name} ({first}) and {engine.name} ({argument})")
        elif place is not None and engine.device(array) != place:
            raise ValueError(f"{first}, {argument}: expected arrays on one device, got {place} ({first}) and "
                             f"{engine.device(array)} ({argument})")
        why = engine.unusable(array)
        if why is not None:
            raise TypeError(f"{argument}: expected a dense {engine.name} array with values, got {why}")
    return found


def adopt(arrays: dict[str, Any]) -> tuple[Engine, dict[str, Any]]:
    """``(engine, arrays)``: the engine of the arrays ({name: array or None}), and the arrays with the numpy ones
    converted into its library (the rule of the module docstring)."""
    engine = engine_of({name: a for name, a in arrays.items() if a is not None})
    if engine is NUMPY:
        return engine, arrays
    like = next(a for a in arrays.values() if a is not None and engine.owns(a))
    return engine, {name: a if a is None or engine.owns(a) else engine.convert(np.asarray(a), like)
                    for name, a in arrays.items()}
