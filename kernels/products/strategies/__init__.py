"""The lowering strategies: one module each, found by this registry, so a new strategy is one new file.

Every strategy module declares

* ``NAME`` and ``ROLE``: ``"leaf"`` strategies (identify, dense) give the factor's axis a term of the one
  contraction at the bottom of a kernel; ``"level"`` strategies (gather, fft, codegen, graded, compiled, scatter)
  take their own axis out of the trailing factor axes and multiply the pieces through the level inside them
  (``NESTING`` orders levels, outermost first);
* ``unsupported(factor)``: why it cannot represent the factor, or None (when it applies);
* ``cost(factor, inner)``: its `kernels.products.cost.Cost` per batch row, given the cost of what it multiplies per
  pair of components (``inner``);
* how it lowers in a `Kernel`: ``term(factor, fresh)`` and ``constant(factor, dtype)`` (a leaf's einsum term and its
  constant operand, `kernels.products.leaf`) or ``lower(factor, axis, inner)`` (a level around the program `inner`);
* optionally, ``NORMWISE = True`` where its error is bounded by the operands' norms rather than by each output
  (fft): auto then takes it only for a clear gain (`kernels.products.select.NORMWISE_GAIN`);
* optionally, ``WHOLE_BATCH = True`` for a level that runs the batch in one call, never in the cache-sized chunks
  of `level.Level.chunk_bytes` (compiled: its blocks are its own), so that the model prices one call;
* optionally, how it enters a plan's contraction (``operand``, ``operand_cost``, ``operand_unsupported``:
  `strategies.operand`); a strategy without them runs a plan's product as a level, through a `Kernel` step.

``strategy="auto"`` takes the cheapest applicable one by the cost model (`kernels.products.select`: `resolve` for a
kernel, `in_plan` for a plan's product), so a new strategy is one file here and serves both.

>>> sorted(STRATEGIES)
['codegen', 'compiled', 'dense', 'fft', 'gather', 'graded', 'identify', 'scatter']
>>> [name for name in STRATEGIES if STRATEGIES[name].ROLE == "leaf"]
['dense', 'identify']
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

_REQUIRED = ("NAME", "ROLE", "unsupported", "cost")


def _discover() -> dict[str, ModuleType]:
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if all(hasattr(module, attribute) for attribute in _REQUIRED):
            found[module.NAME] = module
    return found


#: Strategy name -> module, for every strategy module in this package.
STRATEGIES = _discover()

#: The strategies that are levels around the leaf, outermost first.
LEVELS = tuple(sorted((name for name, m in STRATEGIES.items() if m.ROLE == "level"),
                      key=lambda name: STRATEGIES[name].NESTING))

#: The strategies whose error is bounded by the operands' norms, not by each output's (``NORMWISE``).
NORMWISE = frozenset(name for name, module in STRATEGIES.items() if getattr(module, "NORMWISE", False))
