"""Checking kernel operands: array library, dtype and algebra axes, with errors that name the argument.

>>> import numpy as np
>>> operand(np.ones((2, 4)), "x", (3,), np.float64, "batch-first", "diagonal(3)")
Traceback (most recent call last):
...
ValueError: x: axis -1 has size 4, but diagonal(3) needs 3 there (expected shape (..., 3)), got shape (2, 4)
>>> operand(np.ones(3, dtype=int), "y", (3,), np.float64, "batch-first", "diagonal(3)")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
TypeError: y: expected real floating-point values (the kernel computes in float64), got int64; ...
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from autograd.tracer import Box, getval
from numpy.typing import DTypeLike

from .precision import is_half
from .registry import owner

LAYOUTS = ("batch-first", "component-major")


def check_arrays(arrays: Mapping[str, Any], kinds: str = "iufc", what: str = "numbers",
                 optional: Collection[str] = ()) -> None:
    """A TypeError naming the first of `arrays` ({argument: value}) that is not an array of numpy, autograd,
    torch or JAX whose dtype kind is one of `kinds` (`what` says so in words); the `optional` ones may be None."""
    for argument, value in arrays.items():
        if value is None and argument in optional:
            continue
        if array_kind(value) not in kinds:
            raise TypeError(f"{argument}: expected an array of {what}, got "
                            f"{getattr(value, 'dtype', type(value).__name__)!s:.60}")


def array_kind(value: Any) -> str:
    """The kind of the numpy dtype the library computes `value` in (an array of numpy, autograd, torch or JAX): "f"
    for torch's and JAX's bfloat16 (float32 there), "V" for the dtypes numpy lacks or only ml_dtypes names
    (float8, complex32, numpy's bfloat16), "O" for anything but an array.

    >>> array_kind(np.ones(2, np.float16)), array_kind(np.arange(2)), array_kind([1.0])
    ('f', 'i', 'O')
    """
    if not (hasattr(value, "shape") and hasattr(value, "dtype")):
        return "O"
    try:
        found = owner(value).dtype(value)
    except TypeError:                      # a dtype numpy does not know
        return "V"
    return "V" if found.isbuiltin == 2 else found.kind    # 2: a dtype of ml_dtypes'; 0 includes unpickled float64


def check_dtype(dtype: DTypeLike) -> np.dtype:
    """The dtype a kernel computes in: numpy.float32 or numpy.float64, else a TypeError naming ``dtype``."""
    try:
        found = np.dtype(dtype)
    except (TypeError, ValueError):                    # ValueError: a string numpy cannot parse, e.g. "1/0"
        found = None
    if found not in (np.float32, np.float64):
        raise TypeError(f"dtype: expected numpy.float32 or numpy.float64, got {dtype!r:.60}" if found is None else
                        f"dtype: expected numpy.float32 or numpy.float64, got {found}")
    return found


def check_layout(layout: object) -> str:
    """One of `LAYOUTS`, or a ValueError naming ``layout``."""
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ValueError(f"layout: expected one of {', '.join(map(repr, LAYOUTS))}, got {layout!r:.60}")
    return layout


def library(value: Any) -> str:
    """The library of `value`: "numpy" (numpy arrays, numbers, nested lists), "autograd" (an array autograd
    traces), an engine's name, or the top-level module of another library's array type.

    >>> library(np.ones(2)), library([1.0, 2.0]), library(3.0)
    ('numpy', 'numpy', 'numpy')
    """
    if isinstance(value, Box):
        return "autograd"
    engine = owner(value)
    if engine.name != "numpy":
        return engine.name
    if isinstance(value, (np.ndarray, np.generic)) or not (hasattr(value, "shape") and hasattr(value, "dtype")):
        return "numpy"
    return type(value).__module__.split(".")[0]


#: (array type, dtype) -> the kind `operand` takes such arrays as, for those met (a dtype alone does not say:
#: ml_dtypes' bfloat16 is numpy's and JAX's alike).
_KINDS: dict[tuple[type, Any], str] = {}


def _kind(raw: Any) -> str:
    """`array_kind` of `raw`, with half precision of any library (numpy's bfloat16 too) taken as "f"; kept per
    type and dtype, since a kernel checks its operands on every call."""
    key: tuple[type, Any] | None = (type(raw), raw.dtype)
    try:
        kind = _KINDS.get(key)  # type: ignore[arg-type]  # not None here
    except TypeError:                      # an unhashable stand-in for a dtype: not kept
        key = kind = None
    if kind is None:
        kind = "f" if is_half(raw.dtype) else array_kind(raw)
        if key is not None and len(_KINDS) < 64:
            _KINDS[key] = kind
    return kind


def expected_shape(dims: Sequence[int], layout: str) -> str:
    inner = ", ".join(map(str, dims))
    return f"(..., {inner})" if layout == LAYOUTS[0] else f"({inner}, ...)"


#: How torch and JAX operands compute (in their own dtype, unlike numpy's, which take the kernel's) and convert.
_CONVERSIONS = {"torch": ("torch computes in the tensors' dtype", "{0}.float() or {0}.double()"),
                "jax": ("JAX computes in the arrays' dtype", "{0}.astype(jnp.float32)")}


def operand(value: Any, argument: str, dims: Sequence[int], dtype: DTypeLike, layout: str, name: str) -> Any:
    """`value` checked (numpy input as an array of `dtype`); `dims` are the algebra axes it must carry."""
    source = "numpy" if type(value) is np.ndarray else library(value)
    try:
        array = np.asarray(value) if source == "numpy" else value
    except ValueError as error:                          # a ragged list
        raise TypeError(f"{argument}: expected an array of real floating-point values, got a ragged "
                        f"{type(value).__name__} ({error})") from None
    raw = array if source == "numpy" else getval(array)
    found = getattr(raw, "dtype", None)
    if found is None or _kind(raw) != "f":
        computes, how = _CONVERSIONS.get(source, (f"the kernel computes in {np.dtype(dtype).name}",
                                                  "{0}.astype(float)"))
        raise TypeError(f"{argument}: expected real floating-point values ({computes}), got "
                        f"{found or type(raw).__name__}; convert explicitly, e.g. {how.format(argument)}")
    shape, count = tuple(raw.shape), len(dims)
    algebra_axes = shape[len(shape) - count:] if layout == LAYOUTS[0] else shape[:count]
    if len(shape) < count:
        raise ValueError(f"{argument}: expected at least {count} axes, shape {expected_shape(dims, layout)} for "
                         f"{name}, got shape {shape}")
    if algebra_axes != tuple(dims):
        axis, size, needed = next((a, n, d) for a, n, d in zip(
            range(-count, 0) if layout == LAYOUTS[0] else range(count), algebra_axes, dims) if n != d)
        raise ValueError(f"{argument}: axis {axis} has size {size}, but {name} needs {needed} there "
                         f"(expected shape {expected_shape(dims, layout)}), got shape {shape}")
    return array.astype(dtype, copy=False) if source == "numpy" else array


def broadcast(first: tuple[int, ...], second: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's broadcast of two shapes (ValueError when they do not broadcast)."""
    if first == second:
        return first
    rank = max(len(first), len(second))
    first, second = (1,) * (rank - len(first)) + first, (1,) * (rank - len(second)) + second
    if any(a != b and 1 not in (a, b) for a, b in zip(first, second)):
        raise ValueError(f"shapes {first} and {second} do not broadcast")
    return tuple(b if a == 1 else a for a, b in zip(first, second))


def batch_shape(x: Any, y: Any, count: int, layout: str) -> tuple[int, ...]:
    """The broadcast batch shape of checked operands x and y with `count` algebra axes each."""
    return broadcast_batches([tuple(getval(a).shape) for a in (x, y)], count, layout)


def broadcast_batches(shapes: Sequence[tuple[int, ...]], count: int, layout: str) -> tuple[int, ...]:
    """The broadcast batch shape of operands x and y of `shapes` with `count` algebra axes each (`batch_shape`).

    >>> broadcast_batches([(5, 1, 4), (3, 4)], 1, "batch-first")
    (5, 3)
    >>> broadcast_batches([(5, 4), (3, 4)], 1, "batch-first")
    Traceback (most recent call last):
    ...
    ValueError: x, y: batch axes (5,) and (3,) do not broadcast (x has shape (5, 4), y has shape (3, 4))
    """
    batches = [s[:len(s) - count] if layout == LAYOUTS[0] else s[count:] for s in shapes]
    try:
        return broadcast(*batches)
    except ValueError:
        raise ValueError(f"x, y: batch axes {batches[0]} and {batches[1]} do not broadcast (x has shape "
                         f"{shapes[0]}, y has shape {shapes[1]})") from None
