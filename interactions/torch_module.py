"""`to_torch`: an architecture as a `torch.nn.Module`, its parameters `nn.Parameter`s under the model's names.

The module's parameters start at ``model.init(seed)``; calling it on a batch runs ``model.apply`` on the torch
engine (`kernels.arrays.registry`), so torch's autograd, optimisers, devices (``.to("cuda")``) and
`DistributedDataParallel` all apply.  ``torch.compile(module, fullgraph=True)`` traces a call as one operator
(`kernels.arrays.torch_call`), tensors given by keyword in their places (``module(x, mask=m)``).  A call with
options besides tensors (``module(x, method="chunked")``, ``module(x, None)``) has an owner of its own, a
`CallForm`, made when it is first traced (at most `FORMS_PER_MODULE` a module; calls beyond them run at a graph
break).  Every module of `to_torch` shares one ``forward``, whose compiled forms torch caps per process
(``recompile_limit``, 8): compile the model that holds many modules, not each of them.  Compiled expressions and
product kernels take torch tensors directly, so they can be called inside any module of one's own.  torch is
imported only here.
"""
from __future__ import annotations

import copy
import inspect
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..extras import require
from ..kernels.arrays import (autocast_of, is_half, outside_torch_compile, torch_call, torch_compiling,
                              traced_arguments)

#: The most call forms (`CallForm`) a module has.
FORMS_PER_MODULE = 64
#: A module's key -> {(its call's tensor inputs' names, its constants with their types): that form}.
_FORMS: dict[str, dict[tuple[Any, ...], CallForm]] = {}
_MAKING = threading.Lock()
#: id(model) -> the module class made for it (`_module_class`), while one of its modules lives: every module of a
#: model is of one class (``torch.func.stack_module_state`` stacks only those).
_CLASSES: weakref.WeakValueDictionary[int, type] = weakref.WeakValueDictionary()


def to_torch(model: Any, seed: int | np.random.Generator = 0, dtype: Any = np.float64) -> Any:
    """A `torch.nn.Module` for `model` (anything with ``parameters``, ``init(seed, dtype)`` and
    ``apply(params, *inputs, **options)``); see the module docstring.  `dtype` is numpy's or torch's (bfloat16:
    drawn in float32, then rounded).

    >>> import numpy as np, torch
    >>> from product_interactions.interactions.architectures import gating
    >>> model = gating(channels=3)
    >>> module = to_torch(model, seed=0)
    >>> sorted(name for name, _ in module.named_parameters())
    ['W']
    >>> x = np.random.default_rng(1).standard_normal((2, 5, 3))
    >>> bool(np.allclose(module(torch.tensor(x)).detach().numpy(), model.apply(model.init(seed=0), x)))
    True
    """
    return _module_class(model)(seed, dtype)


def _module_class(model: Any) -> Any:
    """The `torch.nn.Module` class of `model`'s modules (`to_torch`): made once while any of them lives."""
    with _MAKING:
        made = _CLASSES.get(id(model))
        if made is None:
            made = _CLASSES[id(model)] = _made_class(model)
    return made


