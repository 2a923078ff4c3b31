"""An exact on-disk cache of coefficient tables, one JSON file per (name, lmax).

The directory is ``$PRODUCT_INTERACTIONS_CACHE/so3`` when that variable is set (the value ``off`` disables the
cache), else ``$XDG_CACHE_HOME/product-interactions/so3``, else ``~/.cache/product-interactions/so3``.  A table
maps a path ``(l1, l2, l)`` to its entries ``((m1, m2, m), Surd)``; the file stores each distinct coefficient once
as exact ``[s, "p/q"]`` pairs (`Surd.to_json`), the entries as ``[m1, m2, m, index]``, and is read back with
`json`, `int` and `Fraction` only.  A file that is
missing, unreadable or malformed is ignored (the caller recomputes and rewrites it); files are written atomically;
an unwritable directory just means no disk cache.

>>> import tempfile, os
>>> from fractions import Fraction
>>> from product_interactions.algebra.so3.surds import Surd
>>> table = {(1, 1, 0): (((0, 0, 0), Surd(((3, Fraction(1, 3)),))),)}
>>> with tempfile.TemporaryDirectory() as folder:
...     os.environ["PRODUCT_INTERACTIONS_CACHE"] = folder
...     store_table("demo", 1, table)
...     loaded = load_table("demo", 1)
...     del os.environ["PRODUCT_INTERACTIONS_CACHE"]
>>> loaded == table
True
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .surds import Surd

FORMAT = "product-interactions/so3-table"
VERSION = 1


def cache_dir() -> Path | None:
    """The cache directory (not created here), or None when the cache is switched off."""
    configured = os.environ.get("PRODUCT_INTERACTIONS_CACHE")
    if configured is not None:
        return None if configured.strip().lower() in ("", "off") else Path(configured) / "so3"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "product-interactions" / "so3"


def _file(name: str, lmax: int) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / f"{name}-lmax{lmax}-v{VERSION}.json"


def load_table(name: str, lmax: int) -> dict | None:
    """The table stored under (name, lmax), or None when there is none or it is unreadable."""
    path = _file(name, lmax)
    if path is None or not path.is_file():
        return None
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        if payload.get("format") != FORMAT or payload.get("version") != VERSION or payload.get("lmax") != lmax:
            return None
        values = [Surd.from_json(value) for value in payload["values"]]
        table = {}
        for key, entries in payload["paths"]:
            table[_ints(key, 3)] = tuple((_ints(entry[:3], 3), values[_ints(entry[3:], 1)[0]]) for entry in entries)
        return table
    except (OSError, ValueError, TypeError, KeyError, AttributeError, IndexError):
        return None


def store_table(name: str, lmax: int, table: dict) -> None:
    """Write the table atomically; does nothing when the cache is off or the directory is not writable."""
    path = _file(name, lmax)
    if path is None:
        return
    index: dict = {}
    paths = [[list(key), [[*m, index.setdefault(value, len(index))] for m, value in entries]]
             for key, entries in sorted(table.items())]
    payload = {"format": FORMAT, "version": VERSION, "lmax": lmax, "values": [v.to_json() for v in index],
               "paths": paths}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8")
    except OSError:
        return
    try:
        with handle:
            json.dump(payload, handle, separators=(",", ":"))
        os.replace(handle.name, path)
    except OSError:
        Path(handle.name).unlink(missing_ok=True)


def _ints(value, length: int) -> tuple:
    if not (isinstance(value, list) and len(value) == length and all(type(v) is int for v in value)):
        raise ValueError(f"expected a list of {length} ints, got {value!r}")
    return tuple(value)
