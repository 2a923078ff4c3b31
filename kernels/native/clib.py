"""The compiled loops' Python side: the sparse bilinear product of the ``compiled`` strategy (`Terms`,
`sparse_product`, `sparse_product_at`) and the Seq2Tens scan with its gradient (`tensor_scan`, `tensor_scan_vjp`),
calling the C library `kernels.native.build` builds and loads.  ctypes releases the GIL during a call.  Large calls
run on `threads` threads: a pool the library starts, or for calls from torch an OpenMP team (see `sparse_product`).
Where no compiler works, `kernels.native.build.unavailable` says why, and the strategies that need the loops stand
aside.

>>> import numpy as np
>>> from product_interactions.kernels.native.build import unavailable
>>> if unavailable() is None:                 # z = 2 x_0 y_1 on three rows
...     terms = Terms.from_table(np.array([[0, 1, 0]]), np.array([2.0]), 1)
...     print(sparse_product(terms, np.arange(6.0).reshape(3, 2), np.ones((3, 2)), (2, 2, 1)).ravel())
... else:
...     print([0., 4., 8.])
[0. 4. 8.]
"""
from __future__ import annotations

import functools
import itertools
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import memory
from .build import function
from .csource import ALIGNMENT, BLOCK, LANES, WIDE_BLOCK

#: Shapes and dtypes one `Terms` keeps its loop for (`Terms.loop`): a factor is called with one shape.
LOOPS_KEPT = 8


class Terms:
    """A factor's nonzero terms grouped by output: ``starts[k]:starts[k + 1]`` are those of z_k, with x index `i`,
    y index `j` and coefficient `values`, kept in each dtype of `BLOCK`.  Within an output, each run of terms with
    one x index is a group the loop multiplies by that x once (`groups`): sort the terms by x index within each
    output (`from_table` does) for the fewest groups."""

    def __init__(self, starts: np.ndarray, i: np.ndarray, j: np.ndarray, values: np.ndarray) -> None:
        for name, a in (("starts", starts), ("i", i), ("j", j), ("values", values)):
            if np.ndim(a) != 1:
                raise ValueError(f"Terms: expected {name} of one axis, got shape {np.shape(a)}")
        self.starts, self.i, self.j = (np.ascontiguousarray(a, dtype=np.int64) for a in (starts, i, j))
        self.values = {dtype: np.ascontiguousarray(values, dtype=dtype) for dtype in BLOCK}
        #: The x and y dimensions the indices need (the loop reads no further).
        self.reach = (int(self.i.max(initial=-1)) + 1, int(self.j.max(initial=-1)) + 1)
        if min(self.i.min(initial=0), self.j.min(initial=0), self.starts.min(initial=0)) < 0 or \
                not len(self.i) == len(self.j) == len(values) == (self.starts[-1] if len(self.starts) else -1) or \
                np.any(np.diff(self.starts) < 0):
            raise ValueError("Terms: expected non-negative indices, one value per term and non-decreasing starts "
                             f"ending at the term count, got {len(self.i)} terms and starts {self.starts[:8]}...")
        self.groups = self._groups()
        self._addresses: dict[tuple[np.dtype[Any], int], tuple[tuple[int, int, int, int, int], Any]] = {}
        self._loops: dict[tuple[np.dtype[Any], tuple[int, int, int]], tuple[Any, int, tuple[int, ...]]] = {}

    def check_within(self, shape: tuple[int, int, int]) -> None:
        """Refuse a (d1, d2, d3) `shape` that these terms would read or write beyond."""
        if self.reach[0] > shape[0] or self.reach[1] > shape[1] or len(self.starts) != shape[2] + 1:
            raise ValueError(f"terms: expected indices within shape {shape}, got terms reaching {self.reach} with "
                             f"{len(self.starts) - 1} outputs")

    def _groups(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the groups of each output, as starts like `starts`; each group's x index; each group's terms, as
        starts): a group begins at each output's first term and wherever the x index changes."""
        count = len(self.i)
        first = np.zeros(count, bool)
        first[self.starts[self.starts < count]] = True
        first[1:] |= self.i[1:] != self.i[:-1]
        if count:
            first[0] = True
        begins = np.flatnonzero(first)
        return (np.searchsorted(begins, self.starts).astype(np.int64), np.ascontiguousarray(self.i[begins]),
                np.append(begins, count).astype(np.int64))

    def addresses(self, dtype: np.dtype[Any], rows: int) -> tuple[int, int, int, int, int]:
        """What the loop for blocks of `rows` rows reads, by address: the groups (`groups`) with their x indices
        times `rows`, j times `rows`, and the values in `dtype` (kept, with those scaled indices, after the first
        call; a copied or unpickled Terms has its own arrays, and finds their addresses afresh)."""
        key = (dtype, rows)
        found = self._addresses.get(key)
        if found is None:                    # threads racing here keep the first entry: no array is freed in use
            starts, first, terms = self.groups
            scaled = first * rows, self.j * rows
            found = self._addresses.setdefault(key, ((starts.ctypes.data, scaled[0].ctypes.data, terms.ctypes.data,
                                                      scaled[1].ctypes.data, self.values[dtype].ctypes.data), scaled))
        return found[0]

    def loop(self, dtype: np.dtype[Any], shape: tuple[int, int, int]) -> tuple[Any, int, tuple[int, ...]]:
        """(the product loop's C function, its rows per block, `addresses`) for these terms in a factor of `shape`
        in `dtype` (`block_rows`; found once for each of the few shapes and dtypes a factor is called with)."""
        key = (dtype, shape)
        found = self._loops.get(key)
        if found is None:
            if len(self._loops) >= LOOPS_KEPT:
                self._loops.clear()
            block = block_rows(dtype, shape)
            found = self._loops[key] = (function(f"product_{dtype.name}_{block}"), block,
                                        self.addresses(dtype, block))
        return found

    def __getstate__(self) -> dict[str, Any]:
        """The state copies and pickles take: all but the addresses (`addresses`, `loop`), which are this object's
        own."""
        return {**self.__dict__, "_addresses": {}, "_loops": {}}

    @classmethod
    def from_table(cls, indices: np.ndarray, values: np.ndarray, d3: int) -> Terms:
        """From a factor's (nnz, 3) indices and values: sorted by output, then x and y index."""
        order = np.lexsort((indices[:, 1], indices[:, 0], indices[:, 2]))
        i, j, k = (indices[order, axis] for axis in range(3))
        return cls(np.searchsorted(k, np.arange(d3 + 1)), i, j, np.asarray(values)[order])


