"""`BoundedCache`: the most recently used entries of a cache, at most a given number, safe to share between
threads.

The library keeps what it derives once per call signature (checked calls, contraction paths, converted constants,
masks' factorings) in such caches.  A model served from several threads, or kernels called from a thread pool,
look them up at once; each lookup and insertion holds the cache's lock for a few dict operations (a fraction of a
microsecond), and what a miss makes is made outside it, so a race costs at most the same work done twice.
Before, the caches were plain ordered dicts, and a thread that evicted an entry another had just found failed it
with a KeyError ("dictionary changed size during iteration" too).  A cache pickles and copies empty: what it holds
is derived again.

>>> cache = BoundedCache(2)
>>> cache.put("a", 1), cache.put("b", 2), cache.get("a"), cache.put("c", 3)
(1, 2, 1, 3)
>>> cache.get("b") is None, cache.values()
(True, [1, 3])
>>> cache.kept("d", lambda: 4), cache.values()
(4, [3, 4])
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)
Value = TypeVar("Value")


class BoundedCache(Generic[Key, Value]):
    """At most `size` entries, the least recently used forgotten first; see the module docstring."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[Key, Value] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Key) -> Value | None:
        """The entry of `key`, now the most recently used, or None (entries are never None)."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: Key, value: Value) -> Value:
        """Keep `value` under `key` as the most recently used (forgetting the least recently used beyond `size`);
        returns `value`."""
        evicted = []                                    # dropped after the lock: their destructors may run code
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                evicted.append(self._entries.popitem(last=False))
        return value

    def kept(self, key: Key, make: Callable[[], Value]) -> Value:
        """The entry of `key`, or ``make()`` kept under it (made outside the lock)."""
        found = self.get(key)
        return found if found is not None else self.put(key, make())

    def values(self) -> list[Value]:
        """The entries, least recently used first (a copy: other threads may change the cache meanwhile)."""
        with self._lock:
            return list(self._entries.values())

    def items(self) -> list[tuple[Key, Value]]:
        """(key, entry) pairs, least recently used first (a copy)."""
        with self._lock:
            return list(self._entries.items())

    def __len__(self) -> int:
        return len(self._entries)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled and copied empty (a lock cannot be; the entries are derived again)."""
        return BoundedCache, (self.size,)
