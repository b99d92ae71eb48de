"""Argument classification: IR types, specialization attributes, runtime values
and where each array lives, for every kind of value a user can pass."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tilec.ir.types import PointerType, ScalarType, bf16, f32, i1, i32, i64, u64
from tilec.launch.args import DIVISIBLE_16, ELEM_TYPES, classify_arg, is_array

NUMPY_DTYPES = [n for n, t in ELEM_TYPES.items() if n != "bfloat16" and not t.is_fp8]  # numpy has neither


def classify(value, constexpr=False):
    return classify_arg("x", value, constexpr, "k")


class FakeCudaArray:
    """A device array as cupy/numba expose it: only ``__cuda_array_interface__``."""

    def __init__(self, typestr="<f4", address=0x7F0000000000):
        self.__cuda_array_interface__ = {"shape": (8,), "typestr": typestr, "data": (address, False), "version": 3}


class FakeDlpackArray:
    """An array known only through DLPack: its device says ``device_type``, its
    capsule is a host numpy array's (the launch layer only reads the address
    and dtype from it)."""

    def __init__(self, device_type, dtype="float32", device_index=0):
        self.device_type, self.device_index = device_type, device_index
        self.memory = np.zeros(4, dtype)

    def __dlpack__(self, stream=None):
        return self.memory.__dlpack__()

    def __dlpack_device__(self):
        return (self.device_type, self.device_index)


# --------------------------------------------------------------------------- #
# Python and numpy scalars
# --------------------------------------------------------------------------- #

@given(st.integers(-2**64, 2**65))
def test_int_type_value_and_divisibility(v):
    if v == 1:
        a = classify(v)
        assert a.is_constexpr and a.value == 1 and a.key == (None, int, 1)
        return
    if not -2**63 <= v < 2**64:
        with pytest.raises(ValueError, match=f"argument `x` of kernel `k`: integer {v} does not fit in 64 bits"):
            classify(v)
        return
    a = classify(v)
    want = i32 if -2**31 <= v < 2**31 else i64 if v < 2**63 else u64
    assert a.type == want and int(a.value) == v
    assert a.value.dtype == np.dtype({i32: "int32", i64: "int64", u64: "uint64"}[want])
    assert a.attrs == (DIVISIBLE_16 if v % 16 == 0 else ())
    assert a.place is None and not a.is_constexpr


@pytest.mark.parametrize("v, want", [(2**31 - 1, i32), (2**31, i64), (-2**31, i32), (-2**31 - 1, i64),
                                     (2**63 - 1, i64), (2**63, u64), (2**64 - 1, u64), (0, i32), (-16, i32)])
def test_int_type_boundaries(v, want):
    assert classify(v).type == want


F32_MAX = float(np.finfo(np.float32).max)


@given(st.floats(-F32_MAX, F32_MAX) | st.sampled_from([float("inf"), -float("inf"), float("nan"), 5e-45, -0.0]))
def test_python_float_is_f32(v):
    a = classify(v)
    assert a.type == f32 and a.attrs == () and a.value.dtype == np.float32
    np.testing.assert_array_equal(a.value, np.float32(v))


@given(st.floats(min_value=2 * F32_MAX, allow_infinity=False), st.sampled_from([1, -1]))
def test_python_float_beyond_f32_is_an_error(v, sign):
    with pytest.raises(ValueError, match="argument `x` of kernel `k`: .* overflows float32"):
        classify(sign * v)


@pytest.mark.parametrize("v", [True, False])
def test_bool_is_i1(v):
    a = classify(v)
    assert a.type == i1 and a.value == v and a.value.dtype == np.bool_


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@given(data=st.data())
def test_numpy_scalar_keeps_its_dtype(dtype, data):
    v = data.draw(hnp.from_dtype(np.dtype(dtype), allow_nan=False))
    a = classify(v)
    assert a.type == ELEM_TYPES[dtype] and a.value.dtype == np.dtype(dtype) and a.value == v
    divisible = a.type.is_int and not a.type.is_bool and int(v) % 16 == 0
    assert a.attrs == (DIVISIBLE_16 if divisible else ())


def test_numpy_one_stays_a_runtime_value():
    """Only Python ints equal to 1 are specialized; a numpy scalar asked for a dtype."""
    assert classify(np.int64(1)).type == i64


# --------------------------------------------------------------------------- #
# Arrays
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=7), start=st.integers(0, 3))
def test_numpy_array_is_a_host_pointer(dtype, shape, start):
    base = np.zeros(int(np.prod(shape)) + start, dtype)
    a_arr = base[start:].reshape(shape)
    a = classify(a_arr)
    assert a.type == PointerType(ELEM_TYPES[dtype]) and a.place == "host"
    assert a.value is a_arr
    address = a_arr.__array_interface__["data"][0]
    assert a.attrs == (DIVISIBLE_16 if address % 16 == 0 else ())


def test_misaligned_pointer_loses_divisibility():
    base = np.zeros(64, np.float32)
    aligned = base[(-base.ctypes.data % 16) // 4:]
    assert classify(aligned).attrs == DIVISIBLE_16
    assert classify(aligned[1:]).attrs == ()


def test_strided_view_is_passed_as_is():
    a = np.zeros((6, 5), np.int16)[:, 1::2]
    assert classify(a).value is a


def test_bf16_host_arrays_travel_as_int16_bits():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.array([1.5, -2.0, 3.25], ml_dtypes.bfloat16)
    arg = classify(a)
    assert arg.type == PointerType(bf16) and arg.value.dtype == np.int16
    assert np.shares_memory(arg.value, a) and arg.value.tolist() == a.view(np.int16).tolist()


def test_torch_cpu_tensors_share_memory():
    torch = pytest.importorskip("torch")
    t = torch.arange(10, dtype=torch.float32)
    arg = classify(t)
    assert arg.type == PointerType(f32) and arg.place == "host"
    arg.value[3] = 42.0
    assert t[3].item() == 42.0
    b = classify(torch.ones(4, dtype=torch.bfloat16))
    assert b.type == PointerType(bf16) and b.value.dtype == np.int16 and (b.value == 0x3F80).all()


@pytest.mark.parametrize("typestr, elem", [("<f4", f32), ("<i8", i64), ("|b1", i1), ("<u2", ScalarType("u16"))])
def test_cuda_array_interface_is_a_device_pointer(typestr, elem):
    a = classify(FakeCudaArray(typestr, address=0x1000))
    assert a.type == PointerType(elem) and a.place == "cuda" and a.value == 0x1000 and a.attrs == DIVISIBLE_16
    assert classify(FakeCudaArray(typestr, address=0x1004)).attrs == ()


@pytest.mark.parametrize("device_type, place", [(2, "cuda"), (10, "rocm")])
def test_dlpack_device_arrays(device_type, place):
    array = FakeDlpackArray(device_type, "float16", device_index=3)
    a = classify(array)
    assert a.type == PointerType(ScalarType("f16")) and (a.place, a.device) == (place, 3)
    assert a.value == array.memory.ctypes.data  # read from the capsule


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "float64"])
def test_dlpack_address_and_dtype_come_from_the_capsule(dtype):
    from tilec.launch.dlpack import dlpack_address_and_dtype

    memory = np.zeros(9, dtype)[2:]  # an offset view: the address is data + byte_offset
    assert dlpack_address_and_dtype(memory) == (memory.ctypes.data, dtype)


def test_cuda_array_interface_device_index():
    assert classify(FakeCudaArray()).device is None  # the launcher asks the driver
    both = FakeCudaArray()
    both.__dlpack_device__ = lambda: (2, 5)  # CuPy exposes both
    assert classify(both).device == 5


def test_dlpack_unknown_device_is_rejected():
    with pytest.raises(TypeError, match="argument `x` of kernel `k`: arrays on DLPack device type 7 are not supported"):
        classify(FakeDlpackArray(7))


@pytest.mark.parametrize("value", [np.zeros(3), FakeCudaArray(), FakeDlpackArray(2)])
def test_is_array(value):
    assert is_array(value)


@pytest.mark.parametrize("value", [1, 2.0, True, np.int8(3), "s", None, [1]])
def test_is_not_array(value):
    assert not is_array(value)


# --------------------------------------------------------------------------- #
# Errors and constexprs
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("value, name", [([1, 2], "list"), ({"a": 1}, "dict"), ("s", "str"), ((1,), "tuple"),
                                         (object(), "object")])
def test_unsupported_values_are_named(value, name):
    with pytest.raises(TypeError) as e:
        classify(value)
    assert str(e.value) == f"argument `x` of kernel `k`: expected an array or a scalar, got {name}"


def test_none_is_a_constexpr_none_for_any_parameter():
    for constexpr in (False, True):
        a = classify(None, constexpr=constexpr)
        assert a.is_constexpr and a.value is None and a.key == (None, type(None), None)


@pytest.mark.parametrize("dtype", ["complex64", "float128", "object", "datetime64[s]"])
def test_unsupported_array_dtypes_are_named(dtype):
    with pytest.raises(TypeError, match=re.escape(f"argument `x` of kernel `k`: {np.dtype(dtype).name} is not supported")):
        classify(np.zeros(3, dtype))


@pytest.mark.parametrize("value", [np.zeros(3), FakeCudaArray(), FakeDlpackArray(2)])
def test_array_for_constexpr_is_an_error(value):
    with pytest.raises(TypeError, match="argument `x` of kernel `k` is a tl.constexpr: pass a plain Python value"):
        classify(value, constexpr=True)


def test_unhashable_constexpr_is_an_error():
    with pytest.raises(TypeError, match="its value must be hashable .a tuple, not a list."):
        classify([1, 2], constexpr=True)


@pytest.mark.parametrize("value", [0, 1, 1.0, True, "s", (1, 2), None, -7, 2**70])
def test_constexpr_keeps_its_python_value(value):
    a = classify(value, constexpr=True)
    assert a.is_constexpr and a.value is value and a.place is None


def test_constexpr_numpy_scalar_becomes_python():
    a = classify(np.int32(64), constexpr=True)
    assert a.value == 64 and type(a.value) is int


def test_constexpr_keys_keep_equal_values_of_other_types_apart():
    keys = {classify(v, constexpr=True).key for v in (1, 1.0, True)}
    assert len(keys) == 3
