"""Elementwise ops in the reference interpreter: integer and float arithmetic,
compare, select, casts and bitcasts, against numpy and exact Python arithmetic.

Kernels are written in the IR text form; the shared builders are in
``interp_kernels.py``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import umulhi, values

from ir.interp_kernels import (
    _FLOAT_FORMAT, assert_same, binary, draw, exact_ints, FEW, FLOATS, HELPER_NAME, HOST, INTS, odd_double,
    PROPERTY, ref_cast, ref_round, run_elementwise, SINTS, sizes, to_host, wrap,
)


# --------------------------------------------------------------------------- #
# Integer arithmetic: wrapping, C division, shifts
# --------------------------------------------------------------------------- #

INT_REFERENCES = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y,
    "maximum": lambda x, y: np.maximum(x, y), "minimum": lambda x, y: np.minimum(x, y),
}


@pytest.mark.parametrize("t", INTS)
@pytest.mark.parametrize("name", sorted(INT_REFERENCES))
@PROPERTY
@given(data=st.data(), n=sizes)
def test_int_binary_ops_wrap_like_python_ints_modulo_the_width(t, name, data, n):
    x, y = draw(data, t, n), draw(data, t, n)
    got = run_elementwise([t, t], t, binary(name, t), [x, y])
    assert_same(got, wrap(INT_REFERENCES[name](exact_ints(x), exact_ints(y)), HELPER_NAME[t]), t)


@pytest.mark.parametrize("t", INTS)
@PROPERTY
@given(data=st.data(), n=sizes)
def test_int_div_and_rem_truncate_toward_zero_and_define_division_by_zero(t, data, n):
    x, y = draw(data, t, n), draw(data, t, n)
    y[::3] = 0
    x[:2] = np.iinfo(x.dtype).min
    y[1:2] = -1 if t in SINTS else y[1:2]  # MIN / -1 wraps to MIN
    quotients = [-1 if b == 0 else abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
                 for a, b in zip(exact_ints(x), exact_ints(y))]
    want_q = wrap(quotients, HELPER_NAME[t])
    want_r = wrap([a if b == 0 else a - q * b for a, b, q in zip(exact_ints(x), exact_ints(y), quotients)],
                  HELPER_NAME[t])
    assert_same(run_elementwise([t, t], t, binary("div", t), [x, y]), want_q, t)
    assert_same(run_elementwise([t, t], t, binary("rem", t), [x, y]), want_r, t)


def test_signed_division_examples():
    x, y = np.array([-7, 7, -7, 7, -128, 5], np.int8), np.array([2, -2, -2, 2, -1, 0], np.int8)
    assert run_elementwise(["i8", "i8"], "i8", binary("div", "i8"), [x, y]).tolist() == [-3, -3, 3, 3, -128, -1]
    assert run_elementwise(["i8", "i8"], "i8", binary("rem", "i8"), [x, y]).tolist() == [-1, 1, -1, 1, 0, 5]


@pytest.mark.parametrize("t", INTS)
@PROPERTY
@given(data=st.data(), n=sizes)
def test_shifts_clamp_the_count_and_follow_signedness(t, data, n):
    bits = np.dtype(HELPER_NAME[t]).itemsize * 8
    x = draw(data, t, n)
    s = data.draw(values(HELPER_NAME[t], n, lo=0, hi=min(bits + 4, np.iinfo(HELPER_NAME[t]).max)))
    ux, us = exact_ints(x.view(f"uint{bits}")), [int(v) for v in s]
    shl = [(int(a) << c) if c < bits else 0 for a, c in zip(ux, us)]
    fill = [(-1 if int(a) < 0 else 0) for a in x] if t in SINTS else [0] * n
    shr = [(int(a) >> c) if c < bits else f for a, c, f in zip(exact_ints(x) if t in SINTS else ux, us, fill)]
    assert_same(run_elementwise([t, t], t, binary("shl", t), [x, s]), wrap(shl, HELPER_NAME[t]), t)
    assert_same(run_elementwise([t, t], t, binary("shr", t), [x, s]), wrap(shr, HELPER_NAME[t]), t)


@pytest.mark.parametrize("t", INTS)
@PROPERTY
@given(data=st.data(), n=sizes)
def test_umulhi_is_the_high_half_of_the_unsigned_product(t, data, n):
    x, y = draw(data, t, n), draw(data, t, n)
    got = run_elementwise([t, t], t, binary("umulhi", t), [x, y])
    assert_same(got, umulhi(x, y, HELPER_NAME[t]), t)


@pytest.mark.parametrize("t", INTS)
@PROPERTY
@given(data=st.data(), n=sizes)
def test_int_unary_ops_wrap(t, data, n):
    x = draw(data, t, n)
    name = HELPER_NAME[t]
    assert_same(run_elementwise([t], t, "  %r = neg %a0 : {R}", [x]), wrap(-exact_ints(x), name), t)
    assert_same(run_elementwise([t], t, "  %r = abs %a0 : {R}", [x]), wrap(abs(exact_ints(x)), name), t)
    assert_same(run_elementwise([t], t, "  %r = not %a0 : {R}", [x]), ~x, t)


@PROPERTY
@given(data=st.data(), n=sizes)
def test_i1_arithmetic_wraps_to_one_bit(data, n):
    x, y = draw(data, "i1", n), draw(data, "i1", n)
    for name, want in [("add", x ^ y), ("sub", x ^ y), ("mul", x & y), ("xor", x ^ y), ("or", x | y)]:
        assert_same(run_elementwise(["i1", "i1"], "i1", binary(name, "i1"), [x, y]), want, "i1")
    assert_same(run_elementwise(["i1"], "i1", "  %r = not %a0 : {R}", [x]), ~x, "i1")


# --------------------------------------------------------------------------- #
# Floats: one rounding per op, f16/bf16 through f32, NaN rules
# --------------------------------------------------------------------------- #

FLOAT_REFERENCES = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
                    "rem": np.fmod}


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("name", sorted(FLOAT_REFERENCES))
@PROPERTY
@given(data=st.data(), n=sizes)
def test_float_binary_ops_round_once_to_the_type(t, name, data, n):
    x, y = draw(data, t, n), draw(data, t, n)
    with np.errstate(all="ignore"):
        want = ref_round(FLOAT_REFERENCES[name](x.astype(np.float64), y.astype(np.float64)), t)
    assert_same(run_elementwise([t, t], t, binary(name, t), [x, y]), want, t)


@pytest.mark.parametrize("t", FLOATS)
@PROPERTY
@given(data=st.data(), n=sizes)
def test_maximum_minimum_nan_rules(t, data, n):
    x, y = draw(data, t, n), draw(data, t, n)
    x[::4] = np.nan
    for name, fmax, maximum in [("maximum", np.fmax, np.maximum), ("minimum", np.fmin, np.minimum)]:
        assert_same(run_elementwise([t, t], t, binary(name, t), [x, y]), fmax(x, y), t)
        propagating = binary(name, t, " {{propagate_nan = true}}")
        assert_same(run_elementwise([t, t], t, propagating, [x, y]), maximum(x, y), t)


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("propagate", ("", " {{propagate_nan = true}}"))
def test_maximum_and_minimum_order_signed_zeros(t, propagate):
    a = np.array([0.0, -0.0, -0.0, 0.0] * 9)  # 36 lanes: numpy's vector and scalar paths both run
    b = np.array([-0.0, 0.0, -0.0, 0.0] * 9)
    high = run_elementwise([t, t], t, binary("maximum", t, propagate), [a, b])
    low = run_elementwise([t, t], t, binary("minimum", t, propagate), [a, b])
    assert np.signbit(high).tolist() == [False, False, True, False] * 9
    assert np.signbit(low).tolist() == [True, True, True, False] * 9


UNARY_REFERENCES = {
    "neg": np.negative, "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "sqrt": np.sqrt,
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sin": np.sin, "cos": np.cos,
    "rsqrt": lambda x: 1 / np.sqrt(x), "erf": np.vectorize(math.erf, otypes=[np.float64]),
}
EXACT_UNARY = {"neg", "abs", "floor", "ceil", "sqrt"}


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY_REFERENCES))
@PROPERTY
@given(data=st.data(), n=sizes)
def test_float_unary_ops(t, name, data, n):
    x = draw(data, t, n, lo=-80.0, hi=80.0) if name in ("sin", "cos") else draw(data, t, n)
    got = run_elementwise([t], t, f"  %r = {name} %a0 : {{R}}", [x]).astype(np.float64)
    with np.errstate(all="ignore"):
        want = ref_round(UNARY_REFERENCES[name](x.astype(np.float64)), t)
    if name in EXACT_UNARY:
        assert_same(got, want, t)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    with np.errstate(all="ignore"):
        spacing = np.abs(ref_round(np.abs(want) * (1 + 2.0 ** (1 - _FLOAT_FORMAT[t][0])), t, rtz=True) - np.abs(want))
        atol = 2e-15 if name == "erf" and t != "f64" else 0.0  # f32 and below: a float64 series, ~1e-15
        close = (got == want) | (np.abs(got - want) <= 2 * spacing + atol)
    assert (close | np.isnan(want)).all(), (x[~close], got[~close], want[~close])


@pytest.mark.parametrize("t", ("f16", "bf16", "f32"))
@PROPERTY
@given(data=st.data(), n=sizes)
def test_fma_rounds_once(t, data, n):
    a, b, c = (draw(data, t, n, finite=True, lo=-1e4, hi=1e4) for _ in range(3))
    exact = [Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r)) for p, q, r in zip(a, b, c)]
    want = ref_round(np.array([odd_double(e) for e in exact]), t)
    got = run_elementwise([t, t, t], t, "  %r = fma %a0, %a1, %a2 : {R}", [a, b, c])
    assert_same(got, want, t)


@pytest.mark.parametrize("t", ("f32", "f64"))
def test_erf_is_accurate(t):
    x = np.linspace(-7, 7, 4001).astype(HELPER_NAME[t])
    got = run_elementwise([t], t, "  %r = erf %a0 : {R}", [x])
    want = ref_round(np.array([math.erf(v) for v in x.astype(np.float64)]), t)
    if t == "f64":
        np.testing.assert_array_equal(got, want)
    else:  # the float64 series is off by ~1e-15: at most a tie-breaking ulp
        np.testing.assert_allclose(got, want, rtol=2.0 ** -23, atol=0)


# --------------------------------------------------------------------------- #
# Compare, select, casts, bitcasts
# --------------------------------------------------------------------------- #

PREDICATES = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
              "gt": np.greater, "ge": np.greater_equal}


@pytest.mark.parametrize("t", INTS + FLOATS + ("i1",))
@PROPERTY
@given(data=st.data(), n=sizes)
def test_compare_and_select(t, data, n):
    x, y = draw(data, t, n), draw(data, t, n)
    y[::3] = x[::3]
    for pred, ref in PREDICATES.items():
        got = run_elementwise([t, t], "i1", f'  %r = cmp %a0, %a1 {{{{pred = "{pred}"}}}} : {{R}}', [x, y])
        assert_same(got, ref(x, y), "i1")
    body = '  %c = cmp %a0, %a1 {{pred = "lt"}} : tile<{B}xi1>\n  %r = select %c, %a0, %a1 : {R}'
    assert_same(run_elementwise([t, t], t, body, [x, y]), np.where(x < y, x, y), t)


CAST_TYPES = ("i1", "i8", "i32", "i64", "u8", "u16", "u64", "f16", "bf16", "f32", "f64")


@pytest.mark.parametrize("src", CAST_TYPES)
@pytest.mark.parametrize("dst", CAST_TYPES)
@FEW
@given(data=st.data(), n=sizes, rtz=st.booleans())
def test_casts_truncate_saturate_wrap_and_round(src, dst, data, n, rtz):
    x = draw(data, src, n)
    rounding = ', rounding = "rtz"' if rtz and src in FLOATS and dst in FLOATS else ""
    got = run_elementwise([src], dst, f"  %r = cast %a0 {{{{to = {dst}{rounding}}}}} : {{R}}", [x])
    want = ref_cast(x, src, dst, bool(rounding))
    assert_same(got, want.astype(np.float64) if dst in FLOATS else want.astype(HOST[dst]), dst)


def test_cast_examples_nan_inf_and_bf16_ties():
    x = np.array([np.nan, np.inf, -np.inf, -1.9, 1e10, 2.5], np.float32)
    assert run_elementwise(["f32"], "i32", "  %r = cast %a0 {{to = i32}} : {R}", [x]).tolist() == \
        [0, 2**31 - 1, -2**31, -1, 2**31 - 1, 2]
    assert run_elementwise(["f32"], "u8", "  %r = cast %a0 {{to = u8}} : {R}", [x]).tolist() == [0, 255, 0, 0, 255, 2]
    ties = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 3.3963e38], np.float32)
    got = run_elementwise(["f32"], "bf16", "  %r = cast %a0 {{to = bf16}} : {R}", [ties])
    assert got.tolist() == [1.0, 1 + 2**-6, -1.0, np.inf]
    # just above a midpoint, but the nearest double is the midpoint: one rounding must see past it
    big = np.array([2**60 + 2**52 + 1, -(2**60 + 2**36 + 1)], np.int64)
    assert run_elementwise(["i64"], "bf16", "  %r = cast %a0 {{to = bf16}} : {R}", [big])[0] == 2**60 + 2**53
    assert run_elementwise(["i64"], "f32", "  %r = cast %a0 {{to = f32}} : {R}", [big])[1] == -(2**60 + 2**37)


@pytest.mark.parametrize("src,dst", [("f32", "i32"), ("i32", "u32"), ("f16", "i16"), ("bf16", "u16"),
                                     ("f64", "i64"), ("i8", "u8")])
@PROPERTY
@given(data=st.data(), n=sizes)
def test_bitcast_keeps_the_bits(src, dst, data, n):
    x = draw(data, src, n)
    got = run_elementwise([src], dst, f"  %r = bitcast %a0 {{{{to = {dst}}}}} : {{R}}", [x])
    assert_same(to_host(got, dst).view(np.uint8), to_host(x, src).view(np.uint8), dst)
