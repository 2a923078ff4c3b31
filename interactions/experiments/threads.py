"""How many threads an experiment runs on, and running it on them.

An experiment's libraries each keep a pool of threads: torch's intra-op pool, numpy's BLAS and the library's
compiled loop (`kernels.native.loop_threads`).  Threads that wait for one another spin, so on a machine whose cores are
busy with other work a run on every core can take many times longer than one on a single thread: the quick copy
experiment took 50 s on torch's two threads against 2.8 s on one, with another process busy on one of the two
cores.  `run_threads` therefore takes, in order: the number asked for (``--threads N``), the environment's
(``OMP_NUM_THREADS`` and the like, which torch and the BLAS libraries read too), one thread for the quick
settings (whose arrays are too small to share out), and for the full settings each library's own default.

>>> run_threads(None, quick=True, environment={})
1
>>> run_threads(None, quick=False, environment={"OMP_NUM_THREADS": "3"})
3
>>> run_threads(2, quick=True, environment={"OMP_NUM_THREADS": "3"})
2
>>> run_threads(None, quick=False, environment={}) is None        # the libraries' defaults
True
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from threadpoolctl import threadpool_limits

from ...algebra.algebra import check_count
from ...kernels.native import loop_threads

if TYPE_CHECKING:
    from ...kernels.arrays import Engine

#: The environment variables that set the threads of OpenMP (torch's pool) and of the BLAS libraries, read in
#: this order.
VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def environment_threads(environment: Mapping[str, str] = os.environ) -> int | None:
    """The first positive int among `VARIABLES` in `environment`, else None."""
    for name in VARIABLES:
        value = environment.get(name, "").strip()
        if value.isascii() and value.isdigit() and int(value) >= 1:
            return int(value)
    return None


def run_threads(threads: int | None, quick: bool, environment: Mapping[str, str] = os.environ) -> int | None:
    """The threads a run takes (see the module docstring): `threads` if given (a positive int), else the
    environment's, else 1 when `quick`, else None (each library's default)."""
    if threads is not None:
        return check_count(threads, "threads")
    return environment_threads(environment) or (1 if quick else None)


@contextmanager
def limited(threads: int | None, engine: Engine) -> Iterator[None]:
    """Run the block with numpy's BLAS, the compiled loop and torch (when `engine` is torch's or torch is
    imported) on `threads` threads each, and put them back after it; None changes nothing."""
    if threads is None:
        yield
        return
    torch = engine.xp if engine.name == "torch" else sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    try:
        if torch is not None:
            torch.set_num_threads(threads)
        with loop_threads(threads), threadpool_limits(limits=threads, user_api="blas"):
            yield
    finally:
        if torch is not None:
            torch.set_num_threads(before)
