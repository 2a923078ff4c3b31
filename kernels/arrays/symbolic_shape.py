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

Inductor checks an operator's result against the traced shape when it runs (``assert_size_stride``).

>>> import torch
>>> class Doubling:                                  # an owner: its call on a flat list of tensors
...     def flat_call(self, operands):
...         return torch.cat([operands[0], operands[0]], dim=-1)
>>> result, shape = traced_result(Doubling(), [torch.zeros(2, 3)])
>>> shape                                          # plain sizes: nothing to follow
(2, 6)
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def traced_result(owner: Any, operands: list[Any]) -> tuple[Any, tuple[Any, ...]]:
    """The owner's result on `operands` (fake tensors, sizes plain or symbolic) as a fake tensor of plain sizes,
    and its shape with each size that follows one of the operands' symbols as that symbol (module docstring)."""
    found = _symbolic(owner, operands)
    if found is None:                                   # int() guards each size: a new value traces again
        result = owner.flat_call([t.new_empty(tuple(int(d) for d in t.shape)) for t in operands])
        found = result, tuple(getattr(result, "shape", ()))
    return found


def _sized(tensors: list[Any], sizes: dict[Any, int]) -> list[Any]:
    """Fake tensors like `tensors` with plain sizes: each symbol given its value in `sizes`."""
    return [t.new_empty(tuple(sizes[d.node.expr] if _symbol(d) else int(d) for d in t.shape)) for t in tensors]


def _symbol(size: Any) -> bool:
    """True for a size torch.compile traces as one symbol, s0 (not a number, nor an expression of symbols)."""
    return not isinstance(size, int) and bool(size.node.expr.is_Symbol)


def _symbolic(owner: Any, operands: list[Any]) -> tuple[Any, tuple[Any, ...]] | None:
    """`traced_result`'s answer where the result's sizes follow symbols (or nothing needs following); None where
    every size must be specialised."""
    import torch
    if any(not isinstance(d, int) and not _symbol(d) for t in operands for d in t.shape):
        return None
    probe = _Probe(owner, operands)
    if probe.result is None:
        return None
    try:
        refused = [expr for expr in probe.symbols if not probe.follow([expr], probe.shape_at([expr]))]
        for value in dict.fromkeys(probe.values[expr] for expr in refused):
            unit = _moving_together(probe, [expr for expr in refused if probe.values[expr] == value])
            for expr in unit[1:]:
                torch._check(probe.symbols[expr] == probe.symbols[unit[0]])
            for expr in refused:
                if probe.values[expr] == value and expr not in unit:
                    int(probe.symbols[expr])            # the owner takes only this value: specialised
    except _Unfollowed:
        return None
    return probe.shape() if probe.all_moved() else None


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
    """The owner's result on fake operands at plain values of their symbols (`_symbolic`)."""

    def __init__(self, owner: Any, operands: list[Any]) -> None:
        self.owner, self.operands = owner, operands
        self.symbols = {d.node.expr: d for t in operands for d in t.shape if _symbol(d)}
        self.values = {expr: size.node.hint for expr, size in self.symbols.items()}
        result = None if None in self.values.values() else owner.flat_call(_sized(operands, self.values))
        self.result: Any = result if hasattr(result, "shape") else None
        #: Each symbol's group: the first symbol of those moved together (`follow`).
        self.leader = {expr: expr for expr in self.symbols}
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

    def shape_at(self, unit: list[Any], moved: dict[Any, int] | None = None) -> list[int] | None:
        """The result's shape with the symbols of `unit` moved to a new value (or each to its value in `moved`),
        or None where the owner refuses them."""
        values = {**self.values, **(moved or {expr: self.new_value(unit[0]) for expr in unit})}
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

    def shape(self) -> tuple[Any, tuple[Any, ...]]:
        """The result, and its shape with the symbols its sizes follow."""
        return self.result, tuple(size if leader is None else self.symbols[leader]
                                  for size, leader in zip(self.result.shape, self.follows))

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
