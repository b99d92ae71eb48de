"""The reference interpreter against plain numpy (and exact Python arithmetic).

Kernels are written in the IR text form.  Most tests run a 1-D elementwise
kernel over ``n`` ragged elements in blocks of 16, so every case has several
programs in one batch and a partly masked last block.
"""
from __future__ import annotations

import functools
import math
import operator
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import umulhi, values
from tilec.errors import InterpreterError
from tilec.ir import ops as ir
from tilec.ir.interp_ops import evaluate_pure
from tilec.ir.interpret import interpret
from tilec.ir.parser import parse_function
from tilec.ir.types import SCALAR_TYPES

PROPERTY = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
FEW = settings(PROPERTY, max_examples=6)
BLOCK = 16

SINTS, UINTS, FLOATS = ("i8", "i16", "i32", "i64"), ("u8", "u16", "u32", "u64"), ("f16", "bf16", "f32", "f64")
INTS = SINTS + UINTS
HELPER_NAME = {**{f"i{b}": f"int{b}" for b in (8, 16, 32, 64)}, **{f"u{b}": f"uint{b}" for b in (8, 16, 32, 64)},
               "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "i1": "int1"}
HOST = {**{t: HELPER_NAME[t] for t in INTS + ("f16", "f32", "f64")}, "bf16": "uint16", "i1": "bool"}
sizes = st.integers(1, 50)


# --------------------------------------------------------------------------- #
# Host arrays and exact references
# --------------------------------------------------------------------------- #

def to_host(a, t: str) -> np.ndarray:
    """What a kernel with element type ``t`` reads: bf16 travels as its uint16 bits."""
    a = np.asarray(a)
    if t == "bf16":
        return (np.asarray(ref_round(a.astype(np.float64), "bf16"), np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return np.ascontiguousarray(a.astype(HOST[t]))


def from_host(a: np.ndarray, t: str) -> np.ndarray:
    return (a.astype(np.uint32) << 16).view(np.float32) if t == "bf16" else a


# (significant bits, lowest normal exponent as frexp gives it, largest finite) per float type
_FLOAT_FORMAT = {"f16": (11, -13, 65504.0), "bf16": (8, -125, 3.3895313892515355e38),
                 "f32": (24, -125, 3.4028234663852886e38), "f64": (53, -1021, 1.7976931348623157e308)}


def ref_round(x, t: str, rtz: bool = False) -> np.ndarray:
    """float64 ``x`` rounded to float type ``t`` (nearest even, or toward zero), as float64.

    Written independently of the interpreter: scale to an integer count of the
    quantum at x's exponent and round that integer.
    """
    x = np.asarray(x, np.float64)
    bits, emin, largest = _FLOAT_FORMAT[t]
    if t == "f64":
        return x
    with np.errstate(all="ignore"):
        _, e = np.frexp(x)
        quantum = np.ldexp(1.0, np.maximum(e, emin) - bits)
        scaled = x / quantum
        r = (np.trunc(scaled) if rtz else np.round(scaled)) * quantum
        over = np.abs(r) > largest
        r = np.where(over, np.copysign(largest if rtz else np.inf, x), r)
    return np.where(np.isfinite(x), r, x)


def wrap(ints, name: str) -> np.ndarray:
    """Python ints reduced modulo 2**bits into numpy dtype ``name``."""
    bits = np.dtype(name).itemsize * 8
    return np.array([int(v) % (1 << bits) for v in ints], dtype=f"uint{bits}").view(name)


def exact_ints(a) -> np.ndarray:
    return np.asarray(a).astype(object)


def assert_same(got, want, t: str) -> None:
    """Equal values of type ``t``; NaN matches NaN."""
    got, want = np.asarray(got), np.asarray(want)
    if t in FLOATS:
        got, want = got.astype(np.float64), want.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok], want[ok])
    else:
        np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- #
# Kernel text
# --------------------------------------------------------------------------- #

@functools.lru_cache(maxsize=None)  # parsing dominates a small kernel's run time
def kernel(args: str, body: str, name: str = "k"):
    return parse_function(f"func @{name}({args}) {{{body}\n}}\n")


def lanes(block: int = BLOCK) -> str:
    """Defines ``%offs`` (this program's element indices) and ``%mask`` (``offs < n``)."""
    return f"""
  %pid = program_id {{axis = 0}} : i32
  %blk = constant {{value = {block}, type = i32}} : i32
  %base = mul %pid, %blk : i32
  %bt = splat %base {{shape = ({block},)}} : tile<{block}xi32>
  %ar = arange {{start = 0, end = {block}}} : tile<{block}xi32>
  %offs = add %bt, %ar : tile<{block}xi32>
  %nt = splat %n {{shape = ({block},)}} : tile<{block}xi32>
  %mask = cmp %offs, %nt {{pred = "lt"}} : tile<{block}xi1>"""


def pointer_to(ptr: str, t: str, block: int = BLOCK, offs: str = "%offs") -> str:
    """Defines ``%{ptr}_at``: the pointers ``ptr + offs``."""
    return f"""
  %{ptr}_s = splat %{ptr} {{shape = ({block},)}} : tile<{block}xptr<{t}>>
  %{ptr}_at = addptr %{ptr}_s, {offs} : tile<{block}xptr<{t}>>"""


def elementwise_kernel(ins: tuple, out: str, body: str, block: int = BLOCK):
    """``out[i] = body(a0[i], a1[i], ...)`` for ``i < n``; ``body`` defines ``%r`` and may
    use ``{B}`` (block), ``{T}`` (first input's tile type) and ``{R}`` (the result's)."""
    args = ", ".join(f"%p{i}: ptr<{t}>" for i, t in enumerate(ins))
    text = lanes(block)
    for i, t in enumerate(ins):
        text += pointer_to(f"p{i}", t, block) + f"\n  %a{i} = load %p{i}_at, %mask, _ : tile<{block}x{t}>"
    text += "\n" + body.format(B=block, T=f"tile<{block}x{ins[0]}>", R=f"tile<{block}x{out}>")
    text += pointer_to("pout", out, block) + "\n  store %pout_at, %r, %mask"
    return kernel(f"{args}, %pout: ptr<{out}>, %n: i32", text)


def run_elementwise(ins: list, out: str, body: str, arrays: list, block: int = BLOCK) -> np.ndarray:
    """Run ``elementwise_kernel`` on numpy ``arrays``; the output as numpy values (bf16 as f32)."""
    n = len(arrays[0])
    host = [to_host(a, t) for a, t in zip(arrays, ins)]
    result = to_host(np.zeros(n), out)
    interpret(elementwise_kernel(tuple(ins), out, body, block), (math.ceil(n / block),), host + [result, n])
    return from_host(result, out)


def binary(name: str, t: str, attrs: str = "") -> str:
    return f"  %r = {name} %a0, %a1{attrs} : {{R}}"


def draw(data, t: str, n: int, **kw) -> np.ndarray:
    return data.draw(values(HELPER_NAME[t], n, **kw))


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


def odd_double(x: Fraction) -> float:
    """``x`` rounded to odd in float64: of the two doubles around an inexact ``x``, the one
    with an odd significand.  Rounding that once more to a type of at most 24 bits is
    the correct rounding of ``x`` itself (no double-rounding error)."""
    d = float(x)
    if Fraction(d) == x:
        return d
    other = float(np.nextafter(d, np.inf if x > Fraction(d) else -np.inf))
    return d if np.float64(d).view(np.uint64) & 1 else other


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


def ref_cast(x, src: str, dst: str, rtz: bool = False) -> np.ndarray:
    if dst == "i1":
        return x != 0
    if dst in FLOATS:
        to_double = float if dst == "f64" else (lambda v: odd_double(Fraction(v)))  # f64: one rounding
        wide = x.astype(np.float64) if src in FLOATS else np.array([to_double(int(v)) for v in x])
        return ref_round(wide, dst, rtz)
    if src in FLOATS:
        info = np.iinfo(HELPER_NAME[dst])
        clamp = [0 if math.isnan(v) else min(max(math.trunc(v), info.min), info.max) if math.isfinite(v)
                 else (info.max if v > 0 else info.min) for v in x.astype(np.float64)]
        return np.array(clamp, dtype=object)
    return wrap(exact_ints(x), HELPER_NAME[dst])


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


# --------------------------------------------------------------------------- #
# Memory: masks, other, bounds and alignment errors
# --------------------------------------------------------------------------- #



def masked_copy_kernel(t: str):
    """Loads ``x[i]`` where ``i < min(lim, n)`` (``other`` elsewhere) into ``out1[i < n]``, and
    stores the loaded values to ``out2`` only where ``i < lim`` too."""
    tile = f"tile<{BLOCK}x{t}>"
    return lambda other: kernel(
        f"%x: ptr<{t}>, %out1: ptr<{t}>, %out2: ptr<{t}>, %n: i32, %lim: i32",
        lanes() + pointer_to("x", t) + pointer_to("out1", t) + pointer_to("out2", t) + f"""
  %lt = splat %lim {{shape = ({BLOCK},)}} : tile<{BLOCK}xi32>
  %in = cmp %offs, %lt {{pred = "lt"}} : tile<{BLOCK}xi1>
  %o = constant {{value = {other}, type = {tile}}} : {tile}
  %both = and %in, %mask : tile<{BLOCK}xi1>
  %v = load %x_at, %both, %o : {tile}
  store %out1_at, %v, %mask
  store %out2_at, %v, %both""")


@pytest.mark.parametrize("t", ("i1", "i8", "u16", "i64", "f16", "bf16", "f64"))
@PROPERTY
@given(data=st.data(), n=sizes, limit=st.integers(0, 60), other=st.integers(-3, 3))
def test_masked_load_fills_other_and_never_touches_masked_off_lanes(t, data, n, limit, other):
    x = to_host(draw(data, t, n), t)
    out1, out2 = to_host(np.full(n, 1), t), to_host(np.full(n, 1), t)
    # `x` is cut at `limit`: a masked-off lane that was read would be out of bounds
    interpret(masked_copy_kernel(t)(other), (math.ceil(n / BLOCK),), [x[:limit], out1, out2, n, limit])
    inside = np.arange(n) < limit
    fill = ref_cast(np.array([other]), "i64", t)[0]
    assert_same(from_host(out1, t), np.where(inside, from_host(x, t), fill), t)
    assert_same(from_host(out2, t), np.where(inside, from_host(x, t), from_host(to_host(np.ones(n), t), t)), t)


def copy_kernel(t: str = "f32", offset: str = "%offs", prologue: str = ""):
    """``out[i] = x[offset(i)]`` for ``i < n``; the load carries a location."""
    tile = f"tile<{BLOCK}x{t}>"
    return kernel(f"%x: ptr<{t}>, %out: ptr<{t}>, %n: i32", lanes() + prologue + pointer_to("x", t, offs=offset)
                  + pointer_to("out", t) + f"""
  %v = load %x_at, %mask, _ : {tile} loc("kernel.py":7:8)
  store %out_at, %v, %mask loc("kernel.py":8:4)""")


def test_out_of_bounds_load_names_the_argument_offset_and_program():
    x, out = np.zeros(100, np.float32), np.zeros(160, np.float32)
    with pytest.raises(InterpreterError) as info:
        interpret(copy_kernel(), (10,), [x, out, 160])
    msg = str(info.value)
    assert msg.startswith("kernel.py:7: load out of bounds: `x` + 100 is past its 100 elements")
    assert "(masked-in lane of program 6)" in msg and "in kernel `k`" in msg


def test_out_of_bounds_below_and_unmasked_store():
    shift = "\n  %m5 = constant {value = 5, type = tile<16xi32>} : tile<16xi32>\n  %low = sub %offs, %m5 : tile<16xi32>"
    with pytest.raises(InterpreterError, match=r"load out of bounds: `x` \+ -5 is before its first element"):
        interpret(copy_kernel(offset="%low", prologue=shift), (1,), [np.zeros(16, np.float32), np.zeros(16, np.float32), 16])
    fn = kernel("%out: ptr<i16>", "\n  %c = constant {value = 3, type = i16} : i16\n"
                "  %i = constant {value = 7, type = i32} : i32\n  %p = addptr %out, %i : ptr<i16>\n"
                '  store %p, %c, _ loc("kernel.py":3:2)')
    with pytest.raises(InterpreterError, match=r"kernel.py:3: store out of bounds: `out` \+ 7 is past its 7 elements"):
        interpret(fn, (2,), [np.zeros(7, np.int16)])


def test_misaligned_pointer_is_reported_in_bytes():
    raw = np.zeros(80, np.uint8)
    x = raw[2:66].view(np.float32)  # numpy allows the view; its address is 2 bytes off
    with pytest.raises(InterpreterError, match=r"load misaligned: `x` \+ 0 bytes is not a multiple of 4 bytes"):
        interpret(copy_kernel(), (1,), [x, np.zeros(16, np.float32), 16])


@PROPERTY
@given(data=st.data(), n=sizes, step=st.integers(-3, 3).filter(bool), start=st.integers(0, 4))
def test_strided_and_offset_views_are_read_through_their_real_addresses(data, n, step, start):
    base = draw(data, "i32", 4 + 3 * n + 8)
    view = base[start::step] if step > 0 else base[start + 3 * n::step]
    view = view[:n]
    shift = f"\n  %st = constant {{value = {step}, type = tile<16xi32>}} : tile<16xi32>\n  %so = mul %offs, %st : tile<16xi32>"
    out = np.zeros(n, np.int32)
    fn = copy_kernel("i32", "%so", shift)
    # out[i] = x + i * step: pointer arithmetic in i32 elements from the view's first element,
    # whose span (below it for a negative step) is the view's lowest to highest element
    interpret(fn, (math.ceil(n / BLOCK),), [view, out, n])
    np.testing.assert_array_equal(out, view)


def test_pointer_argument_must_be_an_array_and_arity_is_checked():
    with pytest.raises(TypeError, match="argument `x` of kernel `k` is a ptr<f32> and needs a numpy array"):
        interpret(copy_kernel(), (1,), [3, np.zeros(4, np.float32), 4])
    with pytest.raises(TypeError, match="takes 3 arguments, got 2"):
        interpret(copy_kernel(), (1,), [np.zeros(4, np.float32), 4])


# --------------------------------------------------------------------------- #
# Divergence: if / for / while whose outcome differs across programs
# --------------------------------------------------------------------------- #

def per_program_kernel(body: str):
    """``out[pid] = body(pid, k)``: ``body`` defines the scalar i32 ``%r``."""
    return kernel("%out: ptr<i32>, %k: i32", f"""
  %pid = program_id {{axis = 0}} : i32
  %zero = constant {{value = 0, type = i32}} : i32
  %one = constant {{value = 1, type = i32}} : i32
  %two = constant {{value = 2, type = i32}} : i32
{body}
  %p = addptr %out, %pid : ptr<i32>
  store %p, %r, _""")


def run_per_program(body: str, programs: int, k: int) -> list:
    out = np.full(programs, -99, np.int32)
    interpret(per_program_kernel(body), (programs,), [out, k])
    return out.tolist()


IF_BODY = """
  %half = rem %pid, %two : i32
  %odd = cmp %half, %one {pred = "eq"} : i1
  %r = if %odd : i32 {
    %t = mul %pid, %k : i32
    yield [%t]
  } {
    %big = cmp %pid, %k {pred = "gt"} : i1
    %e = if %big : i32 {
      yield [%k]
    } {
      %neg = neg %pid : i32
      yield [%neg]
    }
    yield [%e]
  }"""


@FEW
@given(programs=st.integers(1, 40), k=st.integers(-5, 30))
def test_if_splits_the_batch_and_merges_results(programs, k):
    want = [p * k if p % 2 else (k if p > k else -p) for p in range(programs)]
    assert run_per_program(IF_BODY, programs, k) == want


FOR_BODY = """
  %r = for %pid, %k, %step, [%zero] : i32 {
  ^(%i: i32, %acc: i32):
    %sq = mul %i, %i : i32
    %next = add %acc, %sq : i32
    yield [%next]
  }"""


@FEW
@given(programs=st.integers(1, 40), k=st.integers(-10, 40), step=st.sampled_from([1, 2, 3, -1, -4]))
def test_for_with_trip_counts_that_differ_per_program(programs, k, step):
    body = f"\n  %step = constant {{value = {step}, type = i32}} : i32" + FOR_BODY
    want = [sum(i * i for i in range(p, k, step)) for p in range(programs)]
    assert run_per_program(body, programs, k) == want


def test_for_with_zero_step_is_an_error():
    body = "\n  %step = constant {value = 0, type = i32} : i32" + FOR_BODY
    with pytest.raises(InterpreterError, match="`for` loop step is 0"):
        run_per_program(body, 2, 5)


WHILE_BODY = """
  %start = add %pid, %k : i32
  %r, %steps = while [%start, %zero] : i32, i32 {
  ^(%x: i32, %s: i32):
    %more = cmp %x, %one {pred = "gt"} : i1
    condition %more, [%x, %s]
  } {
  ^(%x1: i32, %s1: i32):
    %h = rem %x1, %two : i32
    %odd = cmp %h, %one {pred = "eq"} : i1
    %tripled = mul %x1, %k3 : i32
    %up = add %tripled, %one : i32
    %down = div %x1, %two : i32
    %nx = select %odd, %up, %down : i32
    %ns = add %s1, %one : i32
    yield [%nx, %ns]
  }"""


def collatz_steps(x: int) -> tuple:
    steps = 0
    while x > 1:
        x, steps = (3 * x + 1 if x % 2 else x // 2), steps + 1
    return x, steps


@FEW
@given(programs=st.integers(1, 40), k=st.integers(-3, 30))
def test_while_runs_each_program_until_its_own_condition_fails(programs, k):
    body = "\n  %k3 = constant {value = 3, type = i32} : i32" + WHILE_BODY.replace("%r, %steps", "%last, %r")
    want = [collatz_steps(p + k)[1] for p in range(programs)]
    assert run_per_program(body, programs, k) == want


def test_grid_of_three_axes_and_num_programs():
    fn = kernel("%out: ptr<i32>", """
  %x = program_id {axis = 0} : i32
  %y = program_id {axis = 1} : i32
  %z = program_id {axis = 2} : i32
  %nx = num_programs {axis = 0} : i32
  %ny = num_programs {axis = 1} : i32
  %nz = num_programs {axis = 2} : i32
  %yz = mul %z, %ny : i32
  %row = add %yz, %y : i32
  %rx = mul %row, %nx : i32
  %lin = add %rx, %x : i32
  %s1 = mul %x, %nz : i32
  %v = add %lin, %s1 : i32
  %p = addptr %out, %lin : ptr<i32>
  store %p, %v, _""")
    out = np.zeros(3 * 4 * 5, np.int32)
    interpret(fn, (3, 4, 5), [out])
    lin = np.arange(60)
    np.testing.assert_array_equal(out, lin + (lin % 3) * 5)


# --------------------------------------------------------------------------- #
# Atomics: program order, repeated addresses, old values, locks
# --------------------------------------------------------------------------- #

def atomic_kernel(kind: str, t: str):
    """Every lane ``i < n`` does ``old[i] = atomic_<kind>(&acc[idx[i]], val[i])``."""
    tile = f"tile<{BLOCK}x{t}>"
    return kernel(f"%acc: ptr<{t}>, %idx: ptr<i32>, %val: ptr<{t}>, %old: ptr<{t}>, %n: i32",
                  lanes() + pointer_to("idx", "i32") + pointer_to("val", t) + pointer_to("old", t) + f"""
  %j = load %idx_at, %mask, _ : tile<{BLOCK}xi32>
  %v = load %val_at, %mask, _ : {tile}
  %acc_s = splat %acc {{shape = ({BLOCK},)}} : tile<{BLOCK}xptr<{t}>>
  %target = addptr %acc_s, %j : tile<{BLOCK}xptr<{t}>>
  %o = atomic_rmw %target, %v, %mask {{kind = "{kind}"}} : {tile}
  store %old_at, %o, %mask""")


ATOMIC_REFERENCES = {"add": lambda a, b: a + b, "max": max, "min": min, "and": lambda a, b: a & b,
                     "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "xchg": lambda a, b: b}


@pytest.mark.parametrize("t", ("i32", "u8", "i64", "f32", "f16", "bf16"))
@pytest.mark.parametrize("kind", sorted(ATOMIC_REFERENCES))
@FEW
@given(data=st.data(), n=sizes, slots=st.integers(1, 5))
def test_atomics_apply_lanes_in_program_order_and_return_old_values(t, kind, data, n, slots):
    if t in FLOATS and kind in ("and", "or", "xor"):
        return
    finite = dict(finite=True, lo=-100, hi=100) if t in FLOATS else {}
    start, vals = draw(data, t, slots, **finite), draw(data, t, n, **finite)
    idx = data.draw(st.lists(st.integers(0, slots - 1), min_size=n, max_size=n)).copy()
    memory, old = start.astype(object if t not in FLOATS else np.float64).tolist(), []
    for j, v in zip(idx, vals.astype(object if t not in FLOATS else np.float64).tolist()):
        old.append(memory[j])
        memory[j] = ATOMIC_REFERENCES[kind](memory[j], v)
        memory[j] = float(ref_round(memory[j], t)) if t in FLOATS else wrap([memory[j]], HELPER_NAME[t])[0]
    acc, got_old = to_host(start, t), to_host(np.zeros(n), t)
    interpret(atomic_kernel(kind, t), (math.ceil(n / BLOCK),), [acc, np.array(idx, np.int32), to_host(vals, t), got_old, n])
    assert_same(from_host(acc, t), np.array(memory, dtype=start.dtype), t)
    assert_same(from_host(got_old, t), np.array(old, dtype=start.dtype), t)


def test_atomic_add_without_used_result_takes_the_ufunc_path_and_counts():
    fn = kernel("%acc: ptr<i32>, %n: i32", lanes() + """
  %one = constant {value = 1, type = tile<16xi32>} : tile<16xi32>
  %acc_s = splat %acc {shape = (16,)} : tile<16xptr<i32>>
  %seven = constant {value = 7, type = tile<16xi32>} : tile<16xi32>
  %slot = rem %offs, %seven : tile<16xi32>
  %at = addptr %acc_s, %slot : tile<16xptr<i32>>
  %o = atomic_rmw %at, %one, %mask {kind = "add"} : tile<16xi32>""")
    acc = np.zeros(7, np.int32)
    interpret(fn, (7,), [acc, 100])
    np.testing.assert_array_equal(acc, np.bincount(np.arange(100) % 7))


def test_uniform_scalar_atomic_runs_once_per_program_in_order():
    fn = kernel("%counter: ptr<i32>, %olds: ptr<i32>", """
  %pid = program_id {axis = 0} : i32
  %one = constant {value = 1, type = i32} : i32
  %old = atomic_rmw %counter, %one, _ {kind = "add"} : i32
  %at = addptr %olds, %pid : ptr<i32>
  store %at, %old, _""")
    counter, olds = np.zeros(1, np.int32), np.full(37, -1, np.int32)
    interpret(fn, (37,), [counter, olds])
    assert counter[0] == 37 and olds.tolist() == list(range(37))


def test_spin_lock_with_atomic_cas_serializes_programs():
    """Each program takes a lock (cas 0 -> 1 in a while loop), does a non-atomic
    read-modify-write of a counter, and releases the lock with xchg."""
    fn = kernel("%lock: ptr<i32>, %counter: ptr<i32>", """
  %zero = constant {value = 0, type = i32} : i32
  %one = constant {value = 1, type = i32} : i32
  %pid = program_id {axis = 0} : i32
  %got = while [%one] : i32 {
  ^(%prev: i32):
    %busy = cmp %prev, %zero {pred = "ne"} : i1
    condition %busy, [%prev]
  } {
  ^(%p: i32):
    %old = atomic_cas %lock, %zero, %one : i32
    yield [%old]
  }
  %c = load %counter, _, _ : i32
  %c2 = add %c, %pid : i32
  store %counter, %c2, _
  %released = atomic_rmw %lock, %zero, _ {kind = "xchg"} : i32""")
    lock, counter = np.zeros(1, np.int32), np.zeros(1, np.int32)
    interpret(fn, (50,), [lock, counter])
    assert counter[0] == sum(range(50)) and lock[0] == 0


# --------------------------------------------------------------------------- #
# Reduce, scan, dot
# --------------------------------------------------------------------------- #

def tile_kernel(t: str, shape: tuple, body: str, out_t: str, out_shape: tuple):
    """Loads a row-major tile of ``shape`` from ``x`` (one per program), runs ``body``
    (defines ``%r`` of ``out_shape``, possibly ``()``) and stores it row-major to ``out``."""
    def index_tile(shp, name):
        numel, rank = math.prod(shp), len(shp)
        lines = f"\n  %{name}_lin = arange {{start = 0, end = {numel}}} : tile<{numel}xi32>"
        if rank != 1:
            dims = "x".join(map(str, shp))
            lines += f"\n  %{name}_idx = reshape %{name}_lin {{shape = {tuple(shp)}}} : tile<{dims}xi32>"
        return lines, (f"%{name}_idx" if rank != 1 else f"%{name}_lin")

    def ptrs(ptr, t, shp, name):
        if not shp:
            return f"\n  %{name}_at = addptr %{ptr}, %pid_base_{name} : ptr<{t}>", f"%{name}_at"
        lines, idx = index_tile(shp, name)
        dims = "x".join(map(str, shp))
        numel = math.prod(shp)
        return lines + f"""
  %{name}_b = splat %pid_base_{name} {{shape = {tuple(shp)}}} : tile<{dims}xi32>
  %{name}_i = add %{name}_b, {idx} : tile<{dims}xi32>
  %{name}_s = splat %{ptr} {{shape = {tuple(shp)}}} : tile<{dims}xptr<{t}>>
  %{name}_at = addptr %{name}_s, %{name}_i : tile<{dims}xptr<{t}>>""", f"%{name}_at"

    def ty(t, shp):
        return f"tile<{'x'.join(map(str, shp))}x{t}>" if shp else t

    text = "\n  %pid = program_id {axis = 0} : i32"
    for name, shp in (("in", shape), ("o", out_shape)):
        text += f"\n  %numel_{name} = constant {{value = {max(1, math.prod(shp))}, type = i32}} : i32"
        text += f"\n  %pid_base_{name} = mul %pid, %numel_{name} : i32"
    lines, pin = ptrs("x", t, shape, "in")
    text += lines + f"\n  %a = load {pin}, _, _ : {ty(t, shape)}\n"
    text += body.format(T=ty(t, shape), R=ty(out_t, out_shape))
    lines, pout = ptrs("out", out_t, out_shape, "o")
    text += lines + f"\n  store {pout}, %r, _"
    return kernel(f"%x: ptr<{t}>, %out: ptr<{out_t}>", text)


def run_tile(t, shape, body, out_t, out_shape, x):
    programs = x.shape[0]
    out = to_host(np.zeros((programs,) + out_shape), out_t)
    interpret(tile_kernel(t, shape, body, out_t, out_shape), (programs,), [to_host(x, t), out])
    return from_host(out, out_t)


def reduce_body(op: str, t: str, axis, attrs: str = "") -> str:
    return f"""  %r = reduce [%a] {{{{axis = {axis}}}}} : {{R}} {{{{
  ^(%u: {t}, %v: {t}):
    %w = {op} %u, %v{attrs} : {t}
    yield [%w]
  }}}}"""


def reduced_shape(shape, axis):
    return () if axis is None else shape[:axis] + shape[axis + 1:]


REDUCERS = {"add": np.add, "maximum": np.fmax, "minimum": np.fmin, "xor": np.bitwise_xor, "mul": np.multiply}
INT_REDUCERS = {"add": operator.add, "maximum": max, "minimum": min, "xor": operator.xor, "mul": operator.mul}


@pytest.mark.parametrize("t", ("i8", "i32", "u64", "f16", "bf16", "f32", "f64"))
@pytest.mark.parametrize("op", sorted(REDUCERS))
@FEW
@given(data=st.data(), programs=st.integers(1, 4), shape=st.sampled_from([(8,), (4, 8), (2, 4, 2)]),
       axis_pick=st.integers(0, 3))
def test_reduce_with_one_op_combiners(t, op, data, programs, shape, axis_pick):
    if op == "xor" and t in FLOATS:
        return
    axis = None if axis_pick >= len(shape) else axis_pick
    bound = 1.2 if op == "mul" else 4  # products of 32 values stay finite in f16
    small = dict(finite=True, lo=-bound, hi=bound) if t in FLOATS else {}
    x = draw(data, t, (programs,) + shape, **small)
    got = run_tile(t, shape, reduce_body(op, t, "none" if axis is None else axis), t, reduced_shape(shape, axis), x)
    if axis is None:
        x = x.reshape(programs, -1)
    np_axis = 1 if axis is None else axis + 1
    if t in FLOATS:  # small values: sums are exact in f64; the type rounds once per combination
        want = REDUCERS[op].reduce(x.astype(np.float64), axis=np_axis)
        tol = 0 if op in ("maximum", "minimum") else 2.0 ** -_FLOAT_FORMAT[t][0] * 16 * np.abs(want).max(initial=1)
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=tol * 8)
    else:
        want = np.frompyfunc(INT_REDUCERS[op], 2, 1).reduce(exact_ints(x), axis=np_axis)
        assert_same(got, wrap(np.ravel(want), HELPER_NAME[t]).reshape(got.shape), t)


ARGMAX_BODY = """  %i = arange {{start = 0, end = 16}} : tile<16xi32>
  %m, %r = reduce [%a, %i] {{axis = 0}} : $t, i32 {{
  ^(%va: $t, %ia: i32, %vb: $t, %ib: i32):
    %gt = cmp %va, %vb {{pred = "gt"}} : i1
    %eq = cmp %va, %vb {{pred = "eq"}} : i1
    %lower = cmp %ia, %ib {{pred = "lt"}} : i1
    %tie = and %eq, %lower : i1
    %keep = or %gt, %tie : i1
    %v = select %keep, %va, %vb : $t
    %iw = select %keep, %ia, %ib : i32
    yield [%v, %iw]
  }}"""


@pytest.mark.parametrize("t", ("i8", "f32", "bf16"))
@PROPERTY
@given(data=st.data(), programs=st.integers(1, 5))
def test_argmax_by_general_combiner_picks_the_first_maximum(t, data, programs):
    x = data.draw(values(HELPER_NAME[t], (programs, 16), lo=-3, hi=3))  # few values: many ties
    x = np.round(x).astype(x.dtype)
    got = run_tile(t, (16,), ARGMAX_BODY.replace("$t", t), "i32", (), x)
    np.testing.assert_array_equal(got, np.argmax(x, axis=1))


def scan_body(op: str, t: str, axis: int, reverse: bool) -> str:
    return f"""  %r = scan [%a] {{{{axis = {axis}, reverse = {str(reverse).lower()}}}}} : {{R}} {{{{
  ^(%u: {t}, %v: {t}):
    %w = {op} %u, %v : {t}
    yield [%w]
  }}}}"""


@pytest.mark.parametrize("t", ("i16", "u32", "bf16", "f32"))
@pytest.mark.parametrize("op", ("add", "maximum"))
@FEW
@given(data=st.data(), programs=st.integers(1, 3), axis=st.integers(0, 1), reverse=st.booleans())
def test_scan_inclusive_forward_and_reverse(t, op, data, programs, axis, reverse):
    shape = (4, 8)
    x = draw(data, t, (programs,) + shape, **(dict(finite=True, lo=-4, hi=4) if t in FLOATS else {}))
    got = run_tile(t, shape, scan_body(op, t, axis, reverse), t, shape, x)
    wide = x.astype(np.float64 if t in FLOATS else object)
    flipped = np.flip(wide, axis + 1) if reverse else wide
    want = (np.frompyfunc(INT_REDUCERS[op], 2, 1) if t not in FLOATS else REDUCERS[op]).accumulate(
        flipped, axis=axis + 1)
    want = np.flip(want, axis + 1) if reverse else want
    if t in FLOATS:
        np.testing.assert_allclose(got, want.astype(np.float64), atol=0.5 if t == "bf16" else 1e-4)
    else:
        assert_same(got, wrap(np.ravel(want), HELPER_NAME[t]).reshape(got.shape), t)


@pytest.mark.parametrize("t_in,t_acc,precision", [("f16", "f32", "ieee"), ("bf16", "f32", "ieee"),
                                                  ("f32", "f32", "tf32"), ("f32", "f32", "ieee"),
                                                  ("i8", "i32", "ieee"), ("f16", "f16", "ieee")])
@FEW
@given(data=st.data(), programs=st.integers(1, 3))
def test_dot_accumulates_in_the_accumulator_type(t_in, t_acc, precision, data, programs):
    m, k, n = 4, 8, 2
    small = dict(finite=True, lo=-8, hi=8) if t_in in FLOATS else {}
    a, b = draw(data, t_in, (programs, m, k), **small), draw(data, t_in, (programs, k, n), **small)
    acc = draw(data, t_acc, (programs, m, n), **small)
    fn = kernel(f"%a: ptr<{t_in}>, %b: ptr<{t_in}>, %c: ptr<{t_acc}>, %out: ptr<{t_acc}>", f"""
  %pid = program_id {{axis = 0}} : i32
{load_matrix("a", t_in, m, k)}{load_matrix("b", t_in, k, n)}{load_matrix("c", t_acc, m, n)}
  %r = dot %a_v, %b_v, %c_v {{input_precision = "{precision}"}} : tile<{m}x{n}x{t_acc}>
{matrix_pointers("out", t_acc, m, n)}
  store %out_at, %r, _""")
    out = to_host(np.zeros((programs, m, n)), t_acc)
    interpret(fn, (programs,), [to_host(a, t_in), to_host(b, t_in), to_host(acc, t_acc), out])
    if t_in not in FLOATS:
        want = (a.astype(np.int64) @ b.astype(np.int64) + acc).astype(np.int32)
        np.testing.assert_array_equal(out, want)
        return
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if precision == "tf32":
        a64, b64 = ref_round_bits(a64, 11), ref_round_bits(b64, 11)
    want = ref_round(a64 @ b64 + acc.astype(np.float64), t_acc)
    # accumulation order is unspecified: allow k roundings of the accumulator type
    scale = np.abs(a64) @ np.abs(b64) + np.abs(acc.astype(np.float64))
    bound = (k + 1) * 2.0 ** (1 - _FLOAT_FORMAT[t_acc][0]) * scale
    assert (np.abs(from_host(out, t_acc) - want) <= bound).all()


def ref_round_bits(x, bits: int) -> np.ndarray:
    """``x`` rounded to ``bits`` significant bits, nearest even (tf32 has 11)."""
    m, e = np.frexp(x)
    return np.ldexp(np.round(m * 2.0 ** bits) / 2.0 ** bits, e)


def matrix_pointers(ptr: str, t: str, rows: int, cols: int) -> str:
    """``%{ptr}_at``: pointers to program pid's row-major ``rows x cols`` matrix."""
    dims = f"{rows}x{cols}"
    return f"""  %{ptr}_numel = constant {{value = {rows * cols}, type = i32}} : i32
  %{ptr}_base = mul %pid, %{ptr}_numel : i32
  %{ptr}_lin = arange {{start = 0, end = {rows * cols}}} : tile<{rows * cols}xi32>
  %{ptr}_idx = reshape %{ptr}_lin {{shape = ({rows}, {cols})}} : tile<{dims}xi32>
  %{ptr}_b = splat %{ptr}_base {{shape = ({rows}, {cols})}} : tile<{dims}xi32>
  %{ptr}_i = add %{ptr}_b, %{ptr}_idx : tile<{dims}xi32>
  %{ptr}_s = splat %{ptr} {{shape = ({rows}, {cols})}} : tile<{dims}xptr<{t}>>
  %{ptr}_at = addptr %{ptr}_s, %{ptr}_i : tile<{dims}xptr<{t}>>"""


def load_matrix(ptr: str, t: str, rows: int, cols: int) -> str:
    return matrix_pointers(ptr, t, rows, cols) + f"\n  %{ptr}_v = load %{ptr}_at, _, _ : tile<{rows}x{cols}x{t}>\n"


def test_tf32_rounds_f32_inputs_to_ten_mantissa_bits():
    a = np.full((1, 4, 8), 1 + 2.0 ** -12, np.float32)  # not a tf32 value: rounds to 1.0
    b, c = np.full((1, 8, 2), 1.0, np.float32), np.zeros((1, 4, 2), np.float32)
    results = {}
    for precision in ("ieee", "tf32"):
        fn = kernel("%a: ptr<f32>, %b: ptr<f32>, %c: ptr<f32>, %out: ptr<f32>", f"""
  %pid = program_id {{axis = 0}} : i32
{load_matrix("a", "f32", 4, 8)}{load_matrix("b", "f32", 8, 2)}{load_matrix("c", "f32", 4, 2)}
  %r = dot %a_v, %b_v, %c_v {{input_precision = "{precision}"}} : tile<4x2xf32>
{matrix_pointers("out", "f32", 4, 2)}
  store %out_at, %r, _""")
        results[precision] = np.zeros((1, 4, 2), np.float32)
        interpret(fn, (1,), [a, b, c, results[precision]])
    assert (results["ieee"] == np.float32(8 * (1 + 2.0 ** -12))).all() and (results["tf32"] == 8).all()


# --------------------------------------------------------------------------- #
# Shape ops
# --------------------------------------------------------------------------- #

SHAPE_BODIES = {
    "permute": ("  %r = permute %a {{order = (1, 0)}} : {R}", (8, 4), lambda x: x.transpose(0, 2, 1)),
    "expand_broadcast": ("""  %s = reduce [%a] {{axis = 1}} : tile<4xi32> {{
  ^(%u: i32, %v: i32):
    %w = add %u, %v : i32
    yield [%w]
  }}
  %e = expand_dims %s {{axis = 1}} : tile<4x1xi32>
  %r = broadcast %e {{shape = (4, 8)}} : {R}""", (4, 8), lambda x: np.repeat(x.sum(2, keepdims=True), 8, 2)),
    "join_split": ("""  %lo, %hi = split %j : tile<4x8xi32>, tile<4x8xi32>
  %r = sub %hi, %lo : {R}""", (4, 8), lambda x: x * 2 - x),
    "reshape": ("  %r = reshape %a {{shape = (2, 16)}} : {R}", (2, 16), lambda x: x.reshape(-1, 2, 16)),
}


@pytest.mark.parametrize("name", sorted(SHAPE_BODIES))
@FEW
@given(data=st.data(), programs=st.integers(1, 3))
def test_shape_ops_match_numpy(name, data, programs):
    body, out_shape, ref = SHAPE_BODIES[name]
    if name == "join_split":  # join x with 2x, then split it back
        body = "  %two = constant {{value = 2, type = {T}}} : {T}\n  %x2 = mul %a, %two : {T}\n" \
               "  %j = join %a, %x2 : tile<4x8x2xi32>\n" + body
    x = data.draw(values("int32", (programs, 4, 8), lo=-1000, hi=1000))
    np.testing.assert_array_equal(run_tile("i32", (4, 8), body, "i32", out_shape, x), ref(x))


# --------------------------------------------------------------------------- #
# Print, assert, barrier, assume, evaluate_pure
# --------------------------------------------------------------------------- #

def test_print_shows_each_program_and_its_values(capsys):
    fn = kernel("%n: i32", """
  %pid = program_id {axis = 0} : i32
  %v = mul %pid, %n : i32
  %t = arange {start = 0, end = 4} : tile<4xi32>
  barrier
  print [%v, %t] {prefix = "v ="}""")
    interpret(fn, (2,), [10])
    assert capsys.readouterr().out == "pid (0, 0, 0) v =: 0 [0 1 2 3]\npid (1, 0, 0) v =: 10 [0 1 2 3]\n"


def test_failed_assert_names_the_first_program_and_index():
    fn = kernel("%n: i32", """
  %pid = program_id {axis = 0} : i32
  %t = arange {start = 0, end = 8} : tile<8xi32>
  %p = splat %pid {shape = (8,)} : tile<8xi32>
  %s = add %t, %p : tile<8xi32>
  %nt = splat %n {shape = (8,)} : tile<8xi32>
  %ok = cmp %s, %nt {pred = "lt"} : tile<8xi1>
  assert %ok {msg = "s < n"} loc("kernel.py":12:4)""")
    interpret(fn, (3,), [10])
    with pytest.raises(InterpreterError, match=r"kernel.py:12: device_assert failed: s < n \(program 3, index \(7,\)\)"):
        interpret(fn, (4,), [10])


def test_assume_is_the_identity():
    body = '  %r = assume %a0 {{kind = "multiple_of", values = (16,)}} : {R}'
    x = np.arange(40, dtype=np.int32) * 16
    np.testing.assert_array_equal(run_elementwise(["i32"], "i32", body, [x]), x)


def test_evaluate_pure_agrees_with_the_interpreter_on_one_op():
    fn = kernel("%a: i8, %b: i8", "\n  %q = div %a, %b : i8\n  %h = cast %q {to = bf16} : bf16")
    div, cast_op = fn.body.ops
    (q,) = evaluate_pure(div, [np.int8(-128), np.int8(-1)])
    assert q.dtype == np.int8 and int(q) == -128
    (h,) = evaluate_pure(cast_op, [np.int8(-7)])
    assert float(h) == -7.0
    (h,) = evaluate_pure(ir.Cast(src=ir.Value(SCALAR_TYPES["f32"]), to=SCALAR_TYPES["bf16"]).make_results(),
                         [np.float32(1 + 2 ** -8)])
    assert float(h) == 1.0


def test_broken_scalar_multiple_of_promise_is_reported():
    fn = kernel("%out: ptr<i32>, %k: i32", """
  %pid = program_id {axis = 0} : i32
  %v = mul %pid, %k : i32
  %h = assume %v {kind = "multiple_of", values = (4,)} : i32 loc("kernel.py":5:4)
  %p = addptr %out, %pid : ptr<i32>
  store %p, %h, _""")
    out = np.zeros(5, np.int32)
    interpret(fn, (5,), [out, 8])
    np.testing.assert_array_equal(out, np.arange(5) * 8)
    with pytest.raises(InterpreterError, match=r"kernel.py:5: multiple_of\(4\) promise broken: the value is 6 \(program 1\)"):
        interpret(fn, (5,), [out, 6])


# --------------------------------------------------------------------------- #
# Row pointers: a per-program base plus column offsets (softmax-style)
# --------------------------------------------------------------------------- #

ROW_COPY = """
  %pid = program_id {axis = 0} : i32
  %start = mul %pid, %stride : i32
  %row = addptr %x, %start : ptr<f32>
  %cols = arange {start = 0, end = 16} : tile<16xi32>
  %nt = splat %n {shape = (16,)} : tile<16xi32>
  %mask = cmp %cols, %nt {pred = "lt"} : tile<16xi1>
  %rows = splat %row {shape = (16,)} : tile<16xptr<f32>>
  %at = addptr %rows, %cols : tile<16xptr<f32>>
  %v = load %at, %mask, _ : tile<16xf32> loc("kernel.py":9:4)
  %ostart = mul %pid, %n : i32
  %orow = addptr %out, %ostart : ptr<f32>
  %orows = splat %orow {shape = (16,)} : tile<16xptr<f32>>
  %oat = addptr %orows, %cols : tile<16xptr<f32>>
  store %oat, %v, %mask"""


@PROPERTY
@given(data=st.data(), rows=st.integers(1, 20), cols=st.integers(1, 16), pad=st.integers(0, 5))
def test_rows_through_per_program_base_pointers(data, rows, cols, pad):
    x = draw(data, "f32", (rows, cols + pad))
    out = np.zeros((rows, cols), np.float32)
    fn = kernel("%x: ptr<f32>, %out: ptr<f32>, %stride: i32, %n: i32", ROW_COPY)
    interpret(fn, (rows,), [x, out, cols + pad, cols])
    assert_same(out, x[:, :cols], "f32")
    with pytest.raises(InterpreterError, match=rf"load out of bounds: `x` \+ {rows * (cols + pad)} is past its "
                       rf"{rows * (cols + pad)} elements \(masked-in lane of program {rows}\)"):
        interpret(fn, (rows + 1,), [x, np.zeros((rows + 1, cols), np.float32), cols + pad, cols])


def test_uniform_masked_load_with_a_per_program_other():
    fn = kernel("%x: ptr<i32>, %out: ptr<i32>", """
  %pid = program_id {axis = 0} : i32
  %cols = arange {start = 0, end = 8} : tile<8xi32>
  %three = constant {value = 3, type = tile<8xi32>} : tile<8xi32>
  %mask = cmp %cols, %three {pred = "lt"} : tile<8xi1>
  %xs = splat %x {shape = (8,)} : tile<8xptr<i32>>
  %at = addptr %xs, %cols : tile<8xptr<i32>>
  %other = splat %pid {shape = (8,)} : tile<8xi32>
  %v = load %at, %mask, %other : tile<8xi32>
  %eight = constant {value = 8, type = i32} : i32
  %start = mul %pid, %eight : i32
  %row = addptr %out, %start : ptr<i32>
  %rows = splat %row {shape = (8,)} : tile<8xptr<i32>>
  %oat = addptr %rows, %cols : tile<8xptr<i32>>
  store %oat, %v, _""")
    x, out = np.array([7, 8, 9], np.int32), np.zeros((4, 8), np.int32)
    interpret(fn, (4,), [x, out])
    np.testing.assert_array_equal(out, [[7, 8, 9] + [p] * 5 for p in range(4)])
