"""Choosing strategies: `choose` is ``strategy="auto"`` for one factor, `resolve` for a kernel of several.

auto asks every strategy that applies for its cost (`kernels.products.strategies`) and takes what the time model
(`kernels.products.cost`) says is fastest for the batch at hand (small batches weigh calls more than arithmetic),
the FFT, whose error is bounded by the operands' norms, only where it saves half the time or more (`cheapest`).  For a
tensor product the strategies nest (a level multiplies through the levels inside it), so `resolve` prices every
combination as it would be lowered (`nested_cost`), diagonal factors always sharing their index.  auto keeps within
``kernels.MEMORY_LIMIT``: it prices the chunks a call is cut into to hold its temporaries there (`memory_chunks`), and
takes a strategy that cannot hold even one batch row only where none can (the call then refuses, naming the sizes).

>>> from product_interactions.algebra import clifford, diagonal, tensor_algebra, translation
>>> from product_interactions.kernels.products.factor import Factor
>>> [choose(Factor.from_algebra(A)) for A in (diagonal(4), translation(256))]
['identify', 'fft']
>>> choose(Factor.from_algebra(tensor_algebra(4, 4))) in ("compiled", "graded")   # compiled needs a C compiler
True
>>> resolve("identify", [Factor.from_algebra(clifford(1))])  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: strategy: 'identify' cannot represent factor 0: lam[0, 1, 1] = 1 in clifford(1, 0, 0); identify needs ...
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

from . import leaf
from ..native import memory
from ..arrays.rates import NUMPY_RATES, Rates
from .cost import Cost
from .strategies import LEVELS, NORMWISE, STRATEGIES
from .strategies.level import Level

if TYPE_CHECKING:
    from .factor import Factor

Option = TypeVar("Option", str, tuple[str, ...])

#: The batch rows auto chooses for when the kernel is built (calls re-choose for their own batch).
NOMINAL_ROWS = 4096
#: How many times less time than the best strategy that gets each output to its own precision a normwise one (fft,
#: `strategies.NORMWISE`: error bounded by the operands' norms) must take, by the model, for auto to choose it.  On
#: inputs spanning many orders of magnitude it can lose an output's every digit (translation(128) on 4 rows gave
#: 0.0 for an entry of 1.0), which a few percent of speed does not pay for.
NORMWISE_GAIN = 2.0


def estimate(factor: Factor, name: str, rows: int = NOMINAL_ROWS, itemsize: int = 8, rest: int = 1,
             rates: Rates = NUMPY_RATES, limited: bool = True, width: int = 1) -> float:
    """The model's seconds for strategy `name` on `factor`, with the other factors an elementwise product of
    `rest` elements per row, on an array library with these `rates`, within the memory limit where `limited`
    (`model_seconds`, the batch cut along its first axis, `width` rows each)."""
    return model_seconds(STRATEGIES[name].cost(factor, Cost.elementwise(rest)), [name], rows, itemsize, rates,
                         limited, width)


def rows_within_limit(cost: Cost, rows: int, itemsize: int, width: int = 1, chunked: bool = False) -> int:
    """The most of `rows` batch rows (of `width` elements per entry of `cost`, each `itemsize` bytes) that one call
    holds within ``kernels.MEMORY_LIMIT``, as `Kernel` cuts its calls: all where they fit, else as many as fit with
    their result (a chunk's result is a temporary of the call, as the rows of a `chunked` call are); 0 where not
    even one row does.

    >>> cost = Cost(x=10, y=10, z=10, flops=10, moved=30, temporary=1000)      # under the default 2 GiB:
    >>> rows_within_limit(cost, 1000, 8), rows_within_limit(cost, 10**6, 8)   # 8 MB whole; of 8 GB, 2 GiB
    (1000, 265777)
    >>> rows_within_limit(Cost(x=10, y=10, z=10, flops=10, moved=30, temporary=1000, fixed=2**30), 1, 8)
    0
    """
    limit, fixed = memory.limit(), cost.fixed * itemsize
    if not chunked and fixed + cost.temporary * itemsize * width * rows <= limit:
        return rows
    per_row = (cost.temporary + cost.z) * itemsize * width
    if fixed + per_row * rows <= limit:
        return rows
    return int((limit - fixed) // per_row) if fixed < limit else 0


def memory_chunks(cost: Cost, rows: int, itemsize: int, width: int = 1) -> float:
    """The chunks a call of `rows` batch rows is cut into to hold its temporaries within ``kernels.MEMORY_LIMIT``
    (`rows_within_limit`), cut along the batch's first axis, whose entries hold `width` rows each: 1 where the
    whole batch fits, `math.inf` where not even one entry does.

    >>> cost = Cost(x=10, y=10, z=10, flops=10, moved=30, temporary=1000)
    >>> memory_chunks(cost, 10**6, 8), memory_chunks(cost, 10**6, 8, width=10**6)     # (10**6,) or (1, 10**6)
    (4, inf)
    """
    leading = max(1, rows // width)
    fit = rows_within_limit(cost, leading, itemsize, width)
    return 1 if fit >= leading else math.inf if fit < 1 else math.ceil(leading / fit)


def model_seconds(cost: Cost, names: Sequence[str], rows: int, itemsize: int, rates: Rates,
                  limited: bool = True, width: int = 1) -> float:
    """The model's seconds for the program of strategies `names` with this `cost`, cut in chunks for the cache
    (`chunk_bytes`) and, where `limited`, for the memory limit (`memory_chunks`, along the batch's first axis of
    `width` rows an entry: `math.inf` where not even one entry fits)."""
    chunks = memory_chunks(cost, rows, itemsize, width) if limited else 1
    return math.inf if chunks == math.inf else cost.seconds(rows, itemsize, chunk_bytes(names), rates, int(chunks))


def applicable(factor: Factor) -> list[str]:
    """The names of the strategies that can represent `factor`."""
    return [name for name, module in STRATEGIES.items() if module.unsupported(factor) is None]


def _normwise(option: str | Sequence[str]) -> bool:
    return not NORMWISE.isdisjoint([option] if isinstance(option, str) else option)


def cheapest(options: Iterable[Option], seconds: Callable[[Option], float],
             unlimited: Callable[[Option], float] | None = None) -> Option:
    """The option (a strategy name, or one per factor) of least `seconds`, where one with a normwise strategy
    (`strategies.NORMWISE`) must take at most 1 / `NORMWISE_GAIN` of the best other option's time; where every
    option takes infinite `seconds` (none fits the memory limit), the least by `unlimited` instead.

    >>> cheapest(["fft", "gather"], {"fft": 0.6, "gather": 1.0}.get)      # 1.7x faster: not enough
    'gather'
    >>> cheapest(["fft", "gather"], {"fft": 0.4, "gather": 1.0}.get)
    'fft'
    >>> cheapest(["dense", "gather"], {"dense": math.inf, "gather": math.inf}.get, {"dense": 1, "gather": 2}.get)
    'dense'
    """
    times = {option: seconds(option) for option in options}
    if unlimited is not None and min(times.values()) == math.inf:
        times = {option: unlimited(option) for option in times}
    best = min(times, key=times.__getitem__)
    exact = [option for option in times if not _normwise(option)]
    if _normwise(best) and exact:
        direct = min(exact, key=times.__getitem__)
        return direct if times[best] * NORMWISE_GAIN > times[direct] else best
    return best


def choose(factor: Factor, rows: int = NOMINAL_ROWS, itemsize: int = 8, rest: int = 1,
           rates: Rates = NUMPY_RATES, width: int = 1) -> str:
    """The strategy auto picks for `factor`: the cheapest by the cost model (`cheapest`) that fits the memory
    limit (a first batch axis of `width` rows an entry), or where none does, the cheapest."""
    return cheapest(applicable(factor), lambda name: estimate(factor, name, rows, itemsize, rest, rates, True, width),
                    lambda name: estimate(factor, name, rows, itemsize, rest, rates, limited=False))


def nested_cost(factors: Sequence[Factor], names: Sequence[str]) -> Cost:
    """The cost of the program `kernels.products.lowering.lower` would build: levels around a leaf of the other factors."""
    outer = sorted((p for p, name in enumerate(names) if name in LEVELS), key=lambda p: (LEVELS.index(names[p]), p))
    cost = leaf.cost([(factors[p], names[p]) for p in range(len(factors)) if p not in outer])
    for p in reversed(outer):
        cost = STRATEGIES[names[p]].cost(factors[p], cost)
    return cost


def chunk_bytes(names: Sequence[str]) -> int | None:
    """The bytes of the chunks a program of strategies `names` cuts the batch into, as `Kernel` does: those of
    `Level.chunk_bytes` where a level does not run the batch whole (``WHOLE_BATCH``); a leaf alone runs whole.

    >>> chunk_bytes(["gather", "dense"]) == Level.chunk_bytes, chunk_bytes(["compiled"]), chunk_bytes(["dense"])
    (True, None, None)
    """
    chunked = any(name in LEVELS and not getattr(STRATEGIES[name], "WHOLE_BATCH", False) for name in names)
    return Level.chunk_bytes if chunked else None


def priced(factors: Sequence[Factor], names: Sequence[str]) -> tuple[Cost, int | None]:
    """(cost, chunk bytes) of the program for `names`: what the time model prices (`chunk_bytes`)."""
    return nested_cost(factors, names), chunk_bytes(names)


def _seconds(factors: Sequence[Factor], names: Sequence[str], rows: int, itemsize: int, rates: Rates,
             limited: bool = True, width: int = 1) -> float:
    return model_seconds(nested_cost(factors, names), names, rows, itemsize, rates, limited, width)


def resolve(strategy: str | Sequence[str], factors: Sequence[Factor], rows: int = NOMINAL_ROWS, itemsize: int = 8,
            rates: Rates = NUMPY_RATES, width: int = 1) -> tuple[str, ...]:
    """One checked strategy name per factor from ``"auto"``, a name, or a tuple with one entry per factor; auto
    prices `rows` rows on an array library with these `rates`, cut for the memory limit along a first batch axis of
    `width` rows an entry."""
    names = list(strategy) if isinstance(strategy, (tuple, list)) else [strategy] * len(factors)
    if len(names) != len(factors):
        raise ValueError(f"strategy: expected one entry per factor ({len(factors)}), got {len(names)}: {strategy!r}")
    options: list[list[str]] = []
    for position, (name, factor) in enumerate(zip(names, factors)):
        if not isinstance(name, str) or name != "auto" and name not in STRATEGIES:
            raise ValueError(f"strategy: expected 'auto' or one of {', '.join(map(repr, STRATEGIES))} (or a tuple "
                             f"with one per factor), got {name!r:.80}")
        if name == "auto":
            options.append(["identify"] if factor.is_unit_diagonal() else applicable(factor))
            continue
        reason = STRATEGIES[name].unsupported(factor)
        if reason is not None:
            raise ValueError(f"strategy: {name!r} cannot represent factor {position}: {reason}")
        options.append([name])
    if len(factors) == 1:
        return (choose(factors[0], rows, itemsize, rates=rates, width=width) if names[0] == "auto" else
                options[0][0],)
    return cheapest(itertools.product(*options),
                    lambda combination: _seconds(factors, combination, rows, itemsize, rates, True, width),
                    lambda combination: _seconds(factors, combination, rows, itemsize, rates, limited=False))


#: Batch rows `in_plan` prices for (a plan's batch is unknown when it is built).
PLAN_ROWS = 64


def in_plan(factor: Factor, rows: Sequence[int] | None = None, columns: Sequence[int] | None = None,
            strategy: str = "auto", levels: bool = True) -> tuple[str, Factor]:
    """How a plan multiplies one factor whose two sides hold the components `rows` and `columns` (None: all):
    ``(name, factor)``, an operand form of the contraction (`strategies.operand`) with the factor restricted to
    those components, or a level strategy with the whole factor, which runs the product through a `Kernel` (only
    where `levels` allows and both sides hold every component).  A diagonal factor shares its index; `strategy`
    forces a strategy where it applies; "auto" takes the cheapest for `PLAN_ROWS` rows.

    >>> from product_interactions.algebra import clifford, translation
    >>> from product_interactions.kernels.products.factor import Factor
    >>> in_plan(Factor.from_algebra(translation(256)))[0]
    'fft'
    >>> name, restricted = in_plan(Factor.from_algebra(clifford(2)), [0, 3], range(4))
    >>> name, restricted.shape
    ('gather', (2, 4, 4))
    """
    if factor.diagonal() is not None:
        return "identify", factor
    rows = range(factor.shape[0]) if rows is None else rows
    columns = range(factor.shape[1]) if columns is None else columns
    full = len(rows) == factor.shape[0] and len(columns) == factor.shape[1]
    restricted = factor if full else factor.restricted(rows, columns)
    prices = {name: module.operand_cost(restricted).seconds(PLAN_ROWS, 8)
              for name, module in STRATEGIES.items()
              if hasattr(module, "operand") and name != "identify" and module.operand_unsupported(restricted) is None}
    if strategy in prices:
        return strategy, restricted
    best = min(prices, key=prices.__getitem__)
    if full and levels and strategy == "auto":
        choice = choose(factor, PLAN_ROWS)
        if not hasattr(STRATEGIES[choice], "operand") and estimate(factor, choice, PLAN_ROWS) < prices[best]:
            return choice, factor
    elif full and levels and strategy != "auto" and STRATEGIES[strategy].ROLE == "level" and \
            STRATEGIES[strategy].unsupported(factor) is None:
        return strategy, factor
    return best, restricted


def fallback(name: str, factor: Factor) -> str:
    """`name` when it can represent `factor`, else auto's choice (used for the transposed kernels of VJPs)."""
    return name if STRATEGIES[name].unsupported(factor) is None else choose(factor)
