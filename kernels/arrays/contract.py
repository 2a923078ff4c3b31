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
from typing import TYPE_CHECKING, Any

import numpy as np
import opt_einsum

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


def _pairwise(engine: Engine, step: str, a: Any, b: Any) -> Any:
    """One two-operand einsum step as a broadcast batched matmul."""
    inputs, output = step.split("->")
    left, right = inputs.split(",")
    if len(set(left)) != len(left) or len(set(right)) != len(right):
        return _einsum(engine, step, a, b)
    batch = [c for c in output if c in left and c in right]
    summed = [c for c in left if c in right and c not in output]
    a_only = [c for c in left if c not in right]
    b_only = [c for c in right if c not in left]
    a_keep = [c for c in a_only if c in output]
    b_keep = [c for c in b_only if c in output]
    if len(a_keep) != len(a_only):                        # indices of one side summed alone: sum them first
        a = engine.sum(a, axis=tuple(left.index(c) for c in a_only if c not in output))
        left = "".join(c for c in left if c in right or c in output)
    if len(b_keep) != len(b_only):
        b = engine.sum(b, axis=tuple(right.index(c) for c in b_only if c not in output))
        right = "".join(c for c in right if c in left or c in output)
    if not summed:                                        # nothing to contract: a broadcast product
        return _aligned(engine, a, left, output) * _aligned(engine, b, right, output)
    a_keep.sort(key=output.index)                         # transpose the operands, not the (larger) product
    b_keep.sort(key=output.index)
    if batch + b_keep + a_keep == list(output) and batch + a_keep + b_keep != list(output):
        a, b, left, right, a_keep, b_keep = b, a, right, left, b_keep, a_keep          # b @ a lands in order
    size = dict(zip(left, a.shape))
    size.update({c: max(size.get(c, 1), n) for c, n in zip(right, b.shape)})
    product_size = int(np.prod([size[c] for c in batch + a_keep + b_keep]))
    larger, labels = (a, left) if _size(a) >= _size(b) else (b, right)
    if _size(larger) > product_size:               # batch axes in the large operand's order: no copy of it
        batch.sort(key=labels.index)
    a = engine.transpose(a, [left.index(c) for c in batch + a_keep + summed])
    b = engine.transpose(b, [right.index(c) for c in batch + summed + b_keep])
    a, b = (engine.contiguous(v) if _size(v) * 4 <= product_size else v for v in (a, b))
    a_batch, b_batch = tuple(a.shape[:len(batch)]), tuple(b.shape[:len(batch)])
    m, k, n = (int(np.prod([size[c] for c in group])) for group in (a_keep, summed, b_keep))
    product = engine.matmul(engine.reshape(a, a_batch + (m, k)), engine.reshape(b, b_batch + (k, n)))
    batch_shape = tuple(product.shape[:len(batch)])
    product = engine.reshape(product, batch_shape + tuple(size[c] for c in a_keep + b_keep))
    order = batch + a_keep + b_keep
    return engine.transpose(product, [order.index(c) for c in output])


def _size(array: Any) -> int:
    return int(np.prod(array.shape))


def _aligned(engine: Engine, array: Any, labels: str, output: str) -> Any:
    """`array` (axes `labels`, all in `output`) transposed to output order, with size-1 axes for the rest."""
    array = engine.transpose(array, sorted(range(len(labels)), key=lambda n: output.index(labels[n])))
    present = sorted(labels, key=output.index)
    return engine.reshape(array, [array.shape[present.index(c)] if c in labels else 1 for c in output])


def contract(equation: str, *arrays: Any, engine: Engine) -> Any:
    """einsum(equation, *arrays), evaluated pairwise along opt_einsum's path with batched matmuls, on `engine`."""
    operands = list(arrays)
    for positions, step in _plan(equation, tuple(tuple(a.shape) for a in operands)):
        taken = [operands.pop(p) for p in sorted(positions, reverse=True)]
        if len(taken) == 2:
            inputs = step.split("->")[0].split(",")
            # contraction_list orders the step's inputs as the popped operands (highest position first)
            pairwise = len(inputs) == 2 and not engine.native_pairs
            operands.append(_pairwise(engine, step, *taken) if pairwise else _einsum(engine, step, *taken))
        else:
            operands.append(_einsum(engine, step, *taken))
    return operands[0]
