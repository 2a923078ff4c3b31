"""The Seq2Tens feature map: a sequence to the ordered product of its lifts in the truncated tensor algebra T(R^d).

Phi(x_1 .. x_L) = phi(x_1) . phi(x_2) ... phi(x_L) in T(R^d) truncated at `degree`, with the lift
phi(x) = (1, x, 0, ...) (``lift="linear"``): level m is the sum over increasing index tuples
i_1 < ... < i_m of x_{i_1} (x) ... (x) x_{i_m}.  ``lift="exp"`` lifts to exp(x) = (1, x, x^{(x)2}/2!, ...), and on
increments that is the path signature (`signature`); ``embedding_order=p`` lifts to sum_{k<=p} x^{(x)k}/k!.

The map is a Scan of the T(V) product: `seq2tens_expression` builds it from the nodes of `interactions`
(for `order` and `formula` on small cases); `seq2tens` computes it with the kernels of `kernels.scans.seq2tens`
("levelwise": one cumulative sum over time per level; "sequential": a loop over time; "parallel": an associative
prefix scan; "compiled": a C loop across paths, for numpy arrays and torch CPU tensors where a C compiler works;
"auto": `kernels.scans.seq2tens.choose_method`).  All give the same numbers and let autograd through.

Sequences are arrays (batch, length, d).  ``mask`` (batch, length) marks the points kept with 1 and the padding
with 0 (each row ones, then zeros); padding contributes the unit, so it changes no result.  Bad input raises
ValueError naming the argument.  A NaN or infinity at a kept point propagates as IEEE arithmetic says, to its own
sequence from its step on (the prefixes before it stay as they were); at padding it is ignored.

>>> import numpy as np
>>> x = np.array([[[1., 0.], [0., 2.], [1., 1.]]])
>>> levels = seq2tens(x, degree=2)
>>> levels[1][0], levels[2][0]                   # the sum of the points; sum_{i<j} x_i (x) x_j
(array([2., 3.]), array([[1., 3.],
       [2., 2.]]))
>>> flatten(levels).shape                        # levels 1 and 2, row-major
(1, 6)
>>> signature(np.array([[[0., 0.], [1., 2.]]]), depth=2)[0]     # exp of one increment: (x, x (x) x / 2)
array([1. , 2. , 0.5, 1. , 1. , 2. ])
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import sympy

from ..algebra import TensorAlgebra, position, tensor_algebra, tensor_product
from ..algebra.algebra import check_count, check_flag
from ..kernels import native
from ..kernels.arrays import (NUMPY, common_precision, example_shape, owner, torch_compiling, traced_as_operator,
                              with_jax_defaults)
from ..kernels.scans import seq2tens as seq2tens_kernels

from .expression import Expr, Scale, Signal
from .scan import Scan

def check_sequences(x: Any, mask: Any = None, dim: int | None = None) -> tuple[Any, Any]:
    """x as a real array (batch, length, d) (autograd, torch and JAX arrays pass through), and the mask as a
    numpy bool array, a bool array of x's library where it was given as one (its values read to be checked) or of
    its own library where its values cannot be read (traced: `_traced_mask`), or None.

    The mask must have shape (batch, length), hold only 0 and 1 (or bools), and be ones then zeros in each row.
    """
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        try:
            x = np.asarray(x)
        except ValueError as error:                     # a ragged list
            raise TypeError(f"x: expected a real array (batch, length, d), got a ragged {type(x).__name__} "
                            f"({error})") from None
    engine = owner(x)
    kind = engine.dtype(x).kind
    if engine is NUMPY and kind in "iub":
        x, kind = np.asarray(x, dtype=np.float64), "f"
    if kind != "f":
        raise TypeError(f"x: expected a real array, got dtype {x.dtype}")
    expected = "d" if dim is None else str(dim)
    shape = tuple(x.shape)
    if len(shape) != 3 or 0 in shape[1:] or (dim is not None and shape[2] != dim):
        raise ValueError(f"x: expected shape (batch, length, {expected}) with positive length and d, got {shape}")
    if mask is not None and hasattr(mask, "shape") and not owner(mask).readable(mask):     # fake ones too: export
        return _traced_mask(x, mask, shape)
    if mask is not None:
        given = mask
        try:
            mask = owner(mask).value(mask) if hasattr(mask, "shape") else np.asarray(mask)
        except ValueError as error:                     # a ragged list
            raise TypeError(f"mask: expected an array (batch, length) of zeros and ones, got a ragged "
                            f"{type(mask).__name__} ({error})") from None
        if mask.shape != shape[:2]:
            raise ValueError(f"mask: expected shape (batch, length) = {shape[:2]}, got {mask.shape}")
        if mask.dtype != bool and not np.all((mask == 0) | (mask == 1)):
            raise ValueError("mask: expected only zeros and ones (or bools)")
        mask = mask.astype(bool)
        if np.any(mask[:, 1:] & ~mask[:, :-1]):
            raise ValueError("mask: expected each row to be ones then zeros (padding at the end)")
        engine = owner(x)
        if hasattr(given, "shape") and owner(given) is engine is not NUMPY and engine.device(given) == engine.device(x):
            return x, given != 0                        # where it is: no copy back from the host
    return x, mask


def mask_like(x: Any, mask: Any) -> Any:
    """The mask of `check_sequences` as a bool array of x's library, for a call that uses it more than once: each
    use of a numpy mask beside a torch or JAX x would convert it anew, a copy from the host (on a GPU, one that
    waits for the device).

    >>> import torch
    >>> mask_like(torch.zeros(1, 2, 3), np.array([[True, False]]))
    tensor([[ True, False]])
    """
    return owner(x).convert(mask, x) if isinstance(mask, np.ndarray) and owner(x) is not NUMPY else mask


def _traced_mask(x: Any, mask: Any, shape: tuple[int, ...]) -> tuple[Any, Any]:
    """(x, mask) for a mask whose values cannot be read (``jax.jit``, ``vmap``, torch.func transforms): its shape
    and kind checked, its values not (a concrete mask's are), as a bool array of its library, x converted into that
    library where it is a plain numpy array."""
    engine = owner(mask)
    if tuple(mask.shape) != shape[:2]:
        raise ValueError(f"mask: expected shape (batch, length) = {shape[:2]}, got {tuple(mask.shape)}")
    if engine.dtype(mask).kind not in "biuf":
        raise TypeError(f"mask: expected an array of zeros and ones (or bools), got dtype {engine.dtype(mask)}")
    if owner(x) is not engine:
        x = engine.convert(np.asarray(x), None)
    return x, mask != 0


def zero_padding(x: Any, mask: Any) -> Any:
    """x with the padded points set to 0 (NaN padding included), so that they lift to the unit (`mask`: as
    `check_sequences` or `mask_like` gives it, numpy or of x's library)."""
    if mask is None:
        return x
    # a numpy mask is the call's data, converted, not kept: `Engine.constant` would push the kept constants out
    return owner(x).where(mask_like(x, mask)[:, :, None], x, 0.0)


def increments(x: Any, mask: Any = None, basepoint: bool = False) -> Any:
    """x_t - x_{t-1} at every point, 0 on padding; the first is 0, or x_0 with ``basepoint=True`` (x_{-1} = 0).
    A plain numpy array is differenced into one new array (numpy's concatenate along time took 4x as long)."""
    x = zero_padding(x, mask)
    if type(x) is np.ndarray:
        steps = np.empty_like(x)
        np.subtract(x[:, 1:], x[:, :-1], out=steps[:, 1:])
        steps[:, 0] = x[:, 0] if basepoint else 0
    else:
        start = x[:, :1] if basepoint else x[:, :1] * 0
        steps = owner(x).concatenate([start, x[:, 1:] - x[:, :-1]], axis=1)
    return zero_padding(steps, mask)


def _lift_order(lift: str, embedding_order: int | None, degree: int) -> int:
    if not isinstance(lift, str) or lift not in ("linear", "exp"):
        raise ValueError(f"lift: expected 'linear' or 'exp', got {lift!r:.60}")
    if embedding_order is not None:
        return min(check_count(embedding_order, "embedding_order"), degree)
    return 1 if lift == "linear" else degree


def _method(method: object) -> str:
    if not isinstance(method, str) or method != "auto" and method not in seq2tens_kernels.METHODS:
        raise ValueError(f"method: expected 'auto' or one of {seq2tens_kernels.METHODS}, got {method!r:.60}")
    return method


#: The levels and the working copies a scan holds at once, in multiples of the levels' size.
WORKING_COPIES = 3


def check_levels_fit(shape: tuple[int, ...], degree: int, return_sequences: bool, itemsize: int, argument: str = "degree") -> None:
    """Refuse, before any work, levels 1..degree that would not fit `kernels.MEMORY_LIMIT` (MemoryLimitError, a
    ValueError, naming `argument`).

    >>> check_levels_fit((1, 5, 3), 4, False, 8)                 # fits
    >>> check_levels_fit((1, 5, 3), 40, False, 8, "depth")      # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    product_interactions.kernels.native.memory.MemoryLimitError: depth: levels 1..40 of d = 3 hold 18,236,...; lower depth, ...
    """
    batch, length, d = shape
    if degree * math.log2(max(d, 2)) > 128:                   # far past any limit: say so without the huge sum
        raise native.MemoryLimitError(f"{argument}: levels 1..{degree} of d = {d} hold more than 2^128 numbers; "
                                      f"lower {argument}, or project the levels (ls2t, low_rank)")
    entries = batch * (length if return_sequences else 1) * sum(d ** m for m in range(1, degree + 1))
    needed = WORKING_COPIES * entries * itemsize
    if needed > native.limit():
        raise native.MemoryLimitError(
            f"{argument}: levels 1..{degree} of d = {d} hold {entries:,} numbers for {batch} sequence(s), and the "
            f"scan needs {native.format_bytes(needed)}, more than kernels.MEMORY_LIMIT = "
            f"{native.format_bytes(native.limit())}; lower {argument}, or project the levels (ls2t, low_rank)")


@with_jax_defaults
def seq2tens(x: Any, degree: int, lift: str = "linear", embedding_order: int | None = None,
             return_sequences: bool = False, mask: Any = None, method: str = "auto") -> tuple[Any, ...]:
    """The levels (Phi_0, Phi_1, ..., Phi_degree) of each sequence of x (batch, length, d): Phi_0 of shape
    (batch,) (all ones), Phi_m of shape (batch, d, ..., d) with m axes of size d.  With `return_sequences`, every
    prefix: a time axis after the batch axis.  See the module docstring for lift, embedding_order, mask, method.
    Levels that would not fit `kernels.MEMORY_LIMIT` are refused first (`check_levels_fit`).  Traced by
    torch.compile, the levels are one operator's flat result (`flattened_levels`), cut into levels again.
    """
    if not torch_compiling():
        return _levels(x, degree, lift, embedding_order, return_sequences, mask, method)
    flat = flattened_levels(x, degree, lift, embedding_order, return_sequences, mask, method)
    d, levels, start = x.shape[-1], [flat.new_ones(flat.shape[:-1])], 0
    for m in range(1, degree + 1):
        levels.append(flat[..., start:start + d ** m].reshape(*flat.shape[:-1], *(d,) * m))
        start += d ** m
    return tuple(levels)


@traced_as_operator
def flattened_levels(x: Any, degree: int, lift: str = "linear", embedding_order: int | None = None,
                     return_sequences: bool = False, mask: Any = None, method: str = "auto") -> Any:
    """Levels 1..degree of `seq2tens` in one array, as `flatten` lays them out (one operator under torch.compile)."""
    return flatten(_levels(x, degree, lift, embedding_order, return_sequences, mask, method))


def _levels(x: Any, degree: int, lift: str, embedding_order: int | None, return_sequences: bool, mask: Any,
            method: str) -> tuple[Any, ...]:
    """`seq2tens`, run as it is."""
    degree = check_count(degree, "degree")
    order = _lift_order(lift, embedding_order, degree)
    return_sequences = check_flag(return_sequences, "return_sequences")
    method = _method(method)
    x, mask = check_sequences(x, mask)
    engine = owner(x)
    computed, half = common_precision(engine, {"x": x})      # the scan adds up its rounding: in float32
    x = computed["x"]
    batch, length, d = example_shape(x.shape)     # torch.export's dynamic batch: decided at its example's
    shape = (batch, length, d)
    check_levels_fit(shape, degree, return_sequences, engine.dtype(x).itemsize)
    if method == "auto":
        method = seq2tens_kernels.choose_method(shape, degree, return_sequences, engine.dtype(x).itemsize,
                                                 seq2tens_kernels.runs_compiled(x))
    levels = seq2tens_kernels.scan(zero_padding(x, mask), degree, order, method, return_sequences)
    lead, d = tuple(levels[0].shape[:-1]), x.shape[2]
    shaped = (engine.zeros(lead, x) + 1,) + tuple(engine.reshape(level, lead + (d,) * m)
                                                  for m, level in enumerate(levels, start=1))
    return shaped if half is None else tuple(engine.cast(level, half) for level in shaped)


def flatten(levels: Sequence[Any]) -> Any:
    """Levels 1..M of a `seq2tens` result concatenated, each row-major: (..., d + d^2 + ... + d^M)."""
    if not isinstance(levels, (tuple, list)) or len(levels) < 2:
        raise ValueError(f"levels: expected the tuple (level 0, level 1, ...) of seq2tens, got {type(levels).__name__}")
    lead = tuple(np.shape(levels[0]))
    d = tuple(np.shape(levels[1]))[-1] if np.ndim(levels[1]) else 0
    for m, level in enumerate(levels):
        if tuple(np.shape(level)) != lead + (d,) * m:
            raise ValueError(f"levels[{m}]: expected shape {lead + (d,) * m}, got {tuple(np.shape(level))}")
    engine = owner(levels[1])
    return engine.concatenate([engine.reshape(level, lead + (d ** m,)) for m, level in enumerate(levels[1:], 1)],
                              axis=-1)


@traced_as_operator
def signature(x: Any, depth: int, mask: Any = None, return_sequences: bool = False, method: str = "auto") -> Any:
    """The truncated signature of the paths x (batch, length, d) in the layout of `flatten`: the exp lift of the
    increments, levels 1..depth.  With `return_sequences` the signature of every prefix x_0 .. x_t."""
    depth = check_count(depth, "depth")
    return_sequences = check_flag(return_sequences, "return_sequences")
    method = _method(method)
    x, mask = check_sequences(x, mask)
    check_levels_fit(example_shape(x.shape), depth, return_sequences, owner(x).dtype(x).itemsize, "depth")
    return flatten(seq2tens(increments(x, mask_like(x, mask)), depth, lift="exp", return_sequences=return_sequences,
                            method=method))


class _Vectors(Signal):
    """A sequence of vectors of V = R^d as a signal in position(L) (x) T(V) supported on the level-1 words."""

    def __init__(self, name: str, length: int, algebra: TensorAlgebra) -> None:
        super().__init__(name, tensor_product(position(length), algebra))
        self.support = {1: tuple(range(algebra.level(1).start, algebra.level(1).stop))}

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.factors[0].dim, len(self.support[1]))


def seq2tens_expression(length: int, dim: int, degree: int, lift: str = "linear", embedding_order: int | None = None,
                        return_sequences: bool = False, name: str = "x") -> tuple[Scan, Signal]:
    """The feature map as an expression: ``(Scan, signal)``.  The signal x (arrays (batch, length, dim)) is a
    sequence of vectors in level 1 of T(R^dim); the Scan multiplies group-like elements in the form
    h + e + h e = (1 + h)(1 + e) - 1, so its value is Phi - 1 (level 0 is 0).  Its `order` is the lift's
    (the Scan's convention: what one step adds); `formula` shows level m as a polynomial of degree m.

    >>> from product_interactions.interactions import formula, order
    >>> expr, x = seq2tens_expression(length=3, dim=1, degree=2)
    >>> formula(expr), order(expr, x)
    (array([0, x_{0,0} + x_{1,0} + x_{2,0},
           x_{0,0}*x_{1,0} + x_{0,0}*x_{2,0} + x_{1,0}*x_{2,0}], dtype=object), 1)
    """
    length, dim, degree = (check_count(v, a) for v, a in ((length, "length"), (dim, "dim"), (degree, "degree")))
    order = _lift_order(lift, embedding_order, degree)
    return_sequences = check_flag(return_sequences, "return_sequences")
    algebra = tensor_algebra(dim, degree)
    signal = _Vectors(name, length, algebra)

    def step(h: Expr, x_t: Expr) -> Expr:
        lifted, power = x_t, x_t
        for k in range(2, order + 1):
            power = power * x_t
            lifted = lifted + Scale(power, sympy.Rational(1, math.factorial(k)))
        return h + lifted + h * lifted
    return Scan(step, signal, state=algebra, return_sequences=return_sequences), signal
