"""`traced_as_operator`: a library function (a scan, the masked softmax, the signature) that torch.compile traces
as one operator of its graph, `torch_call`'s, so ``fullgraph=True`` takes it and Inductor fuses around it.

Where torch.compile traces a call whose arguments are torch tensors and constants (None, numbers, strings), the
tensors become the operator's operands and the constants are fixed in the operator's owner, an `Entry`: one per
function and constants, made when a call is first traced (`entry_key`, which torch.compile runs as it traces and
takes its result as a constant) and kept for the process, since compiled graphs name it.  At most `ENTRY_LIMIT`
are made; calls beyond them, and calls with other arguments (a numpy array, a list), run at a graph break, as
`outside_torch_compile` runs them.  Outside torch.compile the function runs as it is.

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
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from . import torch_call
from .torch_engine import outside_torch_compile, torch_compiling

#: A decorated function's type.
F = TypeVar("F", bound=Callable[..., Any])
#: The most entries (functions with their constants) a process makes.
ENTRY_LIMIT = 1024
#: The functions decorated, by module and name (`entry_key` is given the name: a constant torch.compile passes).
_FUNCTIONS: dict[str, Callable[..., Any]] = {}
#: (function's name, its tensor arguments' names, its other arguments) -> the owner of such calls.
_ENTRIES: dict[tuple[str, tuple[str, ...], tuple[tuple[str, Any], ...]], Entry] = {}
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
    first call), or None where `ENTRY_LIMIT` entries exist already."""
    index = (name, names, constants)
    with _MAKING:
        found = _ENTRIES.get(index)
        if found is None and len(_ENTRIES) < ENTRY_LIMIT:
            found = _ENTRIES[index] = Entry(_FUNCTIONS[name], names, constants)
    return None if found is None else found.key


# torch.compile runs entry_key as it traces and takes its result as a constant: the mark that
# torch.compiler.assume_constant_result sets, set here so that torch need not be imported.
entry_key._dynamo_marked_constant = True  # type: ignore[attr-defined]


def traced_as_operator(function: F) -> F:
    """`function` (of tensors and constants, returning one tensor) as `torch_call`'s operator where torch.compile
    traces it on torch tensors (module docstring); elsewhere as it is."""
    name = f"{function.__module__}.{function.__qualname__}"
    _FUNCTIONS[name] = function
    parameters = tuple(inspect.signature(function).parameters)
    at_a_graph_break = outside_torch_compile(function)

    @functools.wraps(function)
    def entry(*arguments: Any, **options: Any) -> Any:
        if torch_compiling() and len(arguments) <= len(parameters):
            torch = sys.modules["torch"]
            bound = {**dict(zip(parameters, arguments)), **options}
            names = tuple(n for n, value in bound.items() if isinstance(value, torch.Tensor))
            constants = tuple((n, value) for n, value in bound.items() if n not in names)
            operands = [bound[n] for n in names]
            if names and all(type(value) in CONSTANTS for _, value in constants):
                key = entry_key(name, names, constants)            # defines the operator with the first entry
                if key is not None and torch_call.applies(operands):
                    return torch_call.traced(key, operands)
        return at_a_graph_break(*arguments, **options)
    return entry  # type: ignore[return-value]
