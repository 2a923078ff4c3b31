"""The shape of a traced call's result in torch.compile's symbols, for the fake body of `torch_call`'s operator.

torch.compile traces a size that changed between calls as a symbol (s0), so that one graph serves every value.  The
library plans for plain sizes, so the fake body runs the owner's call on fake tensors of plain sizes and must say
which of the result's sizes are which symbols.  `traced_result` finds out by running the call at other values: at
the symbols' current values, then for each symbol at a new value (near its own, and no size's), then with every
symbol moved at once.  A result's size that follows one symbol is that symbol.

- Symbols of one value that the owner refuses to move alone but takes moved together (the lengths of a scan's
  inputs, a point cloud's points and its features' points: all of them, or all but one) are checked equal
  (``torch._check``: a guard, so unequal sizes trace again, where the owner refuses them).
- A symbol the owner takes at no other value (a feature dimension) is specialised: ``int`` guards it, so a new
  value traces again.
- Where a result's size moves otherwise (L - 1, 2 L), or an operand's size is an expression of symbols, every size
  is specialised, as before symbols were followed: correct, and traced again for each new size.

Values tried are not every value: a size that follows its symbol at the values tried may not follow it at others
(L up to 8, and 8 beyond).  So the rule found (`Rule`) goes with the trace, and the operator's eager body checks a
real result against it, refusing one that breaks it by name (Inductor also checks a result's shape against the
traced one, ``assert_size_stride``).

>>> import torch
>>> class Doubling:                                  # an owner: its call on a flat list of tensors
...     def flat_call(self, operands):
...         return torch.cat([operands[0], operands[0]], dim=-1)
>>> traced_result(Doubling(), [torch.zeros(2, 3)]).shape      # plain sizes: nothing to follow
(2, 6)
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple


class Rule(NamedTuple):
    """How a traced graph expects the result's shape to follow the operands': the operands' sizes it was traced
    for (None where a symbol), and per result size its number or the (operand, axis) whose size it follows."""

    operands: tuple[tuple[int | None, ...], ...]
    result: tuple[int | tuple[int, int], ...]

    def expected(self, shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
        """The result's shape the graph expects for operands of these shapes, or None where it was not traced for
        them."""
        if len(shapes) != len(self.operands) or any(
                len(shape) != len(sizes) or any(s is not None and s != d for s, d in zip(sizes, shape))
                for shape, sizes in zip(shapes, self.operands)):
            return None
        return tuple(size if isinstance(size, int) else shapes[size[0]][size[1]] for size in self.result)


class Traced(NamedTuple):
    """`traced_result`'s answer."""

    result: Any                                         # the owner's result, a fake tensor of plain sizes
    shape: tuple[Any, ...]                              # its shape, with the symbols its sizes follow
    rule: Rule | None                                   # None where no size follows a symbol


def traced_result(owner: Any, operands: list[Any]) -> Traced:
    """The owner's result on `operands` (fake tensors, sizes plain or symbolic), its shape with each size that
    follows one of the operands' symbols as that symbol (module docstring), and the rule a real call's result must
    keep (`torch_call` checks it: a size that follows its symbol at the values tried may not follow it at others,
    L for L <= 8 and 8 beyond, say)."""
    found = None                                        # the result at the symbols' values, where a probe made one
    if all(isinstance(d, int) or _symbol(d) for t in operands for d in t.shape):
        probe = _Probe(owner, operands)
        if probe.result is not None and _followed(probe):
            return probe.traced()
        found = probe.result
    plain = [t.new_empty(tuple(int(d) for d in t.shape)) for t in operands]        # int() guards every size
    result = found if found is not None else owner.flat_call(plain)
    return Traced(result, tuple(getattr(result, "shape", ())), None)


def _sized(tensors: list[Any], sizes: dict[Any, int]) -> list[Any]:
    """Fake tensors like `tensors` with plain sizes: each symbol given its value in `sizes`."""
    return [t.new_empty(tuple(sizes[d.node.expr] if _symbol(d) else int(d) for d in t.shape)) for t in tensors]


def _symbol(size: Any) -> bool:
    """True for a size torch.compile traces as one symbol, s0 (not a number, nor an expression of symbols)."""
    return not isinstance(size, int) and bool(size.node.expr.is_Symbol)


def _followed(probe: _Probe) -> bool:
    """Whether the probe found which symbols the result's sizes follow (`_Probe.traced`); False where every size
    must be specialised.  (Its result at the symbols' values serves either way: the sizes specialised are those.)"""
    import torch
    try:
        refused = [expr for expr in probe.symbols if not probe.follow([expr], probe.shape_at([expr]))]
        for value in dict.fromkeys(probe.values[expr] for expr in refused):
            unit = _moving_together(probe, [expr for expr in refused if probe.values[expr] == value])
            for expr in unit[1:]:
                torch._check(probe.symbols[expr] == probe.symbols[unit[0]])
            for expr in refused:
                if probe.values[expr] == value and expr not in unit:
                    int(probe.symbols[expr])            # the owner takes only this value: specialised
                    probe.specialised.add(expr)
    except _Unfollowed:
        return False
    return probe.all_moved()


