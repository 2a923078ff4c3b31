"""Numpy constants made once per size, for `Engine.constant`, which converts an array onto a device once and keeps
it by identity: a fresh array at each call would be copied to the device at each call, and on a GPU such a copy
from the host waits for every kernel queued before it (torch synchronises the stream after a copy from pageable
memory).

>>> counting(4)
array([0, 1, 2, 3])
>>> counting(4) is counting(4), counting(3, "float64").dtype, counting(4).flags.writeable
(True, dtype('float64'), False)
"""
from __future__ import annotations

import functools

import numpy as np


def frozen(array: np.ndarray) -> np.ndarray:
    """`array`, made read-only: a table of the library's own that an engine may keep converted on a device
    (`Engine.constant` keeps it by identity, so a table changed in place would keep its old values there).

    >>> frozen(np.arange(3)).flags.writeable
    False
    """
    array.flags.writeable = False
    return array


@functools.lru_cache(maxsize=128)
def counting(count: int, dtype: str = "int64") -> np.ndarray:
    """0, 1, ..., count - 1 in `dtype`, one read-only array per call signature."""
    return frozen(np.arange(count, dtype=dtype))


@functools.lru_cache(maxsize=256)
def placement(support: tuple[int, ...], size: int) -> np.ndarray:
    """For an axis of `size`: at the positions `support`, their order in it, and elsewhere ``len(support)`` (the
    index of a zero slice appended to the entries), one read-only array per (support, size).

    >>> placement((1, 3), 5)
    array([2, 0, 2, 1, 2])
    """
    source = np.full(size, len(support))
    source[list(support)] = np.arange(len(support))
    return frozen(source)
