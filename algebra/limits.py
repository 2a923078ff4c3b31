"""The size limits shared by the algebra modules, and the check that refuses work beyond them.

>>> check_size(2**21, "zero", "coefficients", "use numeric arrays")
Traceback (most recent call last):
...
ValueError: zero: 2,097,152 coefficients, more than algebra.limits.MAX_ENTRIES = 1,048,576; use numeric arrays
"""
from __future__ import annotations

#: The most exact structure constants, basis labels, element coefficients or products of coefficients one call
#: stores or computes (about 200 bytes each, so 200 MB).  Structured algebras (`algebra.structured`) may be
#: larger; they refuse to materialise beyond it.
MAX_ENTRIES = 2**20
#: The most bytes of one dense float array built from an algebra: ``structure_constants()`` by default, and each
#: dense matrix of a numeric symmetry solve.
MAX_DENSE_BYTES = 2**30


def check_size(count: int, what: str, unit: str, instead: str) -> None:
    """Raise ValueError when `count` exceeds `MAX_ENTRIES`, naming `what`, the count and what to use `instead`."""
    if count > MAX_ENTRIES:
        raise ValueError(f"{what}: {count:,} {unit}, more than algebra.limits.MAX_ENTRIES = {MAX_ENTRIES:,}; "
                         f"{instead}")
