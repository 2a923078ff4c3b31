"""`traced_as_operator`: a library function (a scan, the masked softmax, the signature) that torch.compile traces
as one operator of its graph, `torch_call`'s, so ``fullgraph=True`` takes it and Inductor fuses around it.

Where torch.compile traces a call whose arguments are torch tensors and constants (None, numbers, strings), the
tensors become the operator's operands and the constants, the
defaults included, are fixed in the operator's owner, an `Entry`: one per function and constants, made when a
call is first traced (`entry_key`, which torch.compile runs as it traces and takes its result as a constant) and
kept for the process, since compiled graphs name it.  At most `ENTRY_LIMIT` are made; calls beyond them, and calls
with other arguments (a list, an object), run at a graph break, as `outside_torch_compile` runs them (torch.compile
makes a numpy array a tensor).  Outside torch.compile the function runs as it is.

A bad argument is refused by the call on torch's fake tensors, while torch.compile traces: torch reports it as a
``TorchRuntimeError`` whose explanation holds the library's message (``ValueError: x: expected ...``).  An int
argument that changes between calls of one compiled function (a signature's depth) is traced by torch as a symbol;
the entry fixes it at its value (``operator.index``, which torch.compile guards), so each value has its graph.

>>> import torch
>>> from product_interactions import kernels
>>> a, b = torch.rand(2, 7, 3, dtype=torch.float64), torch.randn(2, 7, 3, dtype=torch.float64)
>>> scan = torch.compile(lambda a, b: kernels.linear_scan(a, b).sin(), fullgraph=True, backend="eager")
>>> bool(torch.allclose(scan(a, b), kernels.linear_scan(a, b).sin()))
True
"""
from __future__ import annotations

import functools
import inspect
import operator
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from . import torch_call
from .jax_defaults import with_jax_defaults
from .torch_engine import outside_torch_compile, torch_compiling

#: A decorated function's type.
F = TypeVar("F", bound=Callable[..., Any])
#: The most entries (functions with their constants) a process makes.
ENTRY_LIMIT = 1024
#: The functions decorated, each under its name and number (what `entry_key` is given: a string, which torch.compile
#: passes as a constant where an int it could trace as a symbol).
_FUNCTIONS: dict[str, Callable[..., Any]] = {}
#: (function's name, its tensor arguments' names, its other arguments with their types) -> the owner of such calls.
_ENTRIES: dict[tuple[Any, ...], Entry] = {}
_MAKING = threading.Lock()
#: The types of arguments an entry fixes.
CONSTANTS = (str, int, float, bool, type(None))


class Entry:
    """A library function with its arguments other than tensors fixed: the owner of its traced calls."""

    def __init__(self, function: Callable[..., Any], names: tuple[str, ...],
                 constants: tuple[tuple[str, Any], ...]) -> None:
        self.function, self.names, self.constants = function, names, dict(constants)
        self.key = torch_call.register(self)

    def flat_call(self, operands: list[Any]) -> Any:
        """The function on `operands` as its tensor arguments, and the fixed constants."""
        return self.function(**dict(zip(self.names, operands)), **self.constants)


def entry_key(name: str, names: tuple[str, ...], constants: tuple[tuple[str, Any], ...]) -> str | None:
    """The key of the entry for the function `name` with tensor arguments `names` and these constants (made on the
    first call; True, 1 and 1.0 are told apart), or None where `ENTRY_LIMIT` entries exist already."""
    index = (name, names, tuple((argument, type(value), value) for argument, value in constants))
    with _MAKING:
        found = _ENTRIES.get(index)
        if found is None and len(_ENTRIES) < ENTRY_LIMIT:
            found = _ENTRIES[index] = Entry(_FUNCTIONS[name], names, constants)
    return None if found is None else found.key


# torch.compile runs entry_key as it traces and takes its result as a constant: the mark that
# torch.compiler.assume_constant_result sets, set here so that torch need not be imported.
entry_key._dynamo_marked_constant = True  # type: ignore[attr-defined]


def traced_as_operator(function: F, batch_axis: int = 0) -> F:
    """`function` (of tensors and constants, returning one tensor) as `torch_call`'s operator where torch.compile
    traces it on torch tensors (module docstring); elsewhere as it is.  Its tensors' batch is on `batch_axis`
    (torch.export follows a dynamic batch there: `traced_as_one_operator`); a time-first function is decorated
    ``@functools.partial(traced_as_operator, batch_axis=1)``."""
    identity = f"{function.__module__}.{function.__qualname__}#{len(_FUNCTIONS)}"   # two of one name told apart
    _FUNCTIONS[identity] = function
    parameters = inspect.signature(function).parameters
    names = tuple(parameters)
    defaults = {name: p.default for name, p in parameters.items() if p.default is not inspect.Parameter.empty}
    at_a_graph_break = outside_torch_compile(with_jax_defaults(function, batch_axis))

    @functools.wraps(function)
    def entry(*arguments: Any, **options: Any) -> Any:
        if torch_compiling():
            split = traced_arguments(names, defaults, arguments, options)
            if split is not None:
                tensors, operands, constants = split
                key = entry_key(identity, tensors, constants)          # defines the operator with the first entry
                if key is not None and torch_call.applies(operands, batch_axis):
                    return torch_call.traced(key, operands)
        return at_a_graph_break(*arguments, **options)
    return entry  # type: ignore[return-value]


def traced_arguments(names: tuple[str, ...], defaults: dict[str, Any], arguments: tuple[Any, ...],
                     options: dict[str, Any]) -> tuple[tuple[str, ...], list[Any], tuple[tuple[str, Any], ...]] | None:
    """A traced call's torch tensors, by name and value, and its other arguments (with the `defaults` of those not
    given) as constants, in the order of `names`, a function's parameters; None where the call cannot be an
    operator's: it binds no tensor, binds wrongly (left to the call's own TypeError), or binds an argument that is
    no tensor and none of `CONSTANTS` (a list, an object).  An int is taken as an int (`operator.index`: a size
    torch.compile traces as a symbol becomes a constant it guards).

    >>> import torch
    >>> x = torch.ones(2)
    >>> traced_arguments(("x", "mask", "method"), {"mask": None, "method": "auto"}, (x,), {"method": "scan"})
    (('x',), [tensor([1., 1.])], (('mask', None), ('method', 'scan')))
    >>> traced_arguments(("x",), {}, (x,), {"y": 1}), traced_arguments(("x", "n"), {}, (x, [1]), {})
    (None, None)
    """
    if len(arguments) > len(names) or not all(name in names[len(arguments):] for name in options):
        return None
    torch = sys.modules["torch"]
    given = {**defaults, **dict(zip(names, arguments)), **options}
    tensors = tuple(name for name in names if name in given and isinstance(given[name], torch.Tensor))
    constants = tuple((name, operator.index(given[name]) if type(given[name]) is int else given[name])
                      for name in names if name in given and name not in tensors)
    if not tensors or not all(type(value) in CONSTANTS for _, value in constants):
        return None
    return tensors, [given[name] for name in tensors], constants
