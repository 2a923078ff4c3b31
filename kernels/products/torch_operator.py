"""A `Kernel` call as one torch operator, ``torch.ops.product_interactions.product(x, y, key)``, so that
``torch.compile(..., fullgraph=True)`` traces it as a node of its graph instead of breaking the graph there.

The operator is registered through ``torch.library.custom_op``: its eager body is the kernel's call; its fake
body gives the result's shape and dtype from the kernel's shapes, so the compiler needs no numbers; its gradient
is two more calls of the operator, with the kernels of the vector-Jacobian products (`Kernel.transposed`), so
gradients of gradients trace too.  A kernel is named by a `key` that is the same in every process (`kernels.products.keys`:
torch keeps compiled graphs on disk), and a VJP's kernel by its kernel's key and the argument; the registry holds
kernels weakly.  Where the operator does not apply (operands that are not torch tensors, a
component-major layout), a traced call runs at a graph break as before.

>>> import torch
>>> from product_interactions import kernels
>>> from product_interactions.algebra import quaternions
>>> K = kernels.product(quaternions())
>>> f = torch.compile(lambda x, y: K(x, y).sin(), fullgraph=True, backend="eager")
>>> x = torch.randn(5, 4, dtype=torch.float64)
>>> bool(torch.allclose(f(x, x), K(x, x).sin()))
True
"""
from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

from . import keys
from ..arrays import checks, traced_as_one_operator

if TYPE_CHECKING:
    from .kernel import Kernel

#: The operator, once torch is imported and it is defined (`define`).
OPERATOR: list[Any] = []
#: Held while the operator is defined (threads build kernels at once).
_DEFINING = threading.RLock()


def register(kernel: Kernel) -> str:
    """`kernel`'s key (`keys.register`), and the operator defined if torch is imported."""
    key = keys.register(kernel)
    if not OPERATOR and "torch" in sys.modules:
        define()
    return key


def _result(kernel: Kernel, x: Any, y: Any) -> Any:
    """An empty tensor of the product's shape, dtype and device (the fake body).  Batch axes that do not broadcast
    are refused here with the eager call's message, which torch.compile reports inside its own error (an operand's
    wrong algebra axes are refused when the graph runs, by the eager call itself)."""
    import torch
    shapes = [tuple(a.shape) for a in (x, y)]
    try:
        batch = checks.broadcast_batches(shapes, len(kernel.factors), kernel.layout)
    except ValueError:          # refused again with this call's sizes, not the symbols a dynamic trace gives them
        checks.broadcast_batches([tuple(map(_example, shape)) for shape in shapes], len(kernel.factors),
                                 kernel.layout)
        raise
    return x.new_empty(batch + kernel.shapes[2], dtype=torch.promote_types(x.dtype, y.dtype))


def _example(size: Any) -> Any:
    """A traced size's value in the call being traced (its hint), or the size itself."""
    node = getattr(size, "node", None)
    hint = getattr(node, "hint", None)
    return size if hint is None else hint


def define() -> Any:
    """Define the operator (once; torch must be importable) and return it."""
    with _DEFINING:
        return OPERATOR[0] if OPERATOR else _defined()


def _defined() -> Any:
    """The operator, defined now (`define` holds the lock)."""
    import torch

    @torch.library.custom_op("product_interactions::product", mutates_args=(),
                             schema="(Tensor x, Tensor y, str key) -> Tensor")
    def product(x: Any, y: Any, key: str) -> Any:
        z = keys.kernel_for(key).run(x, y)                     # fresh and contiguous, as the fake body says
        shared = z.untyped_storage().data_ptr() in (x.untyped_storage().data_ptr(), y.untyped_storage().data_ptr())
        return z.clone(memory_format=torch.contiguous_format) if shared or not z.is_contiguous() else z

    @product.register_fake
    def _(x: Any, y: Any, key: str) -> Any:
        return _result(keys.kernel_for(key), x, y)

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        x, y, key = inputs
        ctx.save_for_backward(x, y)
        ctx.key = key

    def backward(ctx: Any, gradient: Any) -> tuple[Any, Any, None]:
        x, y = ctx.saved_tensors
        found: list[Any] = [None, None]
        for argument, (operand, other) in enumerate(((x, y), (y, x))):
            if ctx.needs_input_grad[argument]:
                g = product(other, gradient, f"{ctx.key}^T{argument}")
                found[argument] = g.sum_to_size(operand.shape).to(operand.dtype)
        return found[0], found[1], None

    product.register_autograd(backward, setup_context=setup_context)
    OPERATOR.append(product)
    return product


def applies(kernel: Kernel, x: Any, y: Any) -> bool:
    """True when a traced call of `kernel` on x, y can be the operator and is to be (`traced_as_one_operator`, with
    every leading axis a batch): torch tensors, the batch-first layout."""
    torch = sys.modules.get("torch")
    return bool(OPERATOR) and torch is not None and isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) \
        and kernel.layout == "batch-first" and traced_as_one_operator((x, y), batch_axis=None)
