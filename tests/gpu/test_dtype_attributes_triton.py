"""tilec's dtype attributes and lists against the installed Triton's (3.6 on the
GPU machine): every dtype both have answers every attribute Triton's does the
same way.  Needs ``triton``, which only the GPU machine has, hence the mark."""
from __future__ import annotations

import pytest

import tilec.language as tl

pytestmark = pytest.mark.gpu

# tilec's dtypes; each is compared where Triton has it too.  Triton is
# imported by the fixture, never at collection: an imported `triton` would
# stop tests/test_triton_compat.py from installing its alias.
NAMES = tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.FP_TYPES
ATTRIBUTES = ["primitive_bitwidth", "itemsize", "int_bitwidth", "fp_mantissa_width", "exponent_bias"]
PREDICATES = ["is_int", "is_int_signed", "is_int_unsigned", "is_floating", "is_standard_floating", "is_bool",
              "is_fp8", "is_fp8e4nv", "is_fp8e5", "is_fp8e4b15", "is_fp8e4b8", "is_fp8e5b16", "is_fp16", "is_bf16", "is_fp32", "is_fp64", "is_int1", "is_int8", "is_int16",
              "is_int32", "is_int64", "is_uint8", "is_uint16", "is_uint32", "is_uint64"]


@pytest.fixture(scope="module")
def triton_language():
    return pytest.importorskip("triton.language")


def test_the_lists_agree(triton_language):
    TRITON_DTYPE = triton_language.dtype
    assert tl.dtype.SINT_TYPES == TRITON_DTYPE.SINT_TYPES
    assert tl.dtype.UINT_TYPES == TRITON_DTYPE.UINT_TYPES
    assert tl.dtype.STANDARD_FP_TYPES == TRITON_DTYPE.STANDARD_FP_TYPES
    assert set(tl.dtype.FP_TYPES) <= set(TRITON_DTYPE.FP_TYPES)


@pytest.mark.parametrize("name", NAMES)
def test_every_attribute_agrees(name, triton_language):
    if name not in triton_language.dtype.SINT_TYPES + triton_language.dtype.UINT_TYPES + triton_language.dtype.FP_TYPES:
        pytest.skip(f"Triton has no {name}")
    ours, theirs = tl.dtype(name), triton_language.dtype(name)
    for attr in ATTRIBUTES:
        if hasattr(theirs, attr):
            assert getattr(ours, attr) == getattr(theirs, attr), attr
    for predicate in PREDICATES:
        assert getattr(ours, predicate)() == getattr(theirs, predicate)(), predicate
    assert ours.kind().name == theirs.kind().name and ours.codegen_name() == theirs.codegen_name()
    if theirs.is_int():
        assert ours.int_signedness.name == theirs.int_signedness.name
        assert (ours.get_int_min_value(), ours.get_int_max_value()) == (theirs.get_int_min_value(),
                                                                      theirs.get_int_max_value())


def test_constants_agree(triton_language):
    assert tl.TRITON_MAX_TENSOR_NUMEL == triton_language.TRITON_MAX_TENSOR_NUMEL
    assert tl.pi32_t.element_ty.name == triton_language.pi32_t.element_ty.name
