"""`contract`: an einsum whose pairwise steps run as batched matrix products.

opt_einsum finds the contraction order (once per equation and shapes, cached); each pairwise step is then
rewritten as ``matmul`` on (batch..., M, K) @ (batch..., K, N) views, so contractions that share batch indices
(attention's heads and sequences) reach BLAS instead of numpy's generic einsum loop.  Single-operand steps and
the rare steps that cannot be written that way use einsum, as do all steps on an engine whose einsum is the
faster (``Engine.native_pairs``).  Written over an engine (`kernels.arrays.engine`): numpy and autograd arrays,
torch and JAX arrays alike.

>>> import numpy as np
>>> a, b = np.arange(24.).reshape(2, 3, 4), np.arange(40.).reshape(2, 4, 5)
>>> from product_interactions.kernels.arrays import NUMPY
>>> bool(np.allclose(contract("bij,bjk->bik", a, b, engine=NUMPY), np.einsum("bij,bjk->bik", a, b)))
True
"""
from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import opt_einsum

from .example_sizes import example_shape, symbolic

if TYPE_CHECKING:
    from .engine import Engine


@functools.lru_cache(maxsize=512)
def _plan(equation: str, shapes: tuple[tuple[int, ...], ...]) -> tuple[tuple[tuple[int, ...], str], ...]:
    """The pairwise steps: (positions of the operands taken, einsum string of the step)."""
    _, info = opt_einsum.contract_path(equation, *shapes, shapes=True,
                                       optimize="auto-hq" if len(shapes) <= 6 else "auto")
    return tuple((tuple(step[0]), step[2]) for step in info.contraction_list)


def _einsum(engine: Engine, step: str, *arrays: Any) -> Any:
    """The engine's einsum on a step whose labels may be any symbols (mapped to letters first)."""
    letters = {c: opt_einsum.get_symbol(n) for n, c in enumerate(dict.fromkeys(step.replace(",", "").replace("->", "")))}
    return engine.einsum("".join(letters.get(c, c) for c in step), *arrays)


class Pair(NamedTuple):
    """How one two-operand step runs (`_pair`): axes summed out of a and of b first, whether b and a trade
    places, then either a broadcast product of the two (`product` None; `a_form`, `b_form` each (permutation,
    shape)) or one matrix product: each operand permuted, made contiguous where it is small against the product,
    and reshaped (`a_form`, `b_form`: (permutation, contiguous, shape)), the product reshaped to `product` and
    permuted to the output's order (`order`); a permutation that moves nothing is None."""
    sum_a: tuple[int, ...]
    sum_b: tuple[int, ...]
    swap: bool
    a_form: tuple[Any, ...]
    b_form: tuple[Any, ...]
    product: tuple[int, ...] | None
    order: tuple[int, ...] | None


