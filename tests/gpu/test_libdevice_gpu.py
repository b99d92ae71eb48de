"""``tl.extra.libdevice`` on the GPU: tilec calls libdevice as Triton does.

* float32, float64 and integer operands (Triton's libdevice domain): tilec's
  result has the same bits as Triton 3.6's call of the same function on the
  same hypothesis-drawn inputs, except where tilec deliberately differs
  (``FROM_TRITON``, and float32 subnormals: Triton links libdevice with
  flush-to-zero, tilec keeps them).  A subnormal can also be a step inside
  the function (``pow(0.0098, -19)`` divides by 0.0098^19; ``sinpi`` of a
  tiny normal multiplies by pi's low part): where the bits differ there,
  tilec's float32 result must hold libdevice's own bound against float64
  (``Case.ulps``); Triton's may not (inf for that ``pow``).
* float16 and bfloat16 (tilec's extension; Triton rejects them): the float32
  function on the same values, rounded once.

libdevice's own accuracy against float64 is measured, not asserted here:
``benchmarks/libdevice_accuracy.py`` writes it, docs/language.md quotes it.
The interpreter's definitions are held to 1 ulp of float64 on the host by
``tests/test_language_libdevice.py``.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import FEW, assert_close, cast
from libdevice_cases import BLOCK, arity, case_dtypes, draw_operands, expected, launch, triton_apply_kernel

pytestmark = pytest.mark.gpu

NARROW = ("float16", "bfloat16")

# Functions whose tilec result may differ from Triton's by a few ulps, and why.
FROM_TRITON = {
    # tilec's sqrt is correctly rounded (sqrt.rn); Triton's libdevice call is
    # libdevice's default, the approximate square root
    "sqrt": 1,
    # the Bessel functions' recurrences, compiled by a different LLVM (llvmlite's
    # vs Triton's), contract multiplies and adds into FMAs at other places
    "jn": 4, "yn": 4, "y0": 1, "y1": 1,
}
# Conversions to integers: NaN gives 0 in tilec (the interpreter's definition,
# and C's saturating convention); libdevice gives the integer minimum.
NAN_TO_ZERO = ("float2int", "float2uint", "float2ll", "float2ull",
               "double2int", "double2uint", "double2ll", "double2ull")


@pytest.fixture(scope="module")
def triton(torch):
    return pytest.importorskip("triton")


def _on_device(torch):
    """``launch``'s ``place``: a CUDA tensor holding the values as ``dtype``."""
    def place(x, dtype):
        name = {"int1": "bool"}.get(dtype, dtype)
        return torch.from_numpy(np.ascontiguousarray(x)).to(getattr(torch, name)).cuda()
    return place


def _host_bits(torch, t) -> np.ndarray:
    """A device tensor's values on the host; bfloat16 widened by its bits
    (so a NaN keeps its sign, which a float conversion need not)."""
    t = t.cpu()
    if t.dtype == torch.bfloat16:
        return (t.view(torch.int16).numpy().astype(np.int32) << 16).view(np.float32)
    return t.numpy()


def _comparable(case, dtype: str, operands: list[np.ndarray], ours: np.ndarray) -> np.ndarray:
    """Where tilec's result must match Triton's: not at float32 subnormals
    (inputs or tilec's result, which Triton's flush-to-zero libdevice flushes),
    not at NaN inputs of the integer conversions."""
    keep = np.ones(BLOCK, bool)
    floats = [x for letter, x in zip(case.params, operands) if letter != "n" and x.dtype.kind == "f"]
    if case.name.startswith(NAN_TO_ZERO):
        for x in floats:
            keep &= ~np.isnan(x)
    tiny = np.float32(2.0 ** -126)
    for x in floats + ([ours] if ours.dtype == np.float32 else []):
        if x.dtype == np.float32:
            keep &= ~((x != 0) & (np.abs(x) < tiny))
    return keep


@pytest.mark.parametrize("case, dtype", list(case_dtypes(with_narrow=False)))
@FEW
@given(data=st.data())
def test_same_bits_as_triton(torch, triton, case, dtype, data):
    operands = draw_operands(data, case, dtype)
    place = _on_device(torch)
    ours = _host_bits(torch, launch(case, dtype, operands, place=place))
    args = [place(x, "int32" if letter == "n" else dtype) for letter, x in zip(case.params, operands)]
    theirs_t = place(np.zeros(BLOCK), case.result or dtype)
    try:
        triton_apply_kernel(case.name, arity(case))[(1,)](*args, *[args[0]] * (4 - len(args)), theirs_t, BLOCK=BLOCK)
    except triton.CompilationError as error:
        pytest.skip(f"Triton's libdevice does not take {dtype} for {case.name}: {str(error).splitlines()[-1][:120]}")
    theirs = _host_bits(torch, theirs_t)
    keep = _comparable(case, dtype, operands, ours)
    if dtype == "float32" and case.ulps[0] is not None:
        bits = f"u{ours.itemsize}"
        flushed = keep & (ours.view(bits) != theirs.view(bits)) & ~(np.isnan(ours) & np.isnan(theirs))
        assert_close(ours[flushed], expected(case, dtype, operands)[flushed], case.result or dtype,
                     ulps=case.ulps[0])
        keep &= ~flushed
    assert_close(ours[keep], theirs[keep], case.result or dtype, ulps=FROM_TRITON.get(case.name, 0))


@pytest.mark.parametrize("case, dtype", [p for p in case_dtypes() if p.values[1] in NARROW])
@FEW
@given(data=st.data())
def test_narrow_forms_are_the_float32_function_rounded_once(torch, case, dtype, data):
    operands = draw_operands(data, case, dtype)
    place = _on_device(torch)
    narrow = launch(case, dtype, operands, place=place)
    # the values the narrow kernel got, bit for bit (a NaN's sign included), as float32
    wide_operands = [x if letter == "n" else _host_bits(torch, place(x, dtype)).astype(np.float32)
                     for letter, x in zip(case.params, operands)]
    wide = _host_bits(torch, launch(case, "float32", wide_operands, place=place))
    got = _host_bits(torch, narrow)
    if case.result is not None:  # an integer or predicate: the same as float32's on the same values
        np.testing.assert_array_equal(got, wide)
        return
    # fma's narrow forms are one rounding of the exact a*b+c (the hardware's
    # narrow fma), where rounding float32's result would be two
    assert_close(got, cast(wide, dtype), dtype, ulps=1 if case.name.startswith("fma") else 0)
