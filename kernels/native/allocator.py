"""The C allocator under numpy's temporaries: an opt-in setting that keeps freed memory for reuse (glibc only).

numpy takes every array of more than a few hundred kilobytes from the C allocator.  glibc's malloc hands such
blocks back to the system when they are freed (``munmap``, or trimming the heap), so the next array of that size
is faulted in again, one page at a time.  A kernel that makes many temporaries of a megabyte, such as the
level-wise signature, then spends much of its time in page faults.  On this project's (virtual) machine, the
signature of 256 paths of length 128 in R^4 took 1.3-1.7x as long at depths 2 and 4 as with freed memory kept.

`retain_freed_memory` asks malloc to keep up to `top_pad` bytes of freed memory at the top of its heap and to
serve blocks up to 32 MiB from the heap.  The process then holds on to its peak heap, as a caching allocator
does, so it is not done on import: call it once, at the start of a numeric job.  The same effect comes from the
environment, before Python starts: ``MALLOC_TOP_PAD_=67108864``.  Elsewhere (macOS, Windows, musl) it does
nothing and returns False.

>>> retain_freed_memory() in (True, False)
True
"""
from __future__ import annotations

import ctypes
import ctypes.util

#: glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
#: The largest block glibc accepts as its mmap threshold on 64-bit systems: blocks up to it come from the heap.
HEAP_BLOCKS = 32 * 2**20


def retain_freed_memory(top_pad: int = 64 * 2**20) -> bool:
    """Keep up to `top_pad` bytes of freed memory for reuse (see the module docstring); True when glibc took it."""
    if isinstance(top_pad, bool) or not isinstance(top_pad, int) or not 0 <= top_pad < 2**31:
        raise ValueError(f"top_pad: expected an int number of bytes from 0 to 2**31 - 1, got {top_pad!r:.60}")
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
    except OSError:
        return False
    if not hasattr(libc, "gnu_get_libc_version"):                        # not glibc: its malloc is another
        return False
    mallopt = libc.mallopt
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return all(mallopt(parameter, value) == 1 for parameter, value in (
        (M_MMAP_THRESHOLD, HEAP_BLOCKS), (M_TRIM_THRESHOLD, 2 * top_pad + HEAP_BLOCKS), (M_TOP_PAD, top_pad)))
