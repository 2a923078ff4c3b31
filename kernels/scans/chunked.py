"""The chunked form of a linear recurrence h_t = a_t h_{t-1} + b_t, for engines that pay for every call (a GPU's
kernel launches): about 2 sqrt(T) sequential steps on large arrays instead of T steps on small ones.

The T steps are cut into chunks of `size` (the last one padded with a = 1, b = 0, which leaves the state as it
is).  Three passes, each a short loop of whole-array operations:

1. within every chunk at once, from a zero state: the local states g_i = a_i g_{i-1} + b_i and the running
   products p_i = a_i p_{i-1} (one step per position in a chunk, every chunk in the same call);
2. across chunks: the state entering chunk k, c_k = P_{k-1} c_{k-1} + G_{k-1}, from the chunks' last local state
   G and product P (one step per chunk);
3. every state at once: h = g + p c (the first chunk's states are its local ones).

Every operation is the engine's own (torch, JAX), so its autodiff differentiates the scan, forward and
backward.  Work: about 4 operations per element (the loop's 2, plus the products and the correction).

>>> import numpy as np
>>> from product_interactions.kernels.arrays import NUMPY
>>> a, b = np.full((5, 1), 0.5), np.ones((5, 1))
>>> chunked(NUMPY, a, b, size=2)[:, 0]
array([1.    , 1.5   , 1.75  , 1.875 , 1.9375])
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..arrays.engine import Engine


def chunk_size(length: int) -> int:
    """The chunk length that balances the two sequential loops: about sqrt(`length`).

    >>> chunk_size(4096), chunk_size(10), chunk_size(1)
    (64, 4, 1)
    """
    return max(1, math.isqrt(max(length - 1, 0)) + 1)


def chunked(engine: Engine, a: Any, b: Any, size: int | None = None) -> Any:
    """All states h_0..h_{T-1} of h_t = a_t h_{t-1} + b_t, h_{-1} = 0, along the first axis of `a` and `b` (equal
    shapes), by chunks of `size` steps (None: `chunk_size`); see the module docstring."""
    length, rest = b.shape[0], tuple(b.shape[1:])
    size = chunk_size(length) if size is None else max(1, min(int(size), length))
    count = -(-length // size)
    padding = count * size - length
    if padding:
        ones = engine.zeros((padding,) + rest, a) + 1
        a = engine.concatenate([a, ones], axis=0)
        b = engine.concatenate([b, engine.zeros((padding,) + rest, b)], axis=0)
    a = engine.reshape(a, (count, size) + rest)
    b = engine.reshape(b, (count, size) + rest)
    steps, inputs = engine.unstack(engine.swapaxes(a, 0, 1)), engine.unstack(engine.swapaxes(b, 0, 1))
    local, products = [inputs[0]], [steps[0]]                               # pass 1: within the chunks
    for i in range(1, size):
        local.append(steps[i] * local[-1] + inputs[i])
        products.append(steps[i] * products[-1])
    ends, end_products = engine.unstack(local[-1]), engine.unstack(products[-1])
    entering = [None, ends[0]]                                              # pass 2: across the chunks
    for k in range(1, count - 1):
        entering.append(end_products[k] * entering[-1] + ends[k])
    states = engine.stack(local, axis=1)                                    # pass 3 (the first chunk has it all)
    if count > 1:
        carry = engine.expand_dims(engine.stack(entering[1:count], axis=0), 1)
        later = states[1:] + engine.stack(products, axis=1)[1:] * carry
        states = engine.concatenate([states[:1], later], axis=0)
    return engine.reshape(states, (count * size,) + rest)[:length]
