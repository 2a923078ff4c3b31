"""Arguments of the wrong type or value are refused with an error naming them, never silently accepted."""
import numpy as np
import pytest

from product_interactions.algebra import complex_numbers, quaternions


@pytest.mark.parametrize("dtype", [int, np.int32, bool, str, "U5", "not a dtype"])
def test_truncating_dtypes_are_refused(dtype):
    H = quaternions()
    with pytest.raises(TypeError, match="dtype: expected a float or complex dtype or object"):
        H.structure_constants(dtype=dtype)
    with pytest.raises(TypeError, match="dtype: expected a float or complex dtype or object"):
        H.sparse_structure_constants(dtype=dtype)
    with pytest.raises(TypeError, match="dtype: expected a float or complex dtype, got"):
        H.element([1, 2, 3, 4]).to_array(dtype)


def test_float_complex_and_object_dtypes_still_work():
    C = complex_numbers()
    assert C.structure_constants(dtype=np.complex128)[1, 1, 0] == -1
    assert C.structure_constants(dtype=np.float32).dtype == np.float32
    assert C.structure_constants(dtype=object)[1, 1, 0] == -1
    assert C.element([1, 2]).to_array(complex).tolist() == [1, 2]


@pytest.mark.parametrize("max_bytes", ["x", 1.5, True, [1]])
def test_max_bytes_must_be_an_int(max_bytes):
    with pytest.raises(TypeError, match="max_bytes: expected an int number of bytes or None, got"):
        quaternions().structure_constants(max_bytes=max_bytes)
