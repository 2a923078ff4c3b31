"""Basis labels built from index tuples, shared by the builders.

>>> word_label("e", (1, 2), largest=3), word_label("e", (1, 12), largest=12), word_label("e", (), largest=3)
('e12', 'e1,12', '1')
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeAlias

#: A basis label: a string, or a tuple of strings (a tensor product's: one per factor).
Label: TypeAlias = "str | tuple[str, ...]"
#: A basis element as the methods that look one up take it: its label, its flat index, or (tensor products) its
#: multi-index.
Key: TypeAlias = "Label | int | tuple[int, ...]"
#: Basis labels as callers may give them: an iterable of strings, tuples or lists of strings.
BasisLike: TypeAlias = "Iterable[str | tuple[str, ...] | list[str]]"


def word_label(prefix: str, indices: Sequence[int], largest: int, empty: str = "1") -> str:
    """``prefix`` then the indices: run together when every possible index (<= largest) has one digit."""
    if not indices:
        return empty
    separator = "" if largest < 10 else ","
    return prefix + separator.join(str(i) for i in indices)