@functools.lru_cache(maxsize=1024)
def _pair(step: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> Pair | None:
    """The plan of a two-operand step on operands of these shapes, or None where einsum runs it (a label repeated
    within an operand); worked out once per step and shapes."""
    inputs, output = step.split("->")
    left, right = inputs.split(",")
    if len(set(left)) != len(left) or len(set(right)) != len(right):
        return None
    batch = [c for c in output if c in left and c in right]
    summed = [c for c in left if c in right and c not in output]
    sum_a = tuple(left.index(c) for c in left if c not in right and c not in output)   # one side's alone: first
    sum_b = tuple(right.index(c) for c in right if c not in left and c not in output)
    a_shape = tuple(n for axis, n in enumerate(a_shape) if axis not in sum_a)
    b_shape = tuple(n for axis, n in enumerate(b_shape) if axis not in sum_b)
    left = "".join(c for c in left if c in right or c in output)
    right = "".join(c for c in right if c in left or c in output)
    if not summed:                                        # nothing to contract: a broadcast product
        return Pair(sum_a, sum_b, False, _aligned(a_shape, left, output), _aligned(b_shape, right, output), None, None)
    a_keep = sorted((c for c in left if c not in right), key=output.index)   # transpose the operands, not the
    b_keep = sorted((c for c in right if c not in left), key=output.index)   # (larger) product
    swap = batch + b_keep + a_keep == list(output) and batch + a_keep + b_keep != list(output)
    if swap:                                              # b @ a lands in order
        a_shape, b_shape, left, right, a_keep, b_keep = b_shape, a_shape, right, left, b_keep, a_keep
    size = dict(zip(left, a_shape))
    size.update({c: n if size.get(c, 1) == 1 else size[c] for c, n in zip(right, b_shape)})     # broadcast: 0 too
    product_size = math.prod(size[c] for c in batch + a_keep + b_keep)
    larger, labels = (a_shape, left) if math.prod(a_shape) >= math.prod(b_shape) else (b_shape, right)
    if math.prod(larger) > product_size:                  # batch axes in the large operand's order: no copy of it
        batch.sort(key=labels.index)
    a_order = tuple(left.index(c) for c in batch + a_keep + summed)
    b_order = tuple(right.index(c) for c in batch + summed + b_keep)
    a_batch = tuple(a_shape[axis] for axis in a_order[:len(batch)])
    b_batch = tuple(b_shape[axis] for axis in b_order[:len(batch)])
    m, k, n = (math.prod(size[c] for c in group) for group in (a_keep, summed, b_keep))
    product = tuple(np.broadcast_shapes(a_batch, b_batch)) + tuple(size[c] for c in a_keep + b_keep)
    order = batch + a_keep + b_keep
    return Pair(sum_a, sum_b, swap, (_moves(a_order), math.prod(a_shape) * 4 <= product_size, a_batch + (m, k)),
                (_moves(b_order), math.prod(b_shape) * 4 <= product_size, b_batch + (k, n)), product,
                _moves(tuple(order.index(c) for c in output)))


def _aligned(shape: tuple[int, ...], labels: str, output: str) -> tuple[tuple[int, ...] | None, tuple[int, ...]]:
    """(permutation, shape) that bring an operand of axes `labels` (all in `output`) to output order, with size-1
    axes for the output's other labels."""
    order = tuple(sorted(range(len(labels)), key=lambda n: output.index(labels[n])))
    present = sorted(labels, key=output.index)
    moved = [shape[axis] for axis in order]
    return _moves(order), tuple(moved[present.index(c)] if c in labels else 1 for c in output)


def _moves(order: tuple[int, ...]) -> tuple[int, ...] | None:
    """`order`, or None where it leaves every axis in place."""
    return None if order == tuple(range(len(order))) else order


def _pairwise(engine: Engine, step: str, a: Any, b: Any) -> Any:
    """One two-operand einsum step as a broadcast batched matmul (`Pair`)."""
    pair = None if symbolic(a.shape) or symbolic(b.shape) else _pair(step, tuple(a.shape), tuple(b.shape))
    if pair is None:
        return _einsum(engine, step, a, b)
    if pair.sum_a:
        a = engine.sum(a, axis=pair.sum_a)
    if pair.sum_b:
        b = engine.sum(b, axis=pair.sum_b)
    if pair.swap:
        a, b = b, a
    a_order, b_order = pair.a_form[0], pair.b_form[0]
    if a_order is not None:
        a = engine.transpose(a, a_order)
    if b_order is not None:
        b = engine.transpose(b, b_order)
    if pair.product is None:
        return engine.reshape(a, pair.a_form[1]) * engine.reshape(b, pair.b_form[1])
    if pair.a_form[1]:
        a = engine.contiguous(a)
    if pair.b_form[1]:
        b = engine.contiguous(b)
    product = engine.reshape(engine.matmul(engine.reshape(a, pair.a_form[2]), engine.reshape(b, pair.b_form[2])),
                             pair.product)
    return product if pair.order is None else engine.transpose(product, pair.order)


def contract(equation: str, *arrays: Any, engine: Engine) -> Any:
    """einsum(equation, *arrays), evaluated pairwise along opt_einsum's path with batched matmuls, on `engine`."""
    operands = list(arrays)
    for positions, step in _plan(equation, tuple(example_shape(a.shape) for a in operands)):
        taken = [operands.pop(p) for p in sorted(positions, reverse=True)]
        if len(taken) == 2:
            inputs = step.split("->")[0].split(",")
            # contraction_list orders the step's inputs as the popped operands (highest position first)
            pairwise = len(inputs) == 2 and not engine.native_pairs
            operands.append(_pairwise(engine, step, *taken) if pairwise else _einsum(engine, step, *taken))
        else:
            operands.append(_einsum(engine, step, *taken))
    return operands[0]
