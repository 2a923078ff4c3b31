"""`to_torch`: an architecture as a `torch.nn.Module`, its parameters `nn.Parameter`s under the model's names.

The module's parameters start at ``model.init(seed)``; calling it on a batch runs ``model.apply`` on the torch
engine (`kernels.arrays.registry`), so torch's autograd, optimisers, devices (``.to("cuda")``) and
`DistributedDataParallel` all apply.  ``torch.compile(module, fullgraph=True)`` traces a call as one operator
(`kernels.arrays.torch_call`); a tensor given by keyword (``module(x, mask=m)``) takes its place among the
inputs, and other options (a method's name) run at a graph break.  Every module of `to_torch` shares one
``forward``, whose compiled forms torch caps per process (``recompile_limit``, 8): compile the model that holds
many modules, not each of them.  Compiled expressions and product kernels take torch tensors directly, so they can
be called inside any module of one's own.  torch is imported only here.
"""
from __future__ import annotations

import inspect
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ..extras import require
from ..kernels.arrays import outside_torch_compile, torch_call, torch_compiling


def to_torch(model: Any, seed: int | np.random.Generator = 0, dtype: DTypeLike = np.float64) -> Any:
    """A `torch.nn.Module` for `model` (anything with ``parameters``, ``init(seed, dtype)`` and
    ``apply(params, *inputs, **options)``); see the module docstring.

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
    torch: Any = require("torch", "torch", "to_torch")
    names, defaults = _inputs_of(model.apply)

    class ModelModule(torch.nn.Module):
        """`model` as a torch module: ``forward(*inputs, **options) = model.apply(parameters, *inputs, ...)``."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model
            for name, value in model.init(seed, dtype).items():
                self.register_parameter(name, torch.nn.Parameter(torch.as_tensor(value)))
            self.key = torch_call.register(self)

        def __setstate__(self, state: dict[str, Any]) -> None:
            """A copy (``copy.deepcopy``) gets a key of its own: the operator finds a module by its key."""
            super().__setstate__(state)
            self.key = torch_call.register(self)

        def forward(self, *inputs: Any, **options: Any) -> Any:
            expected = next(iter(self._parameters.values())).dtype if self._parameters else None
            for n, x in enumerate(inputs):
                if torch.is_tensor(x) and x.is_floating_point() and expected is not None and x.dtype != expected:
                    argument = "x" if len(inputs) == 1 else f"inputs[{n}]"
                    raise TypeError(f"{argument}: expected {expected}, the dtype of the module's parameters (convert "
                                    f"the input, or the module with .to({x.dtype})), got {x.dtype}")
            if torch_compiling():
                operands = in_order(names, defaults, inputs, options) if options else list(inputs)
                if operands is not None and torch_call.applies(operands):
                    return torch_call.traced(self.key, [*(p for _, p in self.named_parameters()), *operands])
            return self.run(*inputs, **options)

        def flat_call(self, operands: list[Any]) -> Any:
            """The model on its parameters, then its inputs, in one list (`kernels.arrays.torch_call`)."""
            names = [name for name, _ in self.named_parameters()]
            return self.model.apply(dict(zip(names, operands)), *operands[len(names):])

        @outside_torch_compile
        def run(self, *inputs: Any, **options: Any) -> Any:
            """The forward as the library runs it (traced by torch.compile: at a graph break)."""
            return self.model.apply(dict(self._parameters), *inputs, **options)

        def extra_repr(self) -> str:
            return name

    name = getattr(model, "name", type(model).__name__)
    ModelModule.__name__ = ModelModule.__qualname__ = f"{name}Module"
    return ModelModule()


def _inputs_of(apply: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The names of ``apply``'s leading positional parameters after ``params``, and their defaults."""
    parameters = []
    for parameter in list(inspect.signature(apply).parameters.values())[1:]:
        if parameter.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
            break
        parameters.append(parameter)
    return (tuple(p.name for p in parameters),
            {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty})


def in_order(names: tuple[str, ...], defaults: dict[str, Any], inputs: tuple[Any, ...],
             options: dict[str, Any]) -> list[Any] | None:
    """`inputs`, then `options` in their places among `names`, an option of None left to a default of None; None
    where they are not the first of `names` (a gap, an unknown or repeated name: the call runs as given).

    >>> in_order(("x", "mask", "method"), {"mask": None, "method": "auto"}, ("X",), {"mask": "M"})
    ['X', 'M']
    >>> in_order(("x", "mask"), {"mask": None}, ("X",), {"mask": None}), in_order(("x", "mask"), {}, ("X",), {"y": 1})
    (['X'], None)
    """
    given = dict(zip(names, inputs))
    if len(inputs) > len(names) or any(name in given or name not in names for name in options):
        return None
    given.update((name, value) for name, value in options.items()
                 if not (value is None and name in defaults and defaults[name] is None))
    leading = names[:len(given)]
    return [given[name] for name in leading] if set(leading) == set(given) else None
