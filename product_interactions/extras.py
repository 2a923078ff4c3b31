"""Optional dependencies: a feature that needs an extra imports its library through `require`, which says in one
line which extra to install when the library is missing.

>>> require("math", "torch", "a feature").pi > 3
True
>>> try:
...     require("no_such_module", "torch", "to_torch")
... except MissingExtra as error:
...     print(error)
to_torch needs the torch extra (No module named 'no_such_module'): pip install "product-interactions[torch]"
"""
from __future__ import annotations

import importlib
import types


class MissingExtra(ImportError):
    """A library of an extra is not installed; the message names the extra and the command that installs it.
    The command line turns it into a usage error (exit code 2)."""


def install_command(extra: str) -> str:
    """The command that installs `extra`, as the messages quote it.

    >>> install_command("jax")
    'pip install "product-interactions[jax]"'
    """
    return f'pip install "product-interactions[{extra}]"'


def require(module: str, extra: str, feature: str) -> types.ModuleType:
    """`module`, imported; if it cannot be, a `MissingExtra` saying that `feature` needs `extra`."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtra(f"{feature} needs the {extra} extra ({error}): {install_command(extra)}") from error
