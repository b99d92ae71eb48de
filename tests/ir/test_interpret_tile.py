"""Tile ops in the reference interpreter: reduce, scan, dot and shape ops.

Kernels are written in the IR text form; the shared builders are in
``interp_kernels.py``.
"""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import values
from tilec.ir.interpret import interpret

from ir.interp_kernels import (
    _FLOAT_FORMAT, assert_same, draw, exact_ints, FEW, FLOATS, from_host, HELPER_NAME, kernel, PROPERTY,
    ref_round, to_host, wrap,
)


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
    # accumulation order is unspecified: allow k roundings of the accumulator type,
    # each off by a relative ulp or, among subnormals, by the smallest subnormal
    scale = np.abs(a64) @ np.abs(b64) + np.abs(acc.astype(np.float64))
    digits, min_exp, _ = _FLOAT_FORMAT[t_acc]
    bound = (k + 1) * (2.0 ** (1 - digits) * scale + 2.0 ** (min_exp - digits))
    assert (np.abs(from_host(out, t_acc) - want) <= bound).all()


def ref_round_bits(x, bits: int) -> np.ndarray:
    """``x`` rounded to ``bits`` significant bits, nearest even (tf32 has 11),
    with f32's exponent range: below its smallest normal (frexp exponent
    -125) the spacing stays that of the smallest normals, as tf32's does."""
    _, e = np.frexp(x)
    e = np.maximum(e, -125)
    return np.ldexp(np.round(np.ldexp(x, bits - e)), e - bits)


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
