"""A `to_torch` module's call as one torch operator, ``torch.ops.product_interactions.module(params, inputs, key)``,
so that ``torch.compile(module, fullgraph=True)`` traces a model as one node of its graph instead of failing at
the library's graph break, and Inductor fuses what surrounds it.

The operator is registered through ``torch.library.custom_op``.  Its eager body is the module's model applied to
the parameters it is given (``model.apply``, as the module's forward).  Its fake body is the same forward on torch's fake
tensors: the library's steps are torch operations, which give the result's shape and dtype without numbers (no
step asks a fake tensor for a value).  Its gradient is a second operator, ``module_vjp``, whose body is
``torch.func.vjp`` of the forward: the library's own backward formulas, as eager autograd runs them (gradients of
gradients are not traced).  A module is named by a key unique to this process (a random prefix: a compiled graph
torch keeps on disk is never reused for another process's module of the same name); the registry holds modules
weakly.  Calls with keyword options, or with inputs that are not tensors, run at a graph break as before.  Every
module of `to_torch` shares one ``forward``, whose compiled forms torch caps per process (``recompile_limit``, 8):
compile the model that holds many modules, not each of them.

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

#: key -> the live module of that key.
_MODULES: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
#: This process's prefix of keys, and the counter after it.
_PREFIX, _COUNT = secrets.token_hex(8), itertools.count()
#: The two operators, once defined (`define`).
OPERATORS: list[Any] = []


def register(module: Any) -> str:
    """A key for `module`, unique to this process, under which the operator finds it (defined now, where torch
    is imported: not while torch.compile traces)."""
    key = f"{type(module).__name__}-{_PREFIX}-{next(_COUNT)}"
    _MODULES[key] = module
    define()
    return key


def module_for(key: str) -> Any:
    """The module of `key` (KeyError, saying so, where it is gone)."""
    found = _MODULES.get(key)
    if found is None:
        raise KeyError(f"key: no module {key!r} lives in this process (a compiled graph outlived its module)")
    return found


def _forward(key: str, params: list[Any], inputs: list[Any]) -> Any:
    """The module's model applied to `params` (in the order of the module's parameters) and `inputs`."""
    module = module_for(key)
    return module.model.apply(dict(zip((name for name, _ in module.named_parameters()), params)), *inputs)


def _specialised(tensors: list[Any]) -> list[Any]:
    """Fake tensors of the same sizes as plain ints: a model plans for its sizes, so a traced size that torch left
    symbolic is specialised to its value (a new size traces again)."""
    return [t.new_empty(tuple(int(d) for d in t.shape)) for t in tensors]


def define() -> tuple[Any, Any]:
    """Define the operator and its vector-Jacobian product (once; torch must be importable)."""
    if OPERATORS:
        return OPERATORS[0], OPERATORS[1]
    import torch

    @torch.library.custom_op("product_interactions::module", mutates_args=(),
                             schema="(Tensor[] params, Tensor[] inputs, str key) -> Tensor")
    def module(params: list[Any], inputs: list[Any], key: str) -> Any:
        result = _forward(key, params, inputs)
        if not isinstance(result, torch.Tensor):
            raise TypeError(f"key: the module {key!r} returned {type(result).__name__}, not one tensor; the operator "
                            "carries one")
        return result.clone(memory_format=torch.contiguous_format)

    @module.register_fake
    def _(params: list[Any], inputs: list[Any], key: str) -> Any:
        result = _forward(key, _specialised(params), _specialised(inputs))
        return result.new_empty(result.shape)

    @torch.library.custom_op("product_interactions::module_vjp", mutates_args=(),
                             schema="(Tensor[] params, Tensor[] inputs, str key, Tensor gradient) -> Tensor[]")
    def module_vjp(params: list[Any], inputs: list[Any], key: str, gradient: Any) -> list[Any]:
        _, vjp = torch.func.vjp(lambda p, i: _forward(key, p, i), list(params), list(inputs))
        found = [g for part in vjp(gradient) for g in part]
        return [(torch.zeros_like(operand) if g is None else g).contiguous()
                for g, operand in zip(found, [*params, *inputs])]

    @module_vjp.register_fake
    def _(params: list[Any], inputs: list[Any], key: str, gradient: Any) -> list[Any]:
        return [operand.new_empty(operand.shape) for operand in [*params, *inputs]]

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        params, signals, key = inputs                    # torch passes the operator's arguments as `inputs`
        ctx.count, ctx.key = len(params), key
        ctx.save_for_backward(*params, *signals)

    def backward(ctx: Any, gradient: Any) -> tuple[list[Any], list[Any], None]:
        saved = ctx.saved_tensors
        found = module_vjp(list(saved[:ctx.count]), list(saved[ctx.count:]), ctx.key, gradient)
        return found[:ctx.count], found[ctx.count:], None

    module.register_autograd(backward, setup_context=setup_context)
    OPERATORS.extend((module, module_vjp))
    return module, module_vjp


def applies(inputs: tuple[Any, ...], options: dict[str, Any]) -> bool:
    """True when a traced call on `inputs` with `options` can be the operator: floating torch tensors, no options."""
    torch = sys.modules.get("torch")
    return torch is not None and not options and bool(inputs) and all(
        isinstance(x, torch.Tensor) and x.is_floating_point() for x in inputs)
