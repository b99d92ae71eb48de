"""The reference interpreter against plain numpy (and exact Python arithmetic).

Kernels are written in the IR text form.  Most tests run a 1-D elementwise
kernel over ``n`` ragged elements in blocks of 16, so every case has several
programs in one batch and a partly masked last block.
"""
from __future__ import annotations

import functools
import math

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

PROPERTY = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
FEW = settings(PROPERTY, max_examples=8)
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


@functools.lru_cache(maxsize=None)
def elementwise_kernel(ins: tuple, out: str, body: str, block: int = BLOCK):
    """``out[i] = body(a0[i], a1[i], ...)`` for ``i < n``; ``body`` defines ``%r`` and may
    use ``{B}`` (block), ``{T}`` (first input's tile type) and ``{R}`` (the result's)."""
    args = ", ".join(f"%p{i}: ptr<{t}>" for i, t in enumerate(ins))
    text = lanes(block)
    for i, t in enumerate(ins):
        text += pointer_to(f"p{i}", t, block) + f"\n  %a{i} = load %p{i}_at, %mask, _ : tile<{block}x{t}>"
    text += "\n" + body.format(B=block, T=f"tile<{block}x{ins[0]}>", R=f"tile<{block}x{out}>")
    text += pointer_to("pout", out, block) + "\n  store %pout_at, %r, %mask"
    return parse_function(f"func @k({args}, %pout: ptr<{out}>, %n: i32) {{{text}\n}}\n")


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
        atol = 2e-15 if name == "erf" else 0.0  # our erf is a float64 approximation, ~1e-15
        close = (got == want) | (np.abs(got - want) <= 2 * spacing + atol)
    assert (close | np.isnan(want)).all(), (x[~close], got[~close], want[~close])


@pytest.mark.parametrize("t", ("f16", "bf16", "f32"))
@PROPERTY
@given(data=st.data(), n=sizes)
def test_fma_rounds_once(t, data, n):
    a, b, c = (draw(data, t, n, finite=True, lo=-1e4, hi=1e4) for _ in range(3))
    from fractions import Fraction
    exact = [Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r)) for p, q, r in zip(a, b, c)]
    approx = np.array([float(e) for e in exact])  # nearest double; exact where it matters below
    want = ref_round(approx, t)
    got = run_elementwise([t, t, t], t, "  %r = fma %a0, %a1, %a2 : {R}", [a, b, c])
    assert_same(got, want, t)


def test_erf_is_accurate_in_f64():
    x = np.linspace(-7, 7, 4001)
    got = run_elementwise(["f64"], "f64", "  %r = erf %a0 : {R}", [x])
    np.testing.assert_allclose(got, [math.erf(v) for v in x], rtol=0, atol=3e-15)


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
        wide = x.astype(np.float64) if src in FLOATS else np.array([float(int(v)) for v in x])
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

def kernel(args: str, body: str, name: str = "k"):
    return parse_function(f"func @{name}({args}) {{{body}\n}}\n")


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
