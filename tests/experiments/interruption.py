"""An interrupted training run, for the tests that resume one from its checkpoint."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from product_interactions.interactions.experiments.training import Adam


class Interrupted(Exception):
    """Raised in place of an optimiser step (a Ctrl-C, a lost machine)."""


@contextlib.contextmanager
def training_stopped_at(count: int) -> Iterator[None]:
    """Inside the block every `Adam` raises `Interrupted` at its step `count`, and the block must end by it; the
    optimiser steps again as before afterwards."""
    step = Adam.step

    def stopping(self: Adam, batch: object) -> object:
        if self.count == count:
            raise Interrupted
        return step(self, batch)
    Adam.step = stopping
    try:
        with pytest.raises(Interrupted):
            yield
    finally:
        Adam.step = step
