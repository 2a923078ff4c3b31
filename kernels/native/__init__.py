"""The native floor: the C source of the compiled loops (`csource`, and the .c and .h files beside it), their build
and safe load (`build`), their Python side (`clib`), the sparse product's loop as a Triton kernel for GPUs
(`triton_loop`, imported on first use, with Triton), the C allocator setting (`allocator`) and the memory guard
(`memory`).  It is the only floor that touches a compiler, and it imports nothing of the floors above it.
"""
from .allocator import retain_freed_memory
from .build import unavailable
from .clib import loop_threads
from .memory import MemoryLimitError, format_bytes, limit

__all__ = ["MemoryLimitError", "format_bytes", "limit", "loop_threads", "retain_freed_memory", "unavailable"]
