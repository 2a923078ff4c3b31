"""A library call on torch tensors as one torch operator, ``torch.ops.product_interactions.call``, so that
``torch.compile(..., fullgraph=True)`` traces a compiled expression (`kernels.plans.plan.Plan`) or a model's module
(`interactions.torch_module`) as one node of its graph instead of failing at the library's graph break, and
Inductor fuses what surrounds it.

An owner (a plan, a module, a library function with its constants: `traced_entry`) registers itself and gets a
key; it answers ``flat_call(operands)``, its call on a flat list of tensors.  The operator is registered through
``torch.library.Library``.  Its fake body is the call on torch's fake tensors of plain sizes: the library's steps
are torch operations, which give the result's shape and dtype without numbers (no step asks a fake tensor for a
value, `TorchEngine.concrete`).  Where torch.compile traces a size as a symbol (one that changed between calls),
the result's sizes that follow it are that symbol (`symbolic_shape`), so one graph serves every length.

Its eager body is the call, recorded by autograd where a gradient is wanted (``wanted``: the operands that
require one in a traced training step), as an eager call records it: the library's own fast paths and backward
formulas, run once.  Torch runs an operator's body with autograd switched off; the body switches it back on for
the call (`_recording`).  Besides its result the operator returns a handle, a CPU tensor of one number (0: the
outputs are the same on every run); the record waits in `RECORDED` under the number's address until the backward
takes it or the handle dies (an inference call, or a forward whose result is dropped).  The gradient is a second
operator, ``call_vjp``, that backpropagates through the record, or where none was kept (inside a dispatch mode:
torch.compile checks a new graph's custom operators in one on its first run; a second backward), records the call
again first.  The result is a copy: the record may hold its own result for its backward, and Inductor may write
into an operator's output.  Gradients of gradients are not traced.

Mixed precision: a call traced inside ``torch.autocast`` names the autocast (``autocast``, "cuda:bfloat16"; "" for
none), and both bodies run the owner's call under it, so the graph's result has the dtype an eager call under the
same autocast gives (the real body had run without it under ``aot_eager`` and Inductor, and the fake body
always, so an eager backend's bfloat16 result met a graph that expected float32).

Keys are unique to this process (a random prefix: a compiled graph torch keeps on disk is never reused for another
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

import contextlib
import itertools
import secrets
import sys
import threading
import weakref
from typing import Any, NamedTuple

from .symbolic_shape import Rule, traced_result
from .torch_engine import traced_as_one_operator

#: key -> the live owner of that key.
_OWNERS: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
#: This process's prefix of keys, and the counter after it.
_PREFIX, _COUNT = secrets.token_hex(8), itertools.count()
#: The operator, its vector-Jacobian product and the torch library that holds them, once defined (`define`).
OPERATORS: list[Any] = []
_DEFINING = threading.Lock()


class Recorded(NamedTuple):
    """A call recorded by autograd: its result, and the operands it was recorded from (`wanted`) as its leaves."""
    result: Any
    wanted: list[int]
    leaves: list[Any]

    def covers(self, needed: list[int]) -> bool:
        """Whether every operand in `needed` is one of the leaves."""
        return all(kept or not need for kept, need in zip(self.wanted, needed))


#: The address of a handle's number -> the recorded call of a forward, kept while the handle lives.
RECORDED: dict[int, Recorded] = {}
#: key -> the rules of its result's shape in the graphs traced with symbols (`symbolic_shape.Rule`), the newest
#: `RULES_KEPT`; dropped with the owner.
RULES: dict[str, list[Rule]] = {}
RULES_KEPT = 16


def register(owner: Any) -> str:
    """A key for `owner` (anything with ``flat_call(operands)``), unique to this process, under which the operator
    finds it; the operator is defined now if torch is imported."""
    key = f"{type(owner).__name__}-{_PREFIX}-{next(_COUNT)}"
    _OWNERS[key] = owner
    weakref.finalize(owner, RULES.pop, key, None)
    if "torch" in sys.modules:
        define()
    return key


def owner_for(key: str) -> Any:
    """The owner of `key` (KeyError, saying so, where it is gone)."""
    found = _OWNERS.get(key)
    if found is None:
        raise KeyError(f"key: nothing named {key!r} lives in this process (a compiled or traced graph outlived "
                       f"it: keep what it traced alive, or trace again)")
    return found


def _recording(torch: Any) -> Any:
    """A context in which autograd records inside an operator's body (torch runs a body with autograd's dispatch
    keys excluded), or None where it cannot or must not: inside a dispatch mode, whose bodies run with the tracking
    of views and in-place updates switched off too, and under saved-tensor hooks (activation checkpointing,
    offloading), which decide what a forward keeps: there the forward keeps nothing of its own, so a checkpoint's
    recomputation saves what the first run saved."""
    C = torch._C
    if C._dispatch_tls_is_dispatch_key_excluded(C.DispatchKey.ADInplaceOrView) or \
            C._autograd._top_saved_tensors_default_hooks(True) is not None:
        return None
    return C._ForceDispatchKeyGuard(C._dispatch_tls_local_include_set(),
                                    C._dispatch_tls_local_exclude_set().remove(C.DispatchKey.AutogradFunctionality))


def _autocast(torch: Any, autocast: str) -> Any:
    """The context of a traced call's `autocast` ("cuda:bfloat16" runs under ``torch.autocast("cuda",
    torch.bfloat16)``; "" adds none: torch.compile guards the autocast state a graph was traced in)."""
    if not autocast:
        return contextlib.nullcontext()
    device, dtype = autocast.split(":")
    return torch.autocast(device, getattr(torch, dtype))


def _record(torch: Any, key: str, operands: list[Any], wanted: list[int], autocast: str) -> Recorded | None:
    """The owner's call on `operands` recorded by autograd from the wanted ones, or None where it cannot be; views
    recorded as eager autograd records them (torch.compile's runtime turns on view replay, which made each view and
    its backward a few microseconds slower: 1.15x the eager time of Mamba's step)."""
    recording = _recording(torch)
    if recording is None:
        return None
    with recording, torch.enable_grad(), torch.autograd.grad_mode._force_original_view_tracking(False), \
            _autocast(torch, autocast):
        leaves = [operand.detach().requires_grad_() for operand, keep in zip(operands, wanted) if keep]
        given = iter(leaves)
        result = owner_for(key).flat_call([next(given) if keep else operand.detach()
                                           for operand, keep in zip(operands, wanted)])
    return Recorded(result, list(wanted), leaves)


def _picked(flags: list[int], kept: list[int]) -> list[int]:
    """`flags` of the operands that `kept` marks, in order."""
    return [flag for flag, keep in zip(flags, kept) if keep]


def _one_tensor(torch: Any, key: str, result: Any) -> Any:
    if not isinstance(result, torch.Tensor):
        raise TypeError(f"key: {key!r} returned {type(result).__name__}, not one tensor; the operator carries one")
    return result


def _call(operands: list[Any], key: str, wanted: list[int], autocast: str) -> tuple[Any, Any]:
    """The operator's body: the result (a copy) and the handle; the call recorded where a gradient is wanted."""
    import torch
    handle = torch.zeros((), dtype=torch.int64)
    recorded = _record(torch, key, list(operands), wanted, autocast) if any(wanted) else None
    if recorded is None:
        with _autocast(torch, autocast):
            result = _one_tensor(torch, key, owner_for(key).flat_call(list(operands)))
    else:
        result = _one_tensor(torch, key, recorded.result).detach()
    _check_traced(key, list(operands), result)
    if recorded is not None:
        RECORDED[handle.data_ptr()] = recorded
        weakref.finalize(handle, RECORDED.pop, handle.data_ptr(), None)
    return result.clone(memory_format=torch.contiguous_format), handle


def _call_fake(operands: list[Any], key: str, wanted: list[int], autocast: str) -> tuple[Any, Any]:
    import torch
    with _autocast(torch, autocast):
        traced = traced_result(owner_for(key), list(operands))
    if traced.rule is not None and traced.rule not in RULES.get(key, ()):
        rules = RULES.setdefault(key, [])
        rules.append(traced.rule)
        del rules[:-RULES_KEPT]
    return _one_tensor(torch, key, traced.result).new_empty(traced.shape), \
        torch.empty((), dtype=torch.int64, device="cpu")


def _check_traced(key: str, operands: list[Any], result: Any) -> None:
    """Refuse a result whose shape breaks the rule its graph was traced with (`symbolic_shape.Rule`)."""
    rules = RULES.get(key)
    if rules:
        shapes = [tuple(t.shape) for t in operands]
        expected = [shape for shape in (rule.expected(shapes) for rule in rules) if shape is not None]
        if expected and tuple(result.shape) not in expected:
            raise RuntimeError(f"key: {key!r} returned shape {tuple(result.shape)} where torch.compile traced "
                               f"{expected[-1]}: its result's sizes do not follow its inputs' as they did at the "
                               f"sizes traced (compile with dynamic=False, or mark the sizes static)")


def _call_vjp(operands: list[Any], key: str, wanted: list[int], autocast: str, handle: Any,
              gradient: Any) -> list[Any]:
    """The backward's body: the gradients of the wanted operands, through the forward's record or a new one."""
    import torch
    recorded = RECORDED.pop(handle.data_ptr(), None)
    if recorded is None or not recorded.covers(wanted):
        recorded = _record(torch, key, list(operands), wanted, autocast)
    if recorded is None:
        raise RuntimeError(f"key: the backward of {key!r} cannot run inside a dispatch mode (its forward kept no "
                           f"recorded call)")
    leaves = [leaf for leaf, need in zip(recorded.leaves, _picked(wanted, recorded.wanted)) if need]
    result = _one_tensor(torch, key, recorded.result)
    found = torch.autograd.grad(result, leaves, gradient, allow_unused=True) if result.requires_grad else \
        [None] * len(leaves)
    return _unaliased(torch, [torch.zeros_like(leaf) if g is None else g for g, leaf in zip(found, leaves)],
                      [*operands, gradient])


def _unaliased(torch: Any, results: list[Any], inputs: list[Any]) -> list[Any]:
    """`results`, contiguous, each copied where it shares memory with an input or an earlier result (autograd may
    pass the incoming gradient itself on; an operator's outputs alias nothing)."""
    taken = {tensor.untyped_storage().data_ptr() for tensor in inputs}
    fresh = []
    for result in results:
        if result.untyped_storage().data_ptr() in taken:
            result = result.clone(memory_format=torch.contiguous_format)
        fresh.append(result.contiguous())
        taken.add(result.untyped_storage().data_ptr())
    return fresh


def _call_vjp_fake(operands: list[Any], key: str, wanted: list[int], autocast: str, handle: Any,
                   gradient: Any) -> list[Any]:
    return [operand.new_empty(operand.shape) for operand, keep in zip(operands, wanted) if keep]


def _refuse_second_order(operands: list[Any], key: str, wanted: list[int], autocast: str, handle: Any,
                         gradient: Any) -> list[Any]:
    """``call_vjp`` where autograd is on: refused where it would have to be differentiated, else its body."""
    import torch
    if torch.is_grad_enabled() and any(t.requires_grad for t in (*operands, gradient)):
        raise NotImplementedError(f"key: gradients of gradients of {key!r} are not traced under torch.compile (call "
                                  f"the module outside it, or differentiate once)")
    with torch._C._AutoDispatchBelowAutograd():
        return OPERATORS[1](operands, key, wanted, autocast, handle, gradient)


def define() -> tuple[Any, Any]:
    """Define the operator and its vector-Jacobian product (once; torch must be importable).  They are registered
    with `torch.library.Library` and a `torch.autograd.Function` of their own: `torch.library.custom_op`'s wrappers
    around the same bodies took 0.19 ms more a training step (attention, length 8, on the project's CPU)."""
    with _DEFINING:
        if not OPERATORS:
            _define()
    return OPERATORS[0], OPERATORS[1]


def _define() -> None:
    import torch
    library = torch.library.Library("product_interactions", "FRAGMENT")
    library.define("call(Tensor[] operands, str key, int[] wanted, str autocast) -> (Tensor, Tensor)")
    library.define("call_vjp(Tensor[] operands, str key, int[] wanted, str autocast, Tensor handle, "
                   "Tensor gradient) -> Tensor[]")
    for name, body, fake in (("call", _call, _call_fake), ("call_vjp", _call_vjp, _call_vjp_fake)):
        library.impl(name, body, "CompositeExplicitAutograd")
        torch.library.register_fake(f"product_interactions::{name}", fake, lib=library)
    call, call_vjp = torch.ops.product_interactions.call.default, torch.ops.product_interactions.call_vjp.default

    class Recording(torch.autograd.Function):
        """The operator under autograd: its backward is ``call_vjp`` of the operands that need a gradient."""

        @staticmethod
        def forward(ctx: Any, key: str, wanted: list[int], autocast: str, *operands: Any) -> tuple[Any, Any]:
            with torch._C._AutoDispatchBelowAutograd():
                result, handle = call(list(operands), key, wanted, autocast)
            ctx.mark_non_differentiable(handle)
            ctx.save_for_backward(handle, *operands)
            ctx.key, ctx.autocast = key, autocast
            return result, handle

        @staticmethod
        def backward(ctx: Any, gradient: Any, _: Any) -> tuple[Any, ...]:
            handle, *operands = ctx.saved_tensors
            needed = [int(need) for need in ctx.needs_input_grad[3:]]
            found = iter(call_vjp(operands, ctx.key, needed, ctx.autocast, handle, gradient) if any(needed) else ())
            return (None, None, None, *(next(found) if need else None for need in needed))

    def differentiated(operands: list[Any], key: str, wanted: list[int], autocast: str) -> tuple[Any, Any]:
        if torch.is_grad_enabled() and any(operand.requires_grad for operand in operands):
            wanted = wanted or [int(operand.requires_grad) for operand in operands]     # none given: a jit trace's
            return Recording.apply(key, wanted, autocast, *operands)
        with torch._C._AutoDispatchBelowAutograd():      # nothing to differentiate: autograd's Function skipped
            return call(operands, key, wanted, autocast)
    library.impl("call", differentiated, "Autograd")
    library.impl("call_vjp", _refuse_second_order, "Autograd")
    OPERATORS.extend((call, call_vjp, library))           # the library keeps the registrations alive


def applies(arrays: list[Any], batch_axis: int = 0) -> bool:
    """True when a traced call on `arrays` (their batch on axis `batch_axis`) can be the operator and is to be
    (`traced_as_one_operator`): it is defined, and they are torch tensors (of any dtype: a mask, token ids; only
    floating ones can want a gradient)."""
    torch = sys.modules.get("torch")
    return bool(OPERATORS) and torch is not None and bool(arrays) and \
        all(isinstance(a, torch.Tensor) for a in arrays) and traced_as_one_operator(arrays, batch_axis)


def traced(key: str, operands: list[Any]) -> Any:
    """The operator's call on `operands` for the owner of `key` (what a traced call records), recording the call
    from the operands that need a gradient, under the autocast of the first operand's device."""
    import torch
    # torch.jit.trace records the flags as constants (ints: it records no list of bools), and its trace runs under
    # any grad mode: there none are given (an empty list), and the operator decides per call (`differentiated`)
    wanted = [] if torch.jit.is_tracing() else \
        [int(torch.is_grad_enabled() and operand.requires_grad) for operand in operands]
    device = operands[0].device.type
    autocast = f"{device}:{str(torch.get_autocast_dtype(device)).split('.')[-1]}" \
        if torch.amp.is_autocast_available(device) and torch.is_autocast_enabled(device) else ""
    return OPERATORS[0](operands, key, wanted, autocast)[0]