#: Bytes of a wide block's x and y components (`block_rows`): the L1 data cache of this project's machine (48 KiB).
#: Where they fit, wide blocks took 0.65-0.9x the time of narrow ones; where they did not, up to 1.5x.
WIDE_BYTES = 48 * 2**10

#: Threads one call may split its rows over: None for the environment's ``OMP_NUM_THREADS`` where it is set, else
#: every core this process may run on (`cores`); settable (benchmarks set it to their BLAS thread count, and
#: ``experiment --threads N`` to N, so that the loops share no more cores than the rest of the work).
THREADS: int | None = None
#: Terms times rows each thread is given at least (about ten microseconds of work): smaller calls run whole.
WORK_PER_THREAD = 2**16


@contextmanager
def loop_threads(count: int | None) -> Iterator[None]:
    """The compiled loops run on at most `count` threads within the block (`THREADS`; None: changed nothing), as
    before it after."""
    global THREADS
    before = THREADS
    if count is not None:
        THREADS = count
    try:
        yield
    finally:
        THREADS = before


@functools.lru_cache(maxsize=1)
def cores() -> int:
    """The threads the loops take by default: ``OMP_NUM_THREADS`` where it is a positive int, at most the cores this
    process may run on, else those cores (asked once: a system call per loop call cost more than the question).

    >>> cores() >= 1
    True
    """
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    wanted = os.environ.get("OMP_NUM_THREADS", "").strip()
    return min(int(wanted), available) if wanted.isdigit() and int(wanted) >= 1 else available


