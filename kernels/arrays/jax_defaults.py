"""`with_jax_defaults`: the library's entry points run with JAX's default rank and dtype promotion, whatever
strictness the caller chose for their own code (``jax_numpy_rank_promotion="raise"``,
``jax_numpy_dtype_promotion="strict"``, which some codebases set): the library's operations broadcast and promote as
numpy's do.  Before, every architecture failed under the first (and the diagonal SSM under the second).
"""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from .torch_engine import torch_compiling

F = TypeVar("F", bound=Callable[..., Any])


def with_jax_defaults(function: F) -> F:
    """`function` run with JAX's default promotion where the caller chose a stricter one; as it is where JAX is not
    imported, runs with its defaults, or torch.compile traces the call (which then involves no JAX array).

    >>> import jax, jax.numpy as jnp
    >>> add = with_jax_defaults(lambda a, b: a + b)
    >>> with jax.numpy_rank_promotion("raise"):
    ...     add(jnp.ones((2, 3)), jnp.ones(3)).shape
    (2, 3)
    """
    @functools.wraps(function)
    def entry(*arguments: Any, **options: Any) -> Any:
        jax = None if torch_compiling() else sys.modules.get("jax")
        if jax is None or jax.config.jax_numpy_rank_promotion == "allow" and \
                jax.config.jax_numpy_dtype_promotion == "standard":
            return function(*arguments, **options)
        with jax.numpy_rank_promotion("allow"), jax.numpy_dtype_promotion("standard"):
            return function(*arguments, **options)
    return entry  # type: ignore[return-value]
