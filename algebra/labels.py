"""Basis labels built from index tuples, shared by the builders.

>>> word_label("e", (1, 2), largest=3), word_label("e", (1, 12), largest=12), word_label("e", (), largest=3)
('e12', 'e1,12', '1')
"""
from __future__ import annotations


def word_label(prefix: str, indices, largest: int, empty: str = "1") -> str:
    """``prefix`` then the indices: run together when every possible index (<= largest) has one digit."""
    if not indices:
        return empty
    separator = "" if largest < 10 else ","
    return prefix + separator.join(str(i) for i in indices)
