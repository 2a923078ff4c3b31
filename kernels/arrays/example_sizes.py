"""Sizes as numbers where an export traces a dynamic batch.

``torch.export.export(module, (x,), dynamic_shapes=...)`` traces a batch axis as a symbol (s0) whose value in the
example input is its hint; ``jax.export`` with a symbolic shape ("b, ...") traces one with no value at all.  The
library decides on sizes in Python: a strategy, the chunks a memory limit cuts, the blocks of a scan, the keys of its
caches.  Where a size is a symbol it decides at an example value, so no decision pins the symbol: torch's example's,
or `JAX_EXAMPLE_SIZE` for JAX's.  The program computes any batch with the choices made for the example (right for
every batch, priced for that one), and ``kernels.MEMORY_LIMIT`` holds for the example's batch only.

>>> example_shape((2, 3)), symbolic((2, 3))
((2, 3), False)
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

#: The value a JAX symbolic size (``jax.export``'s shape polymorphism, which gives none) is decided at.
JAX_EXAMPLE_SIZE = 1024


def symbolic(shape: Iterable[Any]) -> bool:
    """Whether a size of `shape` is a symbol (a torch ``SymInt``), not a number."""
    for size in shape:                                  # a loop: a generator costs a call its microsecond
        if not isinstance(size, int):
            return True
    return False


def example_shape(shape: Iterable[Any]) -> tuple[int, ...]:
    """`shape` with each symbol at its example's value (its hint; a number stays as it is)."""
    shape = tuple(shape)
    return tuple(map(example_size, shape)) if symbolic(shape) else shape


def example_size(size: Any) -> int:
    """`size` as a number: a torch symbol's example value, read without a guard (``int`` would pin the symbol);
    `JAX_EXAMPLE_SIZE` for a JAX symbol or an expression of them."""
    if isinstance(size, int):
        return size
    if jax_symbol(size):
        return JAX_EXAMPLE_SIZE
    hint = getattr(getattr(size, "node", None), "hint", None)
    return int(size if hint is None else hint)


def jax_symbol(size: Any) -> bool:
    """Whether `size` is a JAX symbolic size (``jax.export``'s shape polymorphism), or an expression of them."""
    return type(size).__module__.startswith("jax")


def broadcast_shapes(*shapes: tuple[Any, ...]) -> tuple[Any, ...]:
    """numpy's broadcast of `shapes`; where a size is a symbol, its library's (numpy's would pin torch's to its
    example value, and cannot take JAX's), which raises numpy's ValueError where they do not broadcast.

    >>> broadcast_shapes((5, 1), (3,))
    (5, 3)
    """
    if not any(map(symbolic, shapes)):
        return tuple(np.broadcast_shapes(*shapes))
    torch = sys.modules.get("torch")
    if torch is not None and any(isinstance(size, torch.SymInt) for shape in shapes for size in shape):
        try:
            return tuple(torch.broadcast_shapes(*shapes))
        except RuntimeError as error:                       # numpy's error, as the numbers would give
            raise ValueError(str(error)) from None
    return tuple(sys.modules["jax"].numpy.broadcast_shapes(*shapes))       # JAX's error is a ValueError


def batches_only(shapes: Sequence[tuple[Any, ...]], batch_axis: int | None = 0) -> bool:
    """Whether every symbol in `shapes` (a call's operands) is a batch (`length_axis`) with an example value: one
    without is a size read from data (after boolean indexing).

    >>> batches_only([(2, 3)])
    True
    """
    for shape in shapes:
        if length_axis(shape, batch_axis) is not None:
            return False
        for size in shape:
            if not isinstance(size, int) and size.node.hint is None:
                return False
    return True


def length_axis(shape: tuple[Any, ...], batch_axis: int | None = 0) -> int | None:
    """The first axis of `shape` (an operand's) whose size is a symbol that is no batch, which the library takes for
    a length and cannot follow; None where there is none.  A batch is on axis `batch_axis` (the first; the second of
    a time-first scan) of an operand with axes after it, or on any axis for None (a product kernel: its leading
    axes are all batch).

    >>> length_axis((2, 3)), length_axis((2, 3), None)
    (None, None)
    """
    if batch_axis is None:
        return None
    for axis, size in enumerate(shape):
        if not isinstance(size, int) and (axis != batch_axis or len(shape) <= batch_axis + 1):
            return axis
    return None
