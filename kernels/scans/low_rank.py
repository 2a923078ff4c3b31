"""Rank-1 functionals of the Seq2Tens features, <v^1 (x) ... (x) v^m, Phi(x)>, without forming tensors (LS2T).

With z^k_t = <v^k, x_t>, the recursion R_1 = z^1, R_k(t) = z^k_t sum_{s<t} R_{k-1}(s) gives level k as
sum_t R_k(t), at O(K L N h) for N functionals per level.  Each factor v^k is a *slot* of V (h, K, N); a slot's
*parent* is the slot of the factor before it (`slots`).  Two ways to run it (``method``):

* ``"compiled"``: one C loop over time (`kernels.native.clib.low_rank_scan`), which projects, multiplies and sums
  each step in place, with a C gradient loop that recomputes the states from every sqrt(L)-th one (kept by the
  forward where a gradient is taken: `kernels.scans.checkpoints`); for float32 and float64 numpy arrays and torch
  CPU tensors where a C compiler works (gradients of gradients go through ``"blocks"``);
* ``"blocks"``: the engine's operations, time in blocks of about the device's `Rates.block_numbers` projections
  (4 MB of float64 on a CPU; whole sequences on a GPU), each block a projection, a cumulative sum per slot and
  the products, carrying the sums between blocks: for every engine and device, and every autodiff.

``"auto"`` takes the loop where it runs.  On this project's 2-core machine (64 paths of length 1,024 in R^4,
width 64, order 4, one thread), the loop took 0.04-0.06 of the blocks' time on numpy, forward and with its gradient,
and on torch 0.06-0.1 forward and 0.15-0.16 forward and backward: 1.5-1.8 times the depth-4 signature of the same
paths, forward and backward (10 times before).

>>> import numpy as np
>>> x = np.array([[[1.], [3.], [5.]]])          # L = 3, h = 1; v^1 = 1, v^2 = 2 for one functional
>>> low_rank(x, np.array([[[1.], [2.]]]), 2, independent=False)[0, :, 0]    # 1 + 3 + 5, 2 (1*3 + 1*5 + 3*5)
array([ 9., 46.])
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import autograd
import numpy as np
from autograd.extend import defvjp_argnums, primitive

from ..arrays import NUMPY, owner
from ..arrays.example_sizes import example_size
from ..native import build, clib
from .checkpoints import Handoff

METHODS = ("auto", "compiled", "blocks")


@functools.lru_cache(maxsize=32)
def slots(degree: int, independent: bool) -> tuple[np.ndarray, np.ndarray]:
    """The slots' parents (-1 for a chain's first factor) and each level's last slot.  With ``independent=False``
    slot k-1 holds v^k, shared by all levels (one chain); with ``independent=True`` the slots come in groups
    k = 1..degree, group k holding v^k_m for m = k..degree (a chain per level).

    >>> [a.tolist() for a in slots(3, False)], [a.tolist() for a in slots(3, True)]
    ([[-1, 0, 1], [0, 1, 2]], [[-1, -1, -1, 1, 2, 4], [0, 3, 5]])
    """
    if not independent:
        parent, level = np.arange(-1, degree - 1), np.arange(degree)
    else:
        first = [sum(degree - j for j in range(k)) for k in range(degree)]       # group k's first slot (0-based)
        parent = np.array([-1 if k == 0 else first[k - 1] + m - k + 1 for k in range(degree) for m in range(k, degree)])
        level = np.array(first)
    parent, level = parent.astype(np.int64), level.astype(np.int64)
    parent.flags.writeable = level.flags.writeable = False
    return parent, level


def low_rank(x: Any, V: Any, degree: int, independent: bool, return_sequences: bool = False,
             method: str = "auto") -> Any:
    """<l_m, Phi(x)> for N rank-1 functionals per level, l_m = v^1_m (x) ... (x) v^m_m, without forming tensors.

    x is (batch, L, h), V (h, K, N): with ``independent=False`` K = degree and slot k-1 holds v^k, shared by all
    levels (l_m = v^1 (x) ... (x) v^m); with ``independent=True`` K = degree (degree + 1) / 2 and the slots come in
    groups k = 1..degree, group k holding v^k_m for m = k..degree (`slots`).  Returns (batch, degree, N), or
    (batch, L, degree, N) over the expanding windows [0, t] with `return_sequences`.  `method`: see the module
    docstring."""
    if method not in METHODS:
        raise ValueError(f"method: expected one of {METHODS}, got {method!r:.60}")
    count = len(slots(degree, independent)[0])
    if len(x.shape) != 3:
        raise ValueError(f"x: expected shape (batch, length, h), got {tuple(x.shape)}")
    if len(V.shape) != 3 or tuple(V.shape[:2]) != (x.shape[2], count):
        raise ValueError(f"V: expected shape ({x.shape[-1]}, {count}, N) for x of shape {tuple(x.shape)}, degree "
                         f"{degree} and independent={independent}, got {tuple(V.shape)}")
    compiled = runs_compiled(x, V)
    if method == "compiled" and not compiled:
        why = build.unavailable() or (f"it runs on float32 and float64 numpy arrays and torch CPU tensors of one "
                                      f"dtype (not while torch.jit.trace records), got {owner(x).name} "
                                      f"{owner(x).dtype(x)} x and {owner(V).name} {owner(V).dtype(V)} V")
        raise ValueError(f"method: 'compiled' cannot run here: {why}; use 'auto' or 'blocks'")
    if method == "blocks" or not compiled:
        return _blocks(x, V, degree, independent, return_sequences)
    engine = owner(x)
    if engine is NUMPY and not (NUMPY.traced(x) or NUMPY.traced(V)):
        return clib.low_rank_scan(x, V, *slots(degree, independent), return_sequences)
    if engine is NUMPY:
        return _numpy_compiled(x, V, degree, independent, return_sequences)
    reference = functools.partial(_blocks, degree=degree, independent=independent, return_sequences=return_sequences)
    return engine.compiled_low_rank(x, V, *slots(degree, independent), return_sequences,  # type: ignore[misc]
                                    reference)


def runs_compiled(x: Any, V: Any) -> bool:
    """True when the compiled loop takes x and V: float32 or float64 numpy arrays (autograd's traced arrays too) or
    CPU tensors of an engine with `compiled_low_rank`, of one dtype, where the C library builds."""
    engine = owner(x)
    if engine is not owner(V) or engine.dtype(x) != engine.dtype(V):
        return False
    taken = engine.dtype(x) in clib.LANES if engine is NUMPY else \
        engine.compiled_low_rank is not None and engine.scans_compiled(x) and engine.scans_compiled(V)
    return taken and build.unavailable() is None


#: The forward's checkpoints, handed to the loop's gradient.
_CHECKPOINTS = Handoff()


@primitive
def _numpy_compiled(x: np.ndarray, V: np.ndarray, degree: int, independent: bool, sequences: bool) -> Any:
    """The loop, traced by autograd (`low_rank` calls the loop itself otherwise), keeping its checkpoints."""
    return _CHECKPOINTS.keep(*clib.low_rank_scan_keeping(x, V, *slots(degree, independent), sequences))


def _numpy_compiled_vjp(argnums: Sequence[int], result: Any, args: tuple[Any, ...],
                        kwargs: dict[str, Any]) -> Callable[[Any], tuple[Any, ...]]:
    x, V, degree, independent, sequences = args
    checkpoints = _CHECKPOINTS.take(result)

    def vjp(gradient: Any) -> tuple[Any, ...]:
        if NUMPY.traced(x) or NUMPY.traced(V) or NUMPY.traced(gradient):    # a gradient of a gradient: the blocks'
            grads = autograd.make_vjp(lambda pair: _blocks(pair[0], pair[1], degree, independent, sequences))(
                (x, V))[0](gradient)
        else:
            grads = clib.low_rank_scan_vjp(x, V, *slots(degree, independent), np.asarray(gradient, dtype=x.dtype),
                                           sequences, checkpoints=checkpoints)
        return tuple(grads[i] for i in argnums)
    return vjp


defvjp_argnums(_numpy_compiled, _numpy_compiled_vjp)


def _blocks(x: Any, V: Any, degree: int, independent: bool, return_sequences: bool = False) -> Any:
    """`low_rank` by the engine's operations, time in blocks of about `Rates.block_numbers` projections, carrying
    the sums, so the working set stays small at any L."""
    engine = owner(x)
    batch, length, h = tuple(x.shape)
    slot_count, width = tuple(V.shape[1:])
    projection = engine.reshape(V, (h, slot_count * width))
    block = max(1, engine.rates_for(x).block_numbers // max(example_size(batch) * slot_count * width, 1))
    if length == 0:
        return engine.zeros((batch,) + ((0,) if return_sequences else ()) + (degree, width), x)
    totals: list[Any]                                   # None until a block has run
    totals, outputs = [None] * degree, []
    for start in range(0, length, block):
        steps = min(block, length - start)
        z = engine.reshape(x[:, start:start + block] @ projection, (batch, steps, slot_count, width))
        levels, totals = _block(z, totals, independent)
        if return_sequences:
            outputs.append(engine.stack(levels, axis=-2))
    if return_sequences:
        return engine.concatenate(outputs, axis=1)
    return engine.stack([total[:, 0] for total in totals], axis=-2)


def _block(z: Any, totals: Sequence[Any], independent: bool) -> tuple[list[Any], list[Any]]:
    """The recursion on one block of time steps z (batch, C, K, N), starting from the running sums `totals`
    (one (batch, slots, N) per k, or None at the start); returns the levels (batch, C, N) and the new totals."""
    engine, running, levels, carried, start = owner(z), None, [], [], 0
    for k, total in enumerate(totals):
        width = len(totals) - k if independent else 1
        step = z[:, :, start:start + width]
        start += width
        step = step if running is None else step * running
        prefixes = engine.cumulative_sum(step, 1)
        if total is not None:
            prefixes = prefixes + total[:, None]
        levels.append(prefixes[:, 1:, 0])
        carried.append(prefixes[:, -1])
        running = prefixes[:, :-1, int(independent):]
    return levels, carried