#: True in a process forked from this one: the pool's threads do not survive fork, so a forked child runs the loops
#: on its own thread.
_FORKED = [False]


def _forked() -> None:
    _FORKED[0] = True
    cores.cache_clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def threads(work: int, most: int | None = None) -> int:
    """How many threads a call of `work` terms times rows runs on (`THREADS`, checked here; at most `most`, such as
    its number of blocks): one in a forked child."""
    limit = THREADS
    if limit is None:
        limit = cores()
    elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"kernels.native.clib.THREADS: expected None or an int >= 1, got {limit!r:.60}")
    if _FORKED[0]:
        return 1
    return max(1, min(limit, work // WORK_PER_THREAD, limit if most is None else most))


def _check(terms: Terms, x: np.ndarray, y: np.ndarray, shape: tuple[int, int, int]) -> None:
    """Refuse what the loop would read out of bounds or in the wrong type, naming the argument."""
    d1, d2, _ = shape
    for name, a, d in (("x", x, d1), ("y", y, d2)):
        if type(a) is not np.ndarray or a.ndim != 2 or a.shape[1] != d or a.dtype not in BLOCK:
            raise TypeError(f"{name}: expected a 2-D float32 or float64 numpy array of {d} columns, got "
                            f"{type(a).__name__} {getattr(a, 'dtype', '')} {getattr(a, 'shape', '')}")
    if x.dtype != y.dtype or x.shape[0] != y.shape[0]:
        raise ValueError(f"x, y: expected one dtype and one row count, got {x.dtype} {x.shape} and {y.dtype} {y.shape}")
    terms.check_within(shape)


def _buffer(numbers: int, dtype: np.dtype[Any]) -> np.ndarray:
    """A working buffer of `numbers` numbers (not initialised: the loops write before they read) that starts on a
    multiple of `ALIGNMENT` bytes (the loops' vectors then never straddle two cache lines)."""
    spare = ALIGNMENT // dtype.itemsize
    raw = np.empty(numbers + spare, dtype)
    first = -raw.ctypes.data % ALIGNMENT // dtype.itemsize
    return raw[first:first + numbers]


def _strided(a: np.ndarray) -> np.ndarray:
    """a, or a contiguous copy when a stride is not a whole number of elements."""
    return a if math.gcd(*a.strides) % a.itemsize == 0 else np.ascontiguousarray(a)


def sparse_product(terms: Terms, x: np.ndarray, y: np.ndarray, shape: tuple[int, int, int],
                   openmp: bool = False) -> np.ndarray:
    """z[r] = sum over the terms of c x[r, i] y[r, j], for (rows, d1) and (rows, d2) arrays of one float dtype of
    `BLOCK` (each may be any strided view, a row stride of 0 included): a new (rows, d3) array.  Large calls run
    their blocks of rows on `threads` threads: the library's own, or with `openmp` an OpenMP team (the pool torch
    runs its operations on; calls from torch take it)."""
    _check(terms, x, y, shape)
    x, y = _strided(x), _strided(y)
    size = x.itemsize
    z = np.empty((x.shape[0], shape[2]), x.dtype)
    sparse_product_at(terms, x.dtype, x.shape[0], shape, (x.ctypes.data, x.strides[0] // size, x.strides[1] // size),
                      (y.ctypes.data, y.strides[0] // size, y.strides[1] // size), z.ctypes.data, openmp)
    return z


def block_rows(dtype: np.dtype[Any], shape: tuple[int, int, int]) -> int:
    """Rows per block of the product loop for a factor of `shape` in `dtype`: `WIDE_BLOCK` where that many rows of x
    and y components fit `WIDE_BYTES`, else `BLOCK`.

    >>> single = np.dtype(np.float32)
    >>> block_rows(single, (25, 25, 25)) == WIDE_BLOCK[single], block_rows(single, (200, 200, 200)) == BLOCK[single]
    (True, True)
    """
    wide = WIDE_BLOCK[dtype]
    return wide if (shape[0] + shape[1]) * wide * dtype.itemsize <= WIDE_BYTES else BLOCK[dtype]


def sparse_product_at(terms: Terms, dtype: np.dtype[Any], rows: int, shape: tuple[int, int, int],
                      x: tuple[int, int, int], y: tuple[int, int, int], z: int, openmp: bool = False) -> None:
    """`sparse_product` on memory given by address, unchecked: x and y are (address, row stride, component stride),
    the strides counted in numbers of `dtype` (non-negative), and z is the address of rows x d3 numbers, written
    row by row.  For engines whose arrays hold what their shapes and strides say, such as torch CPU tensors; the
    caller vouches for the addresses, as for `shape` holding the terms (`Terms.reach`).  The working memory is the
    library's own (MemoryError when it cannot have it)."""
    function, block, addresses = terms.loop(dtype, shape)
    count = threads(len(terms.i) * rows, most=-(-rows // block))
    if function(count, openmp, rows, *shape, *x, *y, z, *addresses, None):
        raise MemoryError(f"the compiled loop could not allocate {count} working blocks of {sum(shape)} x {block} "
                          f"{dtype.name} numbers")


def state_words(d: int, degree: int) -> int:
    """The words of a scan state, levels 1..degree of d coordinates: d + d^2 + ... + d^degree.

    >>> state_words(4, 4), state_words(1, 7), level_starts(2, 3).tolist()
    (340, 7, [-1, 0, 2, 6, 14])
    """
    return degree * d if d < 2 else (d ** (degree + 1) - d) // (d - 1)


def level_starts(d: int, degree: int) -> np.ndarray:
    """Where each level of a scan state starts: -1 (level 0, one word), 0, d, d + d^2, ..., then the word count
    (`state_words`)."""
    return np.array([-1] + list(itertools.accumulate((d ** m for m in range(1, degree + 1)), initial=0)), np.int64)


def _check_scan(x: np.ndarray, degree: int, order: int) -> None:
    """Refuse what the scan cannot take, naming the argument; and levels whose block of paths alone would not fit
    `kernels.MEMORY_LIMIT` (MemoryLimitError, before any work)."""
    if not isinstance(x, np.ndarray) or x.ndim != 3 or x.dtype not in LANES:
        raise TypeError(f"x: expected a float32 or float64 numpy array (paths, length, d), got {type(x).__name__} "
                        f"{getattr(x, 'dtype', '')} {getattr(x, 'shape', '')}")
    for name, value in (("degree", degree), ("order", order)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: expected an int >= 1, got {value!r:.60}")
    if x.shape[2] > 1 and degree * math.log2(x.shape[2]) > 128:   # far past any limit: say so without the sum
        raise memory.MemoryLimitError(f"degree: levels 1..{degree} of d = {x.shape[2]} hold more than 2^128 numbers "
                                      f"a path, more than kernels.MEMORY_LIMIT = {memory.format_bytes(memory.limit())}")
    words = state_words(x.shape[2], degree)
    if 4 * words * LANES[x.dtype] * x.dtype.itemsize > memory.limit():
        raise memory.MemoryLimitError(f"degree: levels 1..{degree} of d = {x.shape[2]} hold {words:,} numbers a "
                                      f"path; the scan's state for one block of {LANES[x.dtype]} paths would not fit "
                                      f"kernels.MEMORY_LIMIT = {memory.format_bytes(memory.limit())}")


class _ScanCall:
    """What both scan loops are given: the checked paths (any strides), the degree, the lift's order (at most the
    degree), where each level starts, how many words (`LANES` numbers each) a state holds, the steps per segment of
    the gradient and the shape of the checkpoints (blocks of `LANES` paths, segments, words, lanes)."""

    def __init__(self, x: np.ndarray, degree: int, order: int, sequences: bool, openmp: bool) -> None:
        _check_scan(x, degree, order)
        if not isinstance(sequences, (bool, np.bool_)):
            raise TypeError(f"sequences: expected True or False, got {sequences!r:.60}")
        self.x = _strided(np.asarray(x))
        (self.rows, self.length, self.d), self.dtype = self.x.shape, self.x.dtype
        self.degree, self.order = degree, min(order, degree)
        self.start = level_starts(self.d, degree)
        self.words, self.lanes = int(self.start[-1]), LANES[self.dtype]
        self.openmp = bool(openmp)
        self.segment = tensor_scan_segment(self.length)
        self.kept_shape = (-(-self.rows // self.lanes), -(-self.length // self.segment), self.words, self.lanes)

    def arguments(self, count: int) -> tuple[int, ...]:
        """The loops' leading arguments for `count` threads: threads, counts, level starts, paths and strides."""
        return (count, self.openmp, self.rows, self.length, self.d, self.degree, self.order, self.start.ctypes.data,
                self.x.ctypes.data, *(stride // self.dtype.itemsize for stride in self.x.strides))


def tensor_scan(x: np.ndarray, degree: int, order: int, sequences: bool = False, openmp: bool = False) -> np.ndarray:
    """Levels 1..degree of prod_t sum_{k <= order} x_t^k / k! in the truncated tensor algebra, for paths x (rows,
    length, d) of float32 or float64 (any strides): (rows, D), the levels concatenated row-major
    (D = d + ... + d^degree), or (rows, length, D), every prefix, with `sequences`.  Paths run in blocks of `LANES`
    on `threads` threads (`openmp` as in `sparse_product`).

    >>> import numpy as np
    >>> from product_interactions.kernels.native.build import unavailable
    >>> if unavailable() is None:                  # exp(1) exp(2) = exp(3) in T(R): 3, 9 / 2
    ...     print(tensor_scan(np.array([[[1.0], [2.0]]]), 2, 2))
    ... else:
    ...     print([[3.0, 4.5]])
    [[3.  4.5]]
    """
    return tensor_scan_keeping(x, degree, order, sequences, openmp, keep=False)[0]


def tensor_scan_keeping(x: np.ndarray, degree: int, order: int, sequences: bool = False, openmp: bool = False,
                        keep: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """`tensor_scan`'s result and, with `keep`, the checkpoints its gradient (`tensor_scan_vjp`) would otherwise
    recompute in a forward sweep of its own: the states before every `tensor_scan_segment`-th step, as the loops
    hold them (blocks of `LANES` paths, segments, words, lanes).  None in their place without `keep` or where they
    would take more than ``kernels.MEMORY_LIMIT``."""
    scan = _ScanCall(x, degree, order, sequences, openmp)
    out = np.empty((scan.rows, scan.length, scan.words) if sequences else (scan.rows, scan.words), scan.dtype)
    kept = _checkpoints(scan.kept_shape, scan.dtype) if keep else None
    count = threads(scan.rows * scan.length * scan.words, most=-(-scan.rows // scan.lanes))
    each = (2 * scan.words + (scan.order + 1) * scan.d + 1) * scan.lanes
    work = _buffer(count * each, scan.dtype)
    function(f"scan_{scan.dtype.name}")(*scan.arguments(count), out.ctypes.data, int(sequences), _address(kept),
                                         scan.segment, work.ctypes.data, each)
    return out, kept


def _checkpoints(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray | None:
    """An array for a loop's checkpoints, or None where it would take more than ``kernels.MEMORY_LIMIT``."""
    return np.empty(shape, dtype) if math.prod(shape) * dtype.itemsize <= memory.limit() else None


def _checked_checkpoints(checkpoints: Any, dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray | None:
    """A gradient loop's `checkpoints`: None, or the forward's (refused unless a contiguous numpy array of `dtype`
    and `shape`, as `tensor_scan_keeping` and `low_rank_scan_keeping` make them)."""
    if checkpoints is None:
        return None
    if not isinstance(checkpoints, np.ndarray) or checkpoints.dtype != dtype or \
            not checkpoints.flags.c_contiguous:
        raise TypeError(f"checkpoints: expected a contiguous {dtype} numpy array, got {type(checkpoints).__name__} "
                        f"{getattr(checkpoints, 'dtype', '')}")
    if checkpoints.shape != shape:
        raise ValueError(f"checkpoints: expected shape {shape} (the forward's of the same paths), got "
                         f"{checkpoints.shape}")
    return checkpoints


def _address(a: np.ndarray | None) -> int:
    """a's data address, or 0 (NULL) for None."""
    return 0 if a is None else a.ctypes.data


def _vjp_words(length: int, d: int, degree: int, order: int, sweep: bool = True) -> int:
    """The words (`LANES` numbers each) of one thread's buffer in `tensor_scan_vjp`: one segment of states, two
    more, two arrays of level degree - 1, the steps, their gradient, level 0 and, with `sweep` (no checkpoints
    given), the states kept."""
    segment = tensor_scan_segment(length)
    kept = -(-length // segment) if sweep else 0
    return (kept + segment + 2) * state_words(d, degree) + 2 * d ** (degree - 1) + (order + 2) * d + 1


def tensor_scan_vjp_bytes(length: int, d: int, degree: int) -> int:
    """The working memory of one thread of `tensor_scan_vjp` (the most any lift order takes): about
    2 sqrt(length) states of one block of paths, 64 bytes a word in either dtype (`LANES` numbers)."""
    return _vjp_words(length, d, degree, degree) * 64


def tensor_scan_segment(length: int) -> int:
    """Steps per segment of the scan's backward pass: about sqrt(length), so that the states it keeps (one per
    segment) and recomputes (one segment) are fewest."""
    return max(1, math.isqrt(max(length - 1, 0)) + 1)


def _checked_gradient(gradient: Any, dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray:
    """A gradient loop's `gradient`, refused unless a numpy array of `dtype` and `shape`, made contiguous (the
    caller holds it through the loop's call: a copy only its address named would be freed before the loop reads
    it)."""
    if not isinstance(gradient, np.ndarray) or gradient.dtype != dtype:
        raise TypeError(f"gradient: expected a {dtype} numpy array, got {type(gradient).__name__} "
                        f"{getattr(gradient, 'dtype', '')}")
    if gradient.shape != shape:
        raise ValueError(f"gradient: expected shape {shape}, got {gradient.shape}")
    return np.ascontiguousarray(gradient)


def tensor_scan_vjp(x: np.ndarray, gradient: np.ndarray, degree: int, order: int, sequences: bool = False,
                    openmp: bool = False, checkpoints: np.ndarray | None = None) -> np.ndarray:
    """The gradient with respect to x of <gradient, tensor_scan(x, degree, order, sequences)>: (rows, length, d).
    The states are recomputed from every `tensor_scan_segment`-th one (the forward's `checkpoints` from
    `tensor_scan_keeping`, else a forward sweep's), so memory grows as sqrt(length): each thread holds at most
    `tensor_scan_vjp_bytes`, and no more threads run than `kernels.MEMORY_LIMIT` holds (MemoryLimitError, before
    any work, when it does not hold one); `openmp` as in `sparse_product`."""
    scan = _ScanCall(x, degree, order, sequences, openmp)
    rows, length, d, dtype = scan.rows, scan.length, scan.d, scan.dtype
    gradient = _checked_gradient(gradient, dtype, (rows, length, scan.words) if sequences else (rows, scan.words))
    checkpoints = _checked_checkpoints(checkpoints, dtype, scan.kept_shape)
    dx = np.zeros((rows, length, d), dtype)
    if rows == 0 or length == 0 or d == 0:
        return dx
    numbers = _vjp_words(length, d, degree, scan.order, sweep=checkpoints is None) * scan.lanes
    per_thread = numbers * dtype.itemsize
    if per_thread > memory.limit():
        raise memory.MemoryLimitError(f"x: the scan's gradient over {length:,} steps of levels 1..{degree} of "
                                      f"d = {d} needs {memory.format_bytes(per_thread)}, more than "
                                      f"kernels.MEMORY_LIMIT = {memory.format_bytes(memory.limit())}")
    count = threads(5 * rows * length * scan.words, most=min(memory.limit() // per_thread, -(-rows // scan.lanes)))
    work = _buffer(count * numbers, dtype)
    function(f"scan_backward_{dtype.name}")(*scan.arguments(count), gradient.ctypes.data, int(sequences),
                                             dx.ctypes.data, _address(checkpoints), scan.segment,
                                             work.ctypes.data, numbers)
    return dx


class _LowRankCall:
    """What both low-rank loops are given: the checked paths (any strides), V contiguous, the slots' parents and the
    levels' slots, the sizes, the steps per segment of the gradient and the shape of the checkpoints (paths,
    segments, S N)."""

    def __init__(self, x: np.ndarray, V: np.ndarray, parent: np.ndarray, level: np.ndarray, sequences: bool,
                 openmp: bool) -> None:
        if not isinstance(x, np.ndarray) or x.ndim != 3 or x.dtype not in LANES:
            raise TypeError(f"x: expected a float32 or float64 numpy array (paths, length, h), got {type(x).__name__} "
                            f"{getattr(x, 'dtype', '')} {getattr(x, 'shape', '')}")
        if not isinstance(V, np.ndarray) or V.dtype != x.dtype or V.ndim != 3 or V.shape[0] != x.shape[2]:
            raise TypeError(f"V: expected a {x.dtype} numpy array (h = {x.shape[2]}, slots, N), got "
                            f"{type(V).__name__} {getattr(V, 'dtype', '')} {getattr(V, 'shape', '')}")
        slots = V.shape[1]
        parent, level = (np.ascontiguousarray(a, np.int64) for a in (parent, level))
        if parent.shape != (slots,) or np.any(parent < -1) or np.any(parent >= np.arange(slots)):
            raise ValueError(f"parent: expected {slots} slots' parents, each -1 or a smaller slot, got {parent.tolist()}")
        if level.ndim != 1 or np.any(level < 0) or np.any(level >= slots):
            raise ValueError(f"level: expected slots below {slots}, got {level.tolist()}")
        if not isinstance(sequences, (bool, np.bool_)):
            raise TypeError(f"sequences: expected True or False, got {sequences!r:.60}")
        self.x, self.V, self.parent, self.level = _strided(x), np.ascontiguousarray(V), parent, level
        (self.rows, self.length, self.h), (_, self.slots, self.width) = self.x.shape, self.V.shape
        self.words, self.dtype, self.openmp = self.slots * self.width, x.dtype, bool(openmp)
        self.shape = ((self.rows, self.length) if sequences else (self.rows,)) + (len(level), self.width)
        self.segment = tensor_scan_segment(self.length)
        self.kept_shape = (self.rows, -(-self.length // self.segment), self.words)

    def arguments(self, count: int) -> tuple[int, ...]:
        """The loops' leading arguments for `count` threads: threads, sizes, slots, paths and their strides, V."""
        return (count, self.openmp, self.rows, self.length, self.h, self.slots, self.width, len(self.level),
                self.parent.ctypes.data, self.level.ctypes.data, self.x.ctypes.data,
                *(stride // self.dtype.itemsize for stride in self.x.strides), self.V.ctypes.data)


def low_rank_scan(x: np.ndarray, V: np.ndarray, parent: np.ndarray, level: np.ndarray, sequences: bool = False,
                  openmp: bool = False) -> np.ndarray:
    """Rank-1 functionals along paths x (rows, length, h) of float32 or float64 (any strides), by slots V (h, S, N)
    of x's dtype: z_s(t) = <V[:, s], x_t>, R_s(t) = z_s(t) E_p(t - 1) for p = parent[s] < s (1 where p = -1),
    E_s(t) = sum_{u <= t} R_s(u).  Returns E_level[m] at the last step, (rows, M, N), or at every step with
    `sequences`, (rows, length, M, N) (`kernels.scans.low_rank` gives the slots).  Paths run on `threads` threads
    (`openmp` as in `sparse_product`).

    >>> import numpy as np
    >>> from product_interactions.kernels.native.build import unavailable
    >>> x, V = np.array([[[1.0], [3.0], [5.0]]]), np.array([[[1.0], [2.0]]])
    >>> if unavailable() is None:                  # 1 + 3 + 5 and 2 (1 * 3 + 1 * 5 + 3 * 5)
    ...     print(low_rank_scan(x, V, [-1, 0], [0, 1])[0, :, 0])
    ... else:
    ...     print([9.0, 46.0])
    [ 9. 46.]
    """
    return low_rank_scan_keeping(x, V, parent, level, sequences, openmp, keep=False)[0]


def low_rank_scan_keeping(x: np.ndarray, V: np.ndarray, parent: np.ndarray, level: np.ndarray,
                          sequences: bool = False, openmp: bool = False,
                          keep: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """`low_rank_scan`'s result and, with `keep`, the checkpoints its gradient (`low_rank_scan_vjp`) would
    otherwise recompute in a forward sweep of its own: the states before every `tensor_scan_segment`-th step, (rows,
    segments, S N).  None in their place without `keep` or where they would take more than
    ``kernels.MEMORY_LIMIT``."""
    call = _LowRankCall(x, V, parent, level, sequences, openmp)
    out = np.zeros(call.shape, call.dtype)
    kept = _checkpoints(call.kept_shape, call.dtype) if keep else None
    if out.size == 0 or call.length == 0:
        return out, None if kept is None else np.zeros_like(kept)
    count = threads(call.rows * call.length * call.words * (call.h + 1), most=call.rows)
    each = 2 * call.words
    work = _buffer(count * each, call.dtype)
    function(f"low_rank_{call.dtype.name}")(*call.arguments(count), out.ctypes.data, int(sequences),
                                             _address(kept), call.segment, work.ctypes.data, each)
    return out, kept


def low_rank_scan_vjp(x: np.ndarray, V: np.ndarray, parent: np.ndarray, level: np.ndarray, gradient: np.ndarray,
                      sequences: bool = False, openmp: bool = False,
                      checkpoints: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The gradients with respect to x and V of <gradient, low_rank_scan(x, V, parent, level, sequences)>: (rows,
    length, h) and (h, S, N).  The states are recomputed from every `tensor_scan_segment`-th one (the forward's
    `checkpoints` from `low_rank_scan_keeping`, else a forward sweep's), so each thread holds at most about
    3 sqrt(length) states and projections of S N numbers, and no more threads run than
    `kernels.MEMORY_LIMIT` holds (MemoryLimitError, before any work, when it does not hold one); `openmp` as in
    `sparse_product`.  dV is summed per chunk of paths, then over the chunks in order: the same numbers on any run
    with the same threads."""
    call = _LowRankCall(x, V, parent, level, sequences, openmp)
    dtype = call.dtype
    gradient = _checked_gradient(gradient, dtype, call.shape)
    checkpoints = _checked_checkpoints(checkpoints, dtype, call.kept_shape)
    dx = np.zeros(call.x.shape, dtype)
    if call.rows == 0 or call.length == 0 or call.words == 0 or call.h == 0:
        return dx, np.zeros(call.V.shape, dtype)
    each = ((call.kept_shape[1] if checkpoints is None else 0) + 2 * call.segment + 3) * call.words
    per_thread = (each + 4 * call.h * call.words) * dtype.itemsize          # and four chunks' sums of dV
    if per_thread > memory.limit():
        raise memory.MemoryLimitError(f"x: the functionals' gradient over {call.length:,} steps of {call.words:,} "
                                      f"numbers needs {memory.format_bytes(per_thread)}, more than "
                                      f"kernels.MEMORY_LIMIT = {memory.format_bytes(memory.limit())}")
    count = threads(5 * call.rows * call.length * call.words * (call.h + 1),
                    most=min(memory.limit() // per_thread, call.rows))
    work = _buffer(count * each, dtype)
    dV = np.zeros((min(call.rows, 4 * count) if count > 1 else 1,) + call.V.shape, dtype)   # one per chunk of paths
    function(f"low_rank_backward_{dtype.name}")(*call.arguments(count), gradient.ctypes.data, int(sequences),
                                                 dx.ctypes.data, dV.ctypes.data, _address(checkpoints), call.segment,
                                                 work.ctypes.data, each)
    return dx, dV.sum(axis=0)
