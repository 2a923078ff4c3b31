"""Sizes as numbers where torch.export traces a dynamic batch.

``torch.export.export(module, (x,), dynamic_shapes=...)`` traces a batch axis as a symbol (s0) whose value in the
example input is its hint.  The library decides on sizes in Python: a strategy, the chunks a memory limit cuts, the
blocks of a scan, the keys of its caches.  Where a size is a symbol it decides at the example's value, so no
decision pins the symbol: the program computes any batch with the choices made for the example (right for every
batch, priced for that one), and ``kernels.MEMORY_LIMIT`` holds for the example's batch only.

>>> example_shape((2, 3)), symbolic((2, 3))
((2, 3), False)
"""
from __future__ import annotations

import sys
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

#: torch's shape environment of an export -> the symbols its calls took as batches (`batches_only`).
_BATCHES: weakref.WeakKeyDictionary[Any, set[Any]] = weakref.WeakKeyDictionary()


def symbolic(shape: Iterable[Any]) -> bool:
    """Whether a size of `shape` is a symbol (a torch ``SymInt``), not a number."""
    return any(not isinstance(size, int) for size in shape)


def example_shape(shape: Iterable[Any]) -> tuple[int, ...]:
    """`shape` with each symbol at its example's value (its hint; a number stays as it is)."""
    return tuple(size if isinstance(size, int) else example_size(size) for size in shape)


def example_size(size: Any) -> int:
    """`size` as a number: a torch symbol's example value, read without a guard (``int`` would pin the symbol)."""
    hint = getattr(getattr(size, "node", None), "hint", None)
    return int(size if hint is None else hint)


def broadcast_shapes(*shapes: tuple[Any, ...]) -> tuple[Any, ...]:
    """numpy's broadcast of `shapes`; torch's where a size is a symbol (numpy's would pin it to its example value).

    >>> broadcast_shapes((5, 1), (3,))
    (5, 3)
    """
    if any(symbolic(shape) for shape in shapes):
        return tuple(sys.modules["torch"].broadcast_shapes(*shapes))
    return tuple(np.broadcast_shapes(*shapes))


def batches_only(shapes: Sequence[tuple[Any, ...]], batch_axis: int = 0) -> bool:
    """Whether every symbol in `shapes` (a call's operands) is a batch: a symbol of axis `batch_axis` (the first,
    or the second of a time-first scan) of an operand with axes after it, in this call or an earlier one of the
    same export (a time-first scan inside a model sees the model's batch).  A symbol elsewhere is taken for a
    length, which the library cannot follow.

    >>> batches_only([(2, 3)])
    True
    """
    symbols = [size for shape in shapes for size in shape if not isinstance(size, int)]
    if not symbols:
        return True
    batches = _BATCHES.setdefault(symbols[0].node.shape_env, set())
    batches.update(*(shape[batch_axis].node.expr.free_symbols for shape in shapes
                     if len(shape) > batch_axis + 1 and not isinstance(shape[batch_axis], int)))
    return all(size.node.expr.free_symbols <= batches for size in symbols)
