"""`with_jax_defaults`: the library's entry points on JAX arrays.

They run with JAX's default rank and dtype promotion, whatever strictness the caller chose for their own code
(``jax_numpy_rank_promotion="raise"``, ``jax_numpy_dtype_promotion="strict"``, which some codebases set): the
library's operations broadcast and promote as numpy's do.  Before, every architecture failed under the first (and
the diagonal SSM under the second).

Under ``jax.export`` with a symbolic shape, they follow a symbolic batch (deciding at
`example_sizes.JAX_EXAMPLE_SIZE`) and refuse, naming the argument, a symbol on any other axis: the library builds
its plans, constants and scans per length, so a symbolic length would be a program for one length only.
"""
from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from .example_sizes import length_axis
from .torch_engine import torch_compiling

F = TypeVar("F", bound=Callable[..., Any])


def with_jax_defaults(function: F, batch_axis: int | None = 0) -> F:
    """`function` run with JAX's default promotion where the caller chose a stricter one; as it is where JAX is not
    imported, runs with its defaults, or torch.compile traces the call (which then involves no JAX array).  A JAX
    symbolic size of an array argument off axis `batch_axis` (None: any axis is a batch) is refused
    (`refuse_symbolic_lengths`).

    >>> import jax, jax.numpy as jnp
    >>> add = with_jax_defaults(lambda a, b: a + b)
    >>> with jax.numpy_rank_promotion("raise"):
    ...     add(jnp.ones((2, 3)), jnp.ones(3)).shape
    (2, 3)
    """
    @functools.wraps(function)
    def entry(*arguments: Any, **options: Any) -> Any:
        jax = None if torch_compiling() else sys.modules.get("jax")
        if jax is None:
            return function(*arguments, **options)
        if batch_axis is not None:
            tracer = jax.core.Tracer
            for a in (*arguments, *options.values()) if options else arguments:   # a loop: no generator's call
                if isinstance(a, tracer):                   # symbols live only on traced arrays
                    refuse_symbolic_lengths(function, arguments, options, batch_axis, tracer)
                    break
        if jax.config.jax_numpy_rank_promotion == "allow" and jax.config.jax_numpy_dtype_promotion == "standard":
            return function(*arguments, **options)
        with jax.numpy_rank_promotion("allow"), jax.numpy_dtype_promotion("standard"):
            return function(*arguments, **options)
    return entry  # type: ignore[return-value]


def refuse_symbolic_lengths(function: Callable[..., Any], arguments: tuple[Any, ...], options: dict[str, Any],
                            batch_axis: int, tracer: Any) -> None:
    """A ValueError naming the argument of `function` whose JAX array (a `tracer`) has a symbolic size
    (``jax.export``) other than a batch on axis `batch_axis` (`example_sizes.length_axis`, as torch.export's);
    nothing where there is none."""
    for index, a in enumerate((*arguments, *options.values())):
        if isinstance(a, tracer):
            shape = tuple(a.shape)
            axis = length_axis(shape, batch_axis)
            if axis is not None:
                names = [*inspect.signature(function).parameters][:len(arguments)] + [*options]
                name = names[index] if index < len(names) else f"argument {index}"
                raise ValueError(f"{name}: a symbolic size ({shape[axis]}) on axis {axis} of shape {shape}; the "
                                 f"library follows jax.export's symbolic batch (axis {batch_axis}) only, since it "
                                 f"builds its plans, constants and scans per length: export with that axis fixed")
