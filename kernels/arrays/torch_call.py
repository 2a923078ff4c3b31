"""A library call on torch tensors as one torch operator, ``torch.ops.product_interactions.call(operands, key)``, so
that ``torch.compile(..., fullgraph=True)`` traces a compiled expression (`kernels.plans.plan.Plan`) or a model's
module (`interactions.torch_module`) as one node of its graph instead of failing at the library's graph break,
and Inductor fuses what surrounds it.

An owner (a plan, a module) registers itself and gets a key; it answers ``flat_call(operands)``, its call on a flat
list of tensors.  The operator is registered through ``torch.library.custom_op``.  Its eager body is that call.
Its fake body is the same call on torch's fake tensors, whose sizes are first made plain ints: the library's steps
are torch operations, which give the result's shape and dtype without numbers (no step asks a fake tensor for a
value, `TorchEngine.concrete`), and an owner plans for its sizes, so a traced size is specialised (a new size
traces again).  Its gradient is a second operator, ``call_vjp``, whose body is ``torch.func.vjp`` of the call:
the library's own backward formulas, as eager autograd runs them (gradients of gradients are not traced).  Keys
are unique to this process (a random prefix: a compiled graph torch keeps on disk is never reused for another
process's owner of the same name); the registry holds owners weakly.

>>> import torch
>>> from product_interactions.interactions.architectures import gating
>>> module = gating(channels=3).to_torch()
>>> x = torch.randn(2, 5, 3, dtype=torch.float64)
>>> traced = torch.compile(module, fullgraph=True, backend="eager")
>>> bool(torch.allclose(traced(x), module(x)))
True
"""
from __future__ import annotations

import itertools
import secrets
import sys
import weakref
from typing import Any

#: key -> the live owner of that key.
_OWNERS: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
#: This process's prefix of keys, and the counter after it.
_PREFIX, _COUNT = secrets.token_hex(8), itertools.count()
#: The operator and its vector-Jacobian product, once defined (`define`).
OPERATORS: list[Any] = []


def register(owner: Any) -> str:
    """A key for `owner` (anything with ``flat_call(operands)``), unique to this process, under which the operator
    finds it; the operator is defined now if torch is imported (not while torch.compile traces)."""
    key = f"{type(owner).__name__}-{_PREFIX}-{next(_COUNT)}"
    _OWNERS[key] = owner
    if "torch" in sys.modules:
        define()
    return key


def owner_for(key: str) -> Any:
    """The owner of `key` (KeyError, saying so, where it is gone)."""
    found = _OWNERS.get(key)
    if found is None:
        raise KeyError(f"key: nothing named {key!r} lives in this process (a compiled graph outlived it)")
    return found


def _specialised(tensors: list[Any]) -> list[Any]:
    """Fake tensors of the same sizes as plain ints (torch may have left a traced size symbolic)."""
    return [t.new_empty(tuple(int(d) for d in t.shape)) for t in tensors]


def define() -> tuple[Any, Any]:
    """Define the operator and its vector-Jacobian product (once; torch must be importable)."""
    if OPERATORS:
        return OPERATORS[0], OPERATORS[1]
    import torch

    @torch.library.custom_op("product_interactions::call", mutates_args=(),
                             schema="(Tensor[] operands, str key) -> Tensor")
    def call(operands: list[Any], key: str) -> Any:
        result = owner_for(key).flat_call(list(operands))
        if not isinstance(result, torch.Tensor):
            raise TypeError(f"key: {key!r} returned {type(result).__name__}, not one tensor; the operator carries one")
        return result.clone(memory_format=torch.contiguous_format)

    @call.register_fake
    def _(operands: list[Any], key: str) -> Any:
        result = owner_for(key).flat_call(_specialised(list(operands)))
        return result.new_empty(result.shape)

    @torch.library.custom_op("product_interactions::call_vjp", mutates_args=(),
                             schema="(Tensor[] operands, str key, Tensor gradient) -> Tensor[]")
    def call_vjp(operands: list[Any], key: str, gradient: Any) -> list[Any]:
        _, vjp = torch.func.vjp(owner_for(key).flat_call, list(operands))
        (found,) = vjp(gradient)
        return [(torch.zeros_like(operand) if g is None else g).contiguous() for g, operand in zip(found, operands)]

    @call_vjp.register_fake
    def _(operands: list[Any], key: str, gradient: Any) -> list[Any]:
        return [operand.new_empty(operand.shape) for operand in operands]

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        operands, key = inputs                           # torch passes the operator's arguments as `inputs`
        ctx.key = key
        ctx.save_for_backward(*operands)

    def backward(ctx: Any, gradient: Any) -> tuple[list[Any], None]:
        return call_vjp(list(ctx.saved_tensors), ctx.key, gradient), None

    call.register_autograd(backward, setup_context=setup_context)
    OPERATORS.extend((call, call_vjp))
    return call, call_vjp


def applies(arrays: list[Any]) -> bool:
    """True when a traced call on `arrays` can be the operator: it is defined, and they are floating torch tensors."""
    torch = sys.modules.get("torch")
    return bool(OPERATORS) and torch is not None and bool(arrays) and all(
        isinstance(a, torch.Tensor) and a.is_floating_point() for a in arrays)


def traced(key: str, operands: list[Any]) -> Any:
    """The operator's call on `operands` for the owner of `key` (what a traced call records)."""
    return OPERATORS[0](operands, key)
