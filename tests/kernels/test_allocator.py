"""kernels.native.allocator: the opt-in glibc setting that keeps freed memory for numpy's temporaries."""
from __future__ import annotations

import ctypes.util
import platform

import numpy as np
import pytest

from product_interactions.interactions.feature_map import signature
from product_interactions.kernels.native.allocator import retain_freed_memory


def test_glibc_takes_the_setting_and_results_do_not_change():
    paths = np.random.default_rng(0).standard_normal((8, 16, 3)).cumsum(axis=1)
    before = signature(paths, 3)
    applied = retain_freed_memory()
    on_glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert applied is on_glibc and retain_freed_memory() is applied          # idempotent
    np.testing.assert_array_equal(signature(paths, 3), before)
    assert ctypes.util.find_library("c") is not None or not on_glibc


@pytest.mark.parametrize("bad", [-1, 2**31, 1.5, True, "64M", None])
def test_bad_sizes_are_refused_by_name(bad):
    with pytest.raises(ValueError, match="top_pad: expected an int number of bytes"):
        retain_freed_memory(bad)