def _made_class(model: Any) -> Any:
    """A new `torch.nn.Module` class for `model` (`_module_class`)."""
    torch: Any = require("torch", "torch", "to_torch")
    names = _inputs_of(model.apply)
    weight_names = tuple(model.parameters)

    class ModelModule(torch.nn.Module):
        """`model` as a torch module: ``forward(*inputs, **options) = model.apply(parameters, *inputs, ...)``."""

        def __init__(self, seed: int | np.random.Generator, dtype: Any) -> None:
            super().__init__()
            self.model = model
            target = dtype if isinstance(dtype, torch.dtype) else None
            if target is not None:          # drawn in numpy's dtype of its kind, bfloat16 (numpy has none) in float32
                dtype = np.float32 if target == torch.bfloat16 else torch.empty((), dtype=target).numpy().dtype
            for name, value in model.init(seed, dtype).items():
                self.register_parameter(name, torch.nn.Parameter(torch.as_tensor(value, dtype=target)))
            self.key = _registered(self)

        def __reduce__(self) -> tuple[Any, ...]:
            """Pickled (``torch.save(module)``, a spawned worker) as its model and its state, the class made again
            from the model: `to_torch` makes it, so no module-level name finds it."""
            return _remade, (self.model, dict(self.__dict__))

        def __setstate__(self, state: dict[str, Any]) -> None:
            """A copy (``copy.deepcopy``, unpickling) gets a key of its own: the operator finds a module by it."""
            super().__setstate__(state)
            self.key = _registered(self)

        def __deepcopy__(self, memo: dict[int, Any]) -> Any:
            """A copy of the parameters and the rest of the module's state with the same model (immutable), so of
            the same class."""
            memo[id(self.model)] = self.model
            copied = type(self).__new__(type(self))
            memo[id(self)] = copied
            copied.__setstate__(copy.deepcopy(dict(self.__dict__), memo))
            return copied

        def weights(self) -> list[Any]:
            """The model's parameters, in its order, as the module holds them now: read by name, so that torch's
            parametrizations (``weight_norm``, ``spectral_norm``, ``orthogonal``, ``register_parametrization``),
            pruning and a tensor set in a parameter's place take effect, as in torch's own layers."""
            return [getattr(self, name) for name in weight_names]

        def forward(self, *inputs: Any, **options: Any) -> Any:
            """The model on `inputs` (tensors in the parameters' dtype; inside ``torch.autocast``, a half-precision
            one too, an earlier layer's output there: taken as the parameters' dtype, and the autocast computes)."""
            weights = self.weights()
            inputs, options = self._checked_inputs(weights, inputs, options)
            if torch_compiling():
                split = traced_arguments(names, {}, inputs, options)
                if split is not None:
                    given, operands, constants = split
                    key = self.key if not constants and given == names[:len(given)] else \
                        form_key(self.key, given, constants)
                    if key is not None and torch_call.applies(operands):
                        return torch_call.traced(key, [*weights, *operands])
            return self._run(weights, *inputs, **options)

        def _checked_inputs(self, weights: list[Any], inputs: Sequence[Any],
                            options: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
            """The inputs, by position and by name, each `_checked` against the weights' dtype."""
            expected = weights[0].dtype if weights else None
            return (tuple(self._checked(names[n] if n < len(names) else f"inputs[{n}]", x, expected)
                          for n, x in enumerate(inputs)),
                    {key: self._checked(key, value, expected) if key in names else value
                     for key, value in options.items()})

        @staticmethod
        def _checked(argument: str, x: Any, expected: Any) -> Any:
            """Input `argument` (given by position or by name): as it is, in `expected` (the parameters' dtype) where
            it is an autocast's half-precision tensor, else a TypeError naming the dtypes.  A mask is taken in any
            dtype (its numbers are 0 and 1)."""
            if argument == "mask" or not (torch.is_tensor(x) and x.is_floating_point() and expected is not None and
                                          x.dtype != expected):
                return x
            if is_half(x.dtype) and autocast_of(x) is not None:
                return x.to(expected)
            raise TypeError(f"{argument}: expected {expected}, the dtype of the module's parameters (convert the "
                            f"input, or the module with .to({x.dtype})), got {x.dtype}")

        def flat_call(self, operands: list[Any], **named: Any) -> Any:
            """The model on its parameters (`weights`), then its inputs, in one list (`kernels.arrays.torch_call`),
            and the `named` inputs and options; the inputs checked again (a jit trace replays no check of
            `forward`'s)."""
            count = len(weight_names)
            inputs, named = self._checked_inputs(operands[:count], operands[count:], named)
            return self.model.apply(dict(zip(weight_names, operands[:count])), *inputs, **named)

        def run(self, *inputs: Any, **options: Any) -> Any:
            """The forward as the library runs it (traced by torch.compile: at a graph break)."""
            return self._run(self.weights(), *inputs, **options)

        @outside_torch_compile
        def _run(self, weights: list[Any], *inputs: Any, **options: Any) -> Any:
            return self.model.apply(dict(zip(weight_names, weights)), *inputs, **options)

        def extra_repr(self) -> str:
            return name

    name = getattr(model, "name", type(model).__name__)
    ModelModule.__name__ = ModelModule.__qualname__ = f"{name}Module"
    return ModelModule


def _remade(model: Any, state: dict[str, Any]) -> Any:
    """A pickled module (`ModelModule.__reduce__`): its class made for `model`, its `state` set."""
    cls = _module_class(model)
    module = cls.__new__(cls)
    module.__setstate__(state)
    return module


def _inputs_of(apply: Any) -> tuple[str, ...]:
    """The names of ``apply``'s leading positional parameters after ``params``."""
    names = []
    for parameter in list(inspect.signature(apply).parameters.values())[1:]:
        if parameter.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
            break
        names.append(parameter.name)
    return tuple(names)


class CallForm:
    """A module's call with its tensor inputs named and its other options fixed: the owner of such traced calls."""

    def __init__(self, module: Any, names: tuple[str, ...], constants: tuple[tuple[str, Any], ...]) -> None:
        self.module, self.names, self.constants = weakref.proxy(module), names, dict(constants)
        self.key = torch_call.register(self)

    def flat_call(self, operands: list[Any]) -> Any:
        """The module's call on its parameters, then the named inputs, in one list."""
        count = len(operands) - len(self.names)
        return self.module.flat_call(operands[:count], **dict(zip(self.names, operands[count:])), **self.constants)


def _registered(module: Any) -> str:
    """`module`'s key as an owner of traced calls; its call forms are dropped with it."""
    key = torch_call.register(module)
    weakref.finalize(module, _FORMS.pop, key, None)
    return key


def form_key(module_key: str, names: tuple[str, ...], constants: tuple[tuple[str, Any], ...]) -> str | None:
    """The key of the `CallForm` of the module of `module_key` for tensor inputs `names` and these constants (made
    on the first call; True, 1 and 1.0 are told apart), or None where it has `FORMS_PER_MODULE` forms already."""
    module = torch_call.owner_for(module_key)
    index = (names, tuple((name, type(value), value) for name, value in constants))
    with _MAKING:
        forms = _FORMS.setdefault(module_key, {})
        found = forms.get(index)
        if found is None and len(forms) < FORMS_PER_MODULE:
            found = forms[index] = CallForm(module, names, constants)
    return None if found is None else found.key


# torch.compile runs form_key as it traces and takes its result as a constant (torch.compiler.assume_constant_result's
# mark, set here so that torch need not be imported).
form_key._dynamo_marked_constant = True  # type: ignore[attr-defined]
