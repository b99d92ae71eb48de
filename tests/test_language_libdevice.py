"""``tl.extra.libdevice`` (and ``tl.extra.cuda.libdevice``, ``tl.math``): every
function runs in the interpreter against a float64 numpy reference on
hypothesis-drawn inputs (negatives, tiny and huge values, inf and NaN where
the domain allows), in float32 and float64 and, where the case says so, in
float16 and bfloat16; and every function compiles for sm_90 (libdevice
linked, ptxas run), which proves its library function exists and links.

The interpreter computes each float function in float64 and rounds once, so
it is held to 1 ulp of the reference for float32 and narrower types; for
float64, where the reference is a different implementation (numpy against
Python's ``math``, a series against numpy's ``i0``), to 4.  The GPU test
(tests/gpu/test_libdevice_gpu.py) holds the device to libdevice's documented
bounds against the interpreter.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec.backends.nvidia.ptxas import find_libdevice, find_ptxas
from tilec.language.extra import libdevice
from tilec.language.extra.cuda import libdevice as cuda_libdevice

from helpers import FEW, assert_close, from_host, values
from libdevice_cases import BLOCK, CASES, apply_kernel, arity, case_dtypes, draw_operands, expected, launch

# These check the interpreter's definitions to within an ulp of float64 math;
# libdevice on a GPU is held to its own documented bounds instead
# (tests/gpu/test_libdevice_gpu.py), so the device mirror leaves this file out.
pytestmark = pytest.mark.host_only


@pytest.mark.parametrize("case, dtype", list(case_dtypes()))
@FEW
@given(data=st.data())
def test_interpreter_matches_the_reference(case, dtype, data):
    operands = draw_operands(data, case, dtype)
    out = launch(case, dtype, operands)
    ulps = 4 if dtype == "float64" else 1
    assert_close(out, expected(case, dtype, operands), case.result or dtype, ulps=ulps)


@pytest.mark.parametrize("case, dtype", list(case_dtypes(with_narrow=False)))
def test_compiles_for_sm_90(case, dtype):
    """The function's library symbol exists in libdevice and links (ptxas assembles the kernel)."""
    if find_ptxas() is None or find_libdevice() is None:
        pytest.skip("no ptxas / libdevice.10.bc: `pip install 'tilec[cuda]'`")
    operands = [np.zeros(BLOCK, np.int32 if letter == "n" else dtype) for letter in case.params]
    operands += [operands[0]] * (4 - len(operands))
    out = np.zeros(BLOCK, {"int1": np.bool_}.get(case.result, case.result or dtype))
    compiled = apply_kernel.compile(*operands, out, FN=getattr(libdevice, case.name), ARITY=arity(case),
                                    BLOCK=BLOCK, target="sm_90")
    assert "cubin" in compiled.asm


def test_every_exposed_function_has_a_case():
    assert {c.name for c in CASES} == set(libdevice.__all__)


def test_the_three_paths_name_the_same_functions():
    assert cuda_libdevice.__all__ == libdevice.__all__
    for name in libdevice.__all__:
        assert getattr(libdevice, name) is getattr(cuda_libdevice, name)
        assert (getattr(tl.math, name) is getattr(libdevice, name)) == (name != "exp")
    assert tl.extra.libdevice is libdevice and tl.extra.cuda.libdevice is cuda_libdevice


@pytest.mark.parametrize("inverse, forward, lo, hi", [
    ("erfinv", lambda x: np.vectorize(math.erf)(x), -5.5, 5.5),
    ("erfcinv", lambda x: np.vectorize(math.erfc)(x), -5.5, 26.0),
    ("normcdfinv", lambda x: np.vectorize(math.erfc)(-x / math.sqrt(2)) / 2, -37.0, 8.0),
])
@FEW
@given(data=st.data())
def test_inverse_functions_invert(inverse, forward, lo, hi, data):
    """The interpreter's own definitions (no numpy reference exists): f^-1(f(x))
    comes back to ``x``, or f of it to ``f(x)``, within 1e-13 in float64.
    One of the two is well conditioned everywhere: in a deep tail (normcdfinv
    of 4e-282) ``f`` magnifies an ulp of ``x`` 36 times, where it saturates
    (erf near 1) ``f^-1`` does."""
    x = data.draw(values("float64", BLOCK, lo=lo, hi=hi))
    y = forward(x)
    case = next(c for c in CASES if c.name == inverse)
    got = from_host(launch(case, "float64", [y]))
    ok = np.isfinite(got)
    near_x = np.isclose(got[ok], x[ok], rtol=1e-13, atol=0)
    near_y = np.isclose(forward(got[ok]), y[ok], rtol=1e-13, atol=0)
    assert np.all(near_x | near_y), (x[ok][~(near_x | near_y)], got[ok][~(near_x | near_y)])


@pytest.mark.parametrize("name, dtype, message", [
    ("tanh", "int32", r"`libdevice.tanh` takes floating-point values, got tile<16xint32>"),
    ("nextafter", "float16", r"`libdevice.nextafter` takes float32/float64 values"),
    ("popc", "float32", r"`libdevice.popc` takes int32/uint32/int64/uint64 values"),
    ("hadd", "int64", r"`libdevice.hadd` takes int32/uint32 values"),
])
def test_a_type_the_function_does_not_take_is_a_compile_error(name, dtype, message):
    case = next(c for c in CASES if c.name == name)
    with pytest.raises(tilec.CompilationError, match=message):
        launch(case, dtype, [np.zeros(BLOCK, dtype) for _ in case.params])


def test_each_function_passed_as_a_constexpr_compiles_its_own_variant():
    """The stubs share their (factory's) source: the disk cache must key them by name,
    or the second function would load the first one's code."""
    x = np.zeros(BLOCK, np.float32)
    # functions the cpu target takes from the C library (``backends/host/lowering.py``), so each names its own
    for fn, symbol in ((libdevice.lgamma, "@lgammaf"), (libdevice.tgamma, "@tgammaf"), (libdevice.acosh, "@acoshf")):
        compiled = apply_kernel.compile(x, x, x, x, x, FN=fn, ARITY=1, BLOCK=BLOCK, target="cpu")
        assert symbol in compiled.asm["llir"], fn.__name__
