"""The checkpoints a C scan's forward keeps, handed to its gradient through autograd (numpy).

A numpy primitive returns one array, its result; the checkpoints that spare the gradient loop its own forward sweep
(`kernels.native.clib.tensor_scan_keeping`) go beside it.  autograd makes a primitive's VJP right after running it,
in the same thread, given that very result: `Handoff.keep` holds (result, checkpoints) for the thread, and
`Handoff.take`, called by the VJP's maker, returns the checkpoints when it is given the same result (else None: the
gradient loop then sweeps, as without them).  A thread holds at most one pair, replaced by its next `keep`.

>>> import numpy as np
>>> handoff, result = Handoff(), np.zeros(2)
>>> handoff.keep(result, "states") is result
True
>>> handoff.take(result), handoff.take(result)            # once
('states', None)
>>> print(handoff.keep(result, "states") is result and handoff.take(np.zeros(2)))     # another array's VJP
None
"""
from __future__ import annotations

import threading
from typing import Any


class Handoff:
    """See the module docstring."""

    def __init__(self) -> None:
        self._local = threading.local()

    def keep(self, result: Any, checkpoints: Any) -> Any:
        """Hold `checkpoints` for the VJP of `result` (this thread's only pair); returns `result`."""
        self._local.pair = (result, checkpoints)
        return result

    def take(self, result: Any) -> Any:
        """The checkpoints held for `result`, or None; either way this thread then holds none."""
        pair = getattr(self._local, "pair", None)
        self._local.pair = None
        return pair[1] if pair is not None and pair[0] is result else None