def _moving_together(probe: _Probe, refused: list[Any]) -> list[Any]:
    """Of symbols of one value that the owner refuses to move alone, the ones it takes moved together, followed
    (`_Probe.follow`): all of them, or all but one (a feature dimension of that value); else none."""
    units = [refused] if len(refused) > 1 else []
    if len(refused) > 2:
        units += [[expr for expr in refused if expr != left] for left in refused]
    for unit in units:
        if probe.follow(unit, probe.shape_at(unit)):
            return unit
    return []


class _Unfollowed(Exception):
    """A result's size moved with a symbol, but not as that symbol."""


class _Probe:
    """The owner's result on fake operands at plain values of their symbols (`_followed`)."""

    def __init__(self, owner: Any, operands: list[Any]) -> None:
        self.owner, self.operands = owner, operands
        self.symbols = {d.node.expr: d for t in operands for d in t.shape if _symbol(d)}
        #: Each symbol's first (operand, axis).
        self.where: dict[Any, tuple[int, int]] = {}
        for n, t in enumerate(operands):
            for axis, d in enumerate(t.shape):
                if _symbol(d):
                    self.where.setdefault(d.node.expr, (n, axis))
        self.values = {expr: size.node.hint for expr, size in self.symbols.items()}
        result = None if None in self.values.values() else owner.flat_call(_sized(operands, self.values))
        self.result: Any = result if hasattr(result, "shape") else None
        #: Each symbol's group: the first symbol of those moved together (`follow`).
        self.leader = {expr: expr for expr in self.symbols}
        #: The symbols guarded to their values.
        self.specialised: set[Any] = set()
        if self.result is not None:
            #: Per size of the result, the leader of the symbols it follows, or None.
            self.follows: list[Any] = [None] * len(self.result.shape)
            #: Every size of the operands and the result: a new value is none of them.
            self.taken = {*self.values.values(), *self.result.shape,
                          *(d for t in operands for d in t.shape if isinstance(d, int))}

    def new_value(self, expr: Any, also: Iterable[int] = ()) -> int:
        """The smallest value above the symbol's that no size has (nor `also`): a size like the call's own, so a
        run at it costs what the call does."""
        value = self.values[expr] + 1
        while value in self.taken or value in also:
            value += 1
        return value

    def shape_at(self, unit: list[Any], values: dict[Any, int] | None = None) -> list[int] | None:
        """The result's shape with the symbols of `unit` moved to a new value (or each to its value in `values`),
        or None where the owner refuses them."""
        values = {**self.values, **(values or {expr: self.new_value(unit[0]) for expr in unit})}
        try:
            return list(self.owner.flat_call(_sized(self.operands, values)).shape)
        except Exception:                               # any refusal: specialised, never wrong
            return None

    def follow(self, unit: list[Any], moved: list[int] | None) -> bool:
        """Whether the owner took the symbols of `unit` (of one value) moved together (`moved`: the result's shape
        then, None where it refused); the result's sizes that moved with them follow them (`_Unfollowed` where one
        moved otherwise)."""
        if moved is None:
            return False
        before = list(self.result.shape)
        if len(moved) != len(before):
            raise _Unfollowed
        for axis, (size, after) in enumerate(zip(before, moved)):
            if size != after:
                if (size, after) != (self.values[unit[0]], self.new_value(unit[0])) or self.follows[axis] is not None:
                    raise _Unfollowed
                self.follows[axis] = unit[0]
        self.leader.update((expr, unit[0]) for expr in unit)
        return True

    def traced(self) -> Traced:
        """The result, its shape with the symbols its sizes follow, and the rule of that shape."""
        shape = tuple(size if leader is None else self.symbols[leader]
                      for size, leader in zip(self.result.shape, self.follows))
        if all(leader is None for leader in self.follows):
            return Traced(self.result, shape, None)
        operands = tuple(tuple(self.values[d.node.expr] if _symbol(d) and d.node.expr in self.specialised else
                               None if _symbol(d) else int(d) for d in t.shape) for t in self.operands)
        rule = Rule(operands, tuple(size if leader is None else self.where[leader]
                                    for size, leader in zip(self.result.shape, self.follows)))
        return Traced(self.result, shape, rule)

    def all_moved(self) -> bool:
        """Whether the result's shape follows its symbols with each group at a new value of its own at once."""
        new: dict[Any, int] = {}
        for leader in dict.fromkeys(self.follows):
            if leader is not None:
                new[leader] = self.new_value(leader, new.values())
        if not new:
            return True
        moved = {expr: new[leader] for expr, leader in self.leader.items() if leader in new}
        expected = [size if leader is None else new[leader] for size, leader in zip(self.result.shape, self.follows)]
        return self.shape_at([], moved) == expected
