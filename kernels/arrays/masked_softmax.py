"""`softmax`: the masked softmax as a public function: exp(x) normalised along one axis over the entries a mask
keeps, the others left out (they come out exactly 0 whatever they hold, a NaN or an infinity included; a row the
mask empties entirely comes out 0).  It checks its arguments, then runs the engine's softmax (`Engine.softmax`:
torch's and JAX's own kernels, and `kernels.arrays.normalisation` on numpy), differentiable by the engine's
autodiff.

>>> import numpy as np
>>> x = np.array([[1.0, np.nan], [0.0, 0.0]])
>>> keep = np.array([[True, False], [True, True]])
>>> softmax(x, axis=-1, mask=keep)
array([[1. , 0. ],
       [0.5, 0.5]])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .checks import check_arrays
from .engine import Engine
from .example_sizes import broadcast_shapes
from .registry import owner
from .traced_entry import traced_as_operator


@traced_as_operator
def softmax(x: Any, axis: int = -1, mask: Any = None, out: np.ndarray | None = None) -> Any:
    """exp(x) / sum exp(x) along `axis`, over the entries where `mask` (a bool array of x's library, broadcasting
    to x) is True; `out` (x itself, say) receives the result where x is a numpy array normalised along its last
    axis with nothing traced."""
    engine = owner(x)
    _check(engine, x, axis, mask)
    return engine.softmax(x, axis, mask, out)


def _check(engine: Engine, x: Any, axis: int, mask: Any) -> None:
    """Floats, an axis of x and a mask that broadcasts to x, or a TypeError / ValueError naming the argument."""
    if not hasattr(x, "shape") or engine.dtype(x).kind != "f":
        raise TypeError(f"x: expected an array of floats, got {getattr(x, 'dtype', type(x).__name__)}")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -len(x.shape) <= axis < len(x.shape):
        raise ValueError(f"axis: expected an axis of x (shape {tuple(x.shape)}), got {axis!r}")
    check_arrays({"mask": mask}, "b", "bools", optional=("mask",))
    if mask is not None and not _broadcasts_to(tuple(mask.shape), tuple(x.shape)):
        raise ValueError(f"mask: expected a shape that broadcasts to x's {tuple(x.shape)}, got "
                         f"{tuple(getattr(mask, 'shape', ()))}")


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        return broadcast_shapes(shape, target) == target
    except ValueError:
        return False
