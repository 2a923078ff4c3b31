"""An exact on-disk cache of coefficient tables, one JSON file per (name, lmax).

**Location.**  The directory is ``$PRODUCT_INTERACTIONS_CACHE/so3`` when the environment variable
``PRODUCT_INTERACTIONS_CACHE`` is set (the value ``off``, or an empty value, disables the disk cache), else
``$XDG_CACHE_HOME/product-interactions/so3``, else ``~/.cache/product-interactions/so3``.

**Format.**  A table maps a path ``(l1, l2, l)`` to its entries ``((m1, m2, m), Surd)``; the file stores each
distinct coefficient once as exact ``[s, "p/q"]`` pairs (`Surd.to_json`), the entries as ``[m1, m2, m, index]``,
and the sha256 of the canonical JSON of both beside them.  It is read back with `json`, `int` and a strict
rational parser only, never evaluated.

**Trust.**  Files are read and written only through `product_interactions.cache` (`read`, `write`), under its
rule: the cache root, the ``so3`` folder and the file are this user's alone and no link, each step opened without
following links, the file read through the descriptor that was checked.  A file anyone else could have written
or swapped, a larger file than the table can take, a folder that cannot be searched or a name too long for the
file system is a miss: `load_table` returns None, as for a missing file, and the caller computes afresh.
`load_table` raises ValueError, naming the field, for a trusted file that is not UTF-8 JSON, nested too deeply,
malformed or whose checksum does not match.  The checksum only catches accidents: anyone who can write the file
can recompute it, so callers check the table's content against the coefficients themselves
(`clebsch_gordan.verify_table`: identities, and a few entries of every path recomputed exactly, signs
included), and recompute and rewrite it on any failure.  Writes replace the file atomically, so concurrent
writers never leave a partial file; an unwritable or untrusted folder just means no disk cache.

>>> import tempfile, os
>>> from fractions import Fraction
>>> from product_interactions.algebra.so3.surds import Surd
>>> table = {(1, 1, 0): (((0, 0, 0), Surd(((3, Fraction(1, 3)),))),)}
>>> with tempfile.TemporaryDirectory() as folder:
...     os.environ["PRODUCT_INTERACTIONS_CACHE"] = folder
...     store_table("demo", 1, table)
...     loaded = load_table("demo", 1, max_entries=10, largest_prime=3)
...     del os.environ["PRODUCT_INTERACTIONS_CACHE"]
>>> loaded == table
True
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ...cache import folder, read, write
from .surds import PathTable, Surd

FORMAT = "product-interactions/so3-table"
VERSION = 2


def cache_dir() -> Path | None:
    """The cache directory (not created here), or None when the cache is switched off (`cache.folder`)."""
    return folder("so3")


def _file(name: str, lmax: int) -> str:
    return f"{name}-lmax{lmax}-v{VERSION}.json"


#: Bytes a file may take per entry of the table it holds (plus a fixed allowance), checked before reading it.
BYTES_PER_ENTRY = 128


def load_table(name: str, lmax: int, max_entries: int, largest_prime: int) -> PathTable | None:
    """The table stored under (name, lmax); None when there is none, the cache is off, or the file is not trusted
    or holds more bytes than a table of `max_entries` entries takes (see the module docstring).

    Raises ValueError naming the field when the file holds more than `max_entries` entries, is not valid, or
    fails its checksum; the square roots may hold primes up to `largest_prime` (`Surd.from_json`).
    """
    where = _file(name, lmax)
    data = read("so3", where, BYTES_PER_ENTRY * max_entries + 2**16)
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{where}: not UTF-8 ({error.reason} at byte {error.start})") from None
    payload = _decode(text, where)
    for field, expected in (("format", FORMAT), ("version", VERSION), ("lmax", lmax)):
        if payload.get(field) != expected or type(payload.get(field)) is not type(expected):
            raise ValueError(f"{where}: {field} expected {expected!r}, got {payload.get(field)!r}"[:300])
    values, paths = payload.get("values"), payload.get("paths")
    if not isinstance(values, list) or not isinstance(paths, list):
        raise ValueError(f"{where}: values and paths expected lists")
    if payload.get("sha256") != checksum(values, paths):
        raise ValueError(f"{where}: sha256 does not match the values and paths (the file was altered)")
    surds = []
    for n, value in enumerate(values):
        try:
            surds.append(Surd.from_json(value, largest_prime))
        except ValueError as error:
            raise ValueError(f"{where}: values[{n}]: {error}") from None
    values = surds
    table: dict[tuple[int, ...], tuple[tuple[tuple[int, ...], Surd], ...]] = {}
    count = 0
    for n, item in enumerate(paths):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], list)):
            raise ValueError(f"{where}: paths[{n}] expected [[l1, l2, l], entries], got {item!r}"[:300])
        key = _ints(item[0], 3, f"{where}: paths[{n}][0]")
        if key in table:
            raise ValueError(f"{where}: paths[{n}]: the path {key} appears twice")
        count += len(item[1])
        if count > max_entries:
            raise ValueError(f"{where}: paths: more than {max_entries:,} entries")
        entries: list[tuple[tuple[int, ...], Surd]] = []
        for e, entry in enumerate(item[1]):
            *m, index = _ints(entry, 4, f"{where}: paths[{n}][1][{e}]")
            if not 0 <= index < len(values):
                raise ValueError(f"{where}: paths[{n}][1][{e}]: value index {index} out of range 0..{len(values) - 1}")
            entries.append((tuple(m), values[index]))
        table[key] = tuple(entries)
    return table  # type: ignore[return-value]  # _ints gave every path and (m1, m2, m) its length 3


def checksum(values: list[Any], paths: list[Any]) -> str:
    """The sha256 (hex) of the canonical JSON of a file's ``values`` and ``paths``."""
    text = json.dumps([values, paths], separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _decode(text: str, where: str) -> dict[str, Any]:
    try:
        payload = json.loads(text)
    except RecursionError:                      # raised cleanly by json's decoder on deep nesting
        raise ValueError(f"{where}: nested too deeply to be a table") from None
    except ValueError as error:                 # JSONDecodeError, and the integer digit limit
        raise ValueError(f"{where}: not valid JSON ({error})"[:300]) from None
    if not isinstance(payload, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(payload).__name__}")
    return payload


def store_table(name: str, lmax: int, table: PathTable) -> None:
    """Write the table atomically (`product_interactions.cache.write`); does nothing when the cache is off, or its
    folder is untrusted or not writable."""
    index: dict[Surd, int] = {}
    paths = [[list(key), [[*m, index.setdefault(value, len(index))] for m, value in entries]]
             for key, entries in sorted(table.items())]
    values = [v.to_json() for v in index]
    payload = {"format": FORMAT, "version": VERSION, "lmax": lmax, "sha256": checksum(values, paths),
               "values": values, "paths": paths}
    write("so3", _file(name, lmax), json.dumps(payload, separators=(",", ":")).encode("utf-8"))


def _ints(value: object, length: int, where: str) -> tuple[int, ...]:
    if not (isinstance(value, list) and len(value) == length and all(type(v) is int for v in value)):
        raise ValueError(f"{where}: expected a list of {length} ints, got {value!r}"[:300])
    return tuple(value)
