"""`is_equivariant(operator, action)`: a numeric check of O(T_g x) = T_g O(x) on random group elements.

`operator` is any callable on arrays (one argument per input space, each of the action's shape, one axis per
tensor factor).  `action` is one `Action` (input and output spaces alike) or a tuple
``(input_1, ..., input_m, output)`` of actions of one group.  Group elements are random words in the generators,
and exp of random Lie-algebra elements for a Lie group (`elements.random_elements`); inputs are Gaussian.

>>> import numpy as np
>>> from product_interactions.algebra.symmetry import translations
>>> T = translations(5)
>>> is_equivariant(lambda x: np.roll(x, 1) + x ** 3, T), is_equivariant(lambda x: x * np.arange(5), T)
(True, False)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..algebra import check_count, check_seed, check_tolerance
from .action import Action, same_group
from .elements import random_elements

#: The most random group elements one check draws.
MAX_SAMPLES = 10_000


def _apply(matrix: np.ndarray, x: ArrayLike, shape: tuple[int, ...]) -> np.ndarray:
    return (matrix @ np.reshape(x, -1)).reshape(shape)


def is_equivariant(operator: Callable[..., ArrayLike], action: Action | Sequence[Action], samples: int = 8,
                   seed: int | np.random.Generator | None = 0, tolerance: float = 1e-8) -> bool:
    """True when ``operator(T x_1, ..., T x_m) == T operator(x_1, ..., x_m)`` for `samples` random group
    elements and inputs, up to ``tolerance`` (finite, >= 0) times the size of the output; `seed` is an int or a
    Generator.  An operator whose outputs are not finite raises a ValueError: equivariance cannot be judged."""
    if not callable(operator):
        raise TypeError(f"operator: expected a callable on arrays, got {type(operator).__name__}")
    if isinstance(action, Action):
        actions, names = (action, action), ["action", "action"]
    elif isinstance(action, (tuple, list)) and len(action) >= 2:
        actions, names = tuple(action), [f"action[{i}]" for i in range(len(action))]
    else:
        raise TypeError(f"action: expected an Action or a tuple (input actions..., output action), got "
                        f"{type(action).__name__} {action!r}")
    same_group(actions, names)
    check_count(samples, "samples")
    if samples > MAX_SAMPLES:
        raise ValueError(f"samples: expected at most MAX_SAMPLES = {MAX_SAMPLES:,} (a few dozen settle the question), "
                         f"got {samples:,}")
    tolerance = check_tolerance(tolerance, "tolerance")
    rng = check_seed(seed, allow_none=True)
    *inputs, output = actions
    for element in random_elements(actions, int(samples), rng):
        xs = [rng.standard_normal(a.shape) for a in inputs]
        value = np.asarray(operator(*xs), dtype=float)
        if value.size != output.dim:
            raise ValueError(f"operator: expected an output of shape {output.shape} (the output action's), got "
                             f"shape {value.shape}")
        expected = _apply(element[-1], value, output.shape)
        moved = np.asarray(operator(*(_apply(t, x, a.shape) for t, x, a in zip(element, xs, inputs))), dtype=float)
        if not (np.all(np.isfinite(value)) and np.all(np.isfinite(moved))):
            raise ValueError("operator: returned values that are not finite on random inputs; equivariance "
                             "cannot be judged")
        scale = max(1.0, float(np.max(np.abs(expected))))
        if np.max(np.abs(moved.reshape(output.shape) - expected)) > tolerance * scale:
            return False
    return True
