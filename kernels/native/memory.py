"""The memory guard: a kernel refuses, before it allocates, work whose temporaries would exceed the limit.

The limit is ``kernels.MEMORY_LIMIT`` (bytes, default 2 GiB), kept here: setting it (`set_limit`, or assigning
the package attribute, which calls it) checks the value and takes effect at once.  Inputs and the result are not
counted; structure-constant arrays and intermediates are, and so are the results of the chunks a batch is cut into
(the call's result is assembled from them).

>>> from product_interactions import kernels
>>> kernels.MEMORY_LIMIT == DEFAULT_LIMIT == 2 * 2**30
True
>>> format_bytes(3 * 2**20)
'3.0 MiB (3,145,728 bytes)'
"""
from __future__ import annotations

#: The default of ``kernels.MEMORY_LIMIT``.
DEFAULT_LIMIT = 2 * 2**30


class MemoryLimitError(MemoryError, ValueError):
    """Raised instead of allocating more than ``kernels.MEMORY_LIMIT`` bytes of temporaries."""


_limit = DEFAULT_LIMIT


def limit() -> int:
    """The current ``kernels.MEMORY_LIMIT``."""
    return _limit


def set_limit(value: int) -> None:
    """Set ``kernels.MEMORY_LIMIT`` to `value` bytes (a positive int; anything else is refused and nothing changes).

    >>> before = limit()
    >>> set_limit(2**20); limit()
    1048576
    >>> set_limit(before)
    """
    global _limit
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise TypeError(f"kernels.MEMORY_LIMIT: expected a positive int number of bytes, got {value!r:.60}")
    _limit = int(value)


def format_bytes(count: float) -> str:
    """A byte count for people: binary units, then the exact figure."""
    count = int(count)
    size, unit = float(count), "bytes"
    for name in ("KiB", "MiB", "GiB", "TiB"):
        if size < 1024:
            break
        size, unit = size / 1024, name
    return f"{count:,} bytes" if unit == "bytes" else f"{size:.1f} {unit} ({count:,} bytes)"


def refuse(what: str, needed: float, alternatives: dict[str, float]) -> None:
    """Raise `MemoryLimitError`: `what` needs `needed` bytes; `alternatives` maps strategy -> bytes it needs."""
    fitting = {name: size for name, size in alternatives.items() if size <= limit()}
    if fitting:
        advice = "; ".join(f"strategy={name} needs {format_bytes(size)}" for name, size in fitting.items())
        advice = f"these avoid it: {advice}"
    else:
        advice = "no strategy fits: split the batch or raise kernels.MEMORY_LIMIT"
    raise MemoryLimitError(f"{what} needs at least {format_bytes(needed)} of temporaries (structure constants "
                           f"and one batch row of intermediates), more than kernels.MEMORY_LIMIT = "
                           f"{format_bytes(limit())}; {advice}")


def install(package: str) -> None:
    """Give the module `package` (kernels) a ``MEMORY_LIMIT`` attribute kept here: reading it reads `limit`,
    assigning it calls `set_limit`."""
    import sys
    import types

    class Package(types.ModuleType):
        @property
        def MEMORY_LIMIT(self) -> int:
            """Bytes of temporaries a kernel may allocate (structure constants and intermediates); settable."""
            return limit()

        @MEMORY_LIMIT.setter
        def MEMORY_LIMIT(self, value: int) -> None:
            set_limit(value)

        def __dir__(self) -> list[str]:
            return sorted(set(super().__dir__()) | {"MEMORY_LIMIT"})

    sys.modules[package].__class__ = Package
