"""The native floor: the C source of the compiled loops, its build, cache and load (`clib`), the C allocator
setting (`allocator`) and the memory guard (`memory`).  It is the only floor that touches a compiler, and it
imports nothing of the floors above it.
"""
