"""The fp8 dtypes (``tl.float8e4nv``, ``float8e5``, ``float8e4b15``,
``float8e4b8``, ``float8e5b16``) against a reference written here from the
formats' definitions (not from ``tilec.ir.fp8``): every one of the 256
patterns decodes exactly; conversions from float16/bfloat16/float32/float64
round once (to nearest even, or toward zero) and saturate, for every kind of
value (subnormals, NaN, infinities, overflow, negative zero); bitcasts,
``abs``, ``where``, ``full``, shape ops and ``dot`` keep their meaning.

Kernels hold fp8 data as ``uint8`` arrays (numpy has no fp8) and bitcast
them.  Every kernel here also compiles for sm_80 and sm_90 (the suite's
compile check), and with ``TILEC_TEST_DEVICE=cuda`` runs on the GPU against
the interpreter; the compiled CPU backend runs the same integer lowering
here, bit for bit against the interpreter.  tests/gpu/test_fp8_vs_triton.py
compares with Triton 3.6 on the H100.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
from tilec.errors import CompilationError
from tilec.targets import registry

# name -> (dtype, exponent bits, mantissa bits, bias, family): "ieee" has
# infinities, "fn" only the all-ones NaN, "fnuz" one NaN (0x80) and no -0.
FORMATS = {
    "fp8e4nv": (tl.float8e4nv, 4, 3, 7, "fn"),
    "fp8e5": (tl.float8e5, 5, 2, 15, "ieee"),
    "fp8e4b15": (tl.float8e4b15, 4, 3, 15, "fn"),
    "fp8e4b8": (tl.float8e4b8, 4, 3, 8, "fnuz"),
    "fp8e5b16": (tl.float8e5b16, 5, 2, 16, "fnuz"),
}
NAMES = list(FORMATS)
BLOCK = 256
CPU_BLOCK = 16  # the compiled CPU backend's straight-line code stays small
PATTERNS = np.arange(256, dtype=np.uint8)


# --------------------------------------------------------------------------- #
# The reference, from the definitions
# --------------------------------------------------------------------------- #

def ref_decode(name: str) -> np.ndarray:
    """The float64 value of each of the 256 patterns."""
    _, e_bits, m_bits, bias, family = FORMATS[name]
    out = np.empty(256)
    for b in range(256):
        sign, exponent, mantissa = b >> 7, (b >> m_bits) & ((1 << e_bits) - 1), b & ((1 << m_bits) - 1)
        if exponent == 0:
            value = mantissa * 2.0 ** (1 - bias - m_bits)
        else:
            value = (1 + mantissa / 2 ** m_bits) * 2.0 ** (exponent - bias)
        all_ones = exponent == (1 << e_bits) - 1
        if family == "ieee" and all_ones:
            value = np.inf if mantissa == 0 else np.nan
        elif family == "fn" and all_ones and mantissa == (1 << m_bits) - 1:
            value = np.nan
        elif family == "fnuz" and b == 0x80:
            value = np.nan
        out[b] = -value if sign else value
    return out


def ref_encode(name: str, x: np.ndarray, rounding: str) -> np.ndarray:
    """The pattern each float64 ``x`` converts to: the nearest value (ties to
    the even pattern) or the one toward zero; past the largest finite value
    that one; infinity too, except rtz keeps fp8e5's; NaN the positive
    canonical NaN; -0 for a negative rounded to zero (0 without a -0)."""
    family = FORMATS[name][4]
    values = ref_decode(name)[:128]
    finite = np.flatnonzero(np.isfinite(values))  # patterns 0.. of non-negative finite values, increasing
    grid = values[finite]
    v = np.asarray(x, np.float64)
    a = np.abs(v)
    j = np.clip(np.searchsorted(grid, a, side="right") - 1, 0, grid.size - 2)  # grid[j] <= a < grid[j + 1]
    below, above = a - grid[j], grid[j + 1] - a
    up = (above < below) | ((above == below) & (finite[j] % 2 == 1)) if rounding == "rtne" else False
    k = np.where(up, finite[np.minimum(j + 1, finite.size - 1)], finite[j])
    k = np.where(a >= grid[-1], finite[-1], k)
    if family == "ieee" and rounding == "rtz":
        k = np.where(np.isinf(a), 0x7C, k)
    negative = np.signbit(v) & ~((family == "fnuz") & (k == 0))
    out = (k | np.where(negative, 0x80, 0)).astype(np.uint8)
    return np.where(np.isnan(v), np.uint8(0x80 if family == "fnuz" else 0x7F), out)


def same_floats(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bit for bit (signed zeros included), a NaN only a NaN."""
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    unsigned = f"u{want.dtype.itemsize}"
    np.testing.assert_array_equal(got[~nan].view(unsigned), want[~nan].view(unsigned))


# --------------------------------------------------------------------------- #
# Kernels
# --------------------------------------------------------------------------- #

@tilec.jit
def decode_kernel(x_ptr, z_ptr, FP8: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(FP8, bitcast=True)
    tl.store(z_ptr + offs, x.to(z_ptr.dtype.element_ty))


@tilec.jit
def encode_kernel(x_ptr, z_ptr, n, FP8: tl.constexpr, ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(z_ptr + offs, x.to(FP8, fp_downcast_rounding=ROUNDING).to(tl.uint8, bitcast=True), mask=mask)


def decode(name: str, out_dtype) -> np.ndarray:
    z = np.zeros(256, out_dtype)
    decode_kernel[(1,)](PATTERNS, z, FP8=FORMATS[name][0], BLOCK=BLOCK)
    return z


def encode(name: str, x: np.ndarray, rounding: str) -> np.ndarray:
    z = np.zeros(x.size, np.uint8)
    encode_kernel[(max(1, -(-x.size // BLOCK)),)](x, z, x.size, FP8=FORMATS[name][0], ROUNDING=rounding,
                                                   BLOCK=BLOCK)
    return z


# --------------------------------------------------------------------------- #
# dtypes
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes_are_tritons(name):
    d, e_bits, m_bits, bias, _ = FORMATS[name]
    assert (d.name, d.primitive_bitwidth, d.fp_mantissa_width, d.exponent_bias, d.itemsize) == (
        name, 8, m_bits, bias, 1)
    assert repr(d) == f"tl.float8{name[3:]}" and d.codegen_name() == f"float8{name[3:]}"
    assert d.is_fp8() and d.is_floating() and not d.is_standard_floating() and not d.is_fp16()
    assert [n for n in NAMES if getattr(d, f"is_{n}")()] == [name]
    assert tl.dtype(name) == d and name in tl.dtype.FP_TYPES
    assert tl.dtype.FP_TYPES[:5] == ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16"]  # Triton's order


@pytest.mark.parametrize("name", NAMES)
def test_ir_text_round_trips(name):
    from tilec.ir.parser import parse_module
    from tilec.ir.printer import print_module
    text = decode_kernel.compile(PATTERNS, np.zeros(256, np.float32), FP8=FORMATS[name][0], BLOCK=BLOCK).asm["tir"]
    assert f"f8{name[3:]}" in text and print_module(parse_module(text)) == text


# --------------------------------------------------------------------------- #
# Conversions
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("out_dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("name", NAMES)
def test_every_pattern_decodes_exactly(name, out_dtype):
    same_floats(decode(name, out_dtype), ref_decode(name).astype(out_dtype))


EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e30, -1e30, 65504.0, 448.0, 464.0, 480.0,
                  57344.0, 61439.0, 61440.0, 240.0, 248.0, 1.75, 1.8125, 1.875, 2.0 ** -9, 2.0 ** -10,
                  3 * 2.0 ** -11, 2.0 ** -16, 2.0 ** -17, 3 * 2.0 ** -18, 2.0 ** -18, 1e-30, -1e-30, 1e-45])


@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
@pytest.mark.parametrize("name", NAMES)
def test_every_float16_converts(name, rounding):
    """All 65,536 float16 patterns (every fp8 value, every tie, every overflow)."""
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    np.testing.assert_array_equal(encode(name, x, rounding), ref_encode(name, x.astype(np.float64), rounding))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
@pytest.mark.parametrize("name", NAMES)
def test_edge_values_convert(name, rounding, dtype):
    x = np.concatenate([EDGES, -EDGES]).astype(dtype)
    np.testing.assert_array_equal(encode(name, x, rounding), ref_encode(name, x.astype(np.float64), rounding))


@given(st.sampled_from(NAMES), st.sampled_from(["rtne", "rtz"]),
       st.lists(st.floats(width=32, allow_subnormal=True), min_size=1, max_size=64),
       st.integers(-40, 20))
def test_float32_converts(name, rounding, values, scale):
    """Random float32 values, scaled to land anywhere in and around the format's range."""
    with np.errstate(over="ignore"):
        x = (np.array(values, np.float32) * np.float32(2.0 ** scale)).astype(np.float32)
    np.testing.assert_array_equal(encode(name, x, rounding), ref_encode(name, x.astype(np.float64), rounding))


@given(st.sampled_from(NAMES), st.lists(st.floats(allow_subnormal=True), min_size=1, max_size=32),
       st.integers(-40, 20))
def test_float64_converts_with_one_rounding(name, values, scale):
    with np.errstate(over="ignore"):
        x = np.array(values, np.float64) * 2.0 ** scale
    np.testing.assert_array_equal(encode(name, x, "rtne"), ref_encode(name, x, "rtne"))


@tilec.jit
def bfloat16_kernel(x_ptr, z_ptr, FP8: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.bfloat16, bitcast=True)
    tl.store(z_ptr + offs, x.to(FP8).to(tl.uint8, bitcast=True))


@pytest.mark.parametrize("name", NAMES)
def test_every_bfloat16_converts(name):
    bits = np.arange(1 << 16, dtype=np.uint16)
    z = np.zeros(bits.size, np.uint8)
    bfloat16_kernel[(bits.size // BLOCK,)](bits, z, FP8=FORMATS[name][0], BLOCK=BLOCK)
    values = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)  # NaNs stay NaN
    np.testing.assert_array_equal(z, ref_encode(name, values, "rtne"))


@tilec.jit
def fp8_to_fp8_kernel(x_ptr, z_ptr, SRC: tl.constexpr, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(SRC, bitcast=True)
    tl.store(z_ptr + offs, x.to(DST).to(tl.uint8, bitcast=True))


@pytest.mark.parametrize("src", NAMES)
@pytest.mark.parametrize("dst", NAMES)
def test_fp8_to_fp8_rounds_once(src, dst):
    z = np.zeros(256, np.uint8)
    fp8_to_fp8_kernel[(1,)](PATTERNS, z, SRC=FORMATS[src][0], DST=FORMATS[dst][0], BLOCK=BLOCK)
    want = PATTERNS if src == dst else ref_encode(dst, ref_decode(src), "rtne")
    np.testing.assert_array_equal(z, want)


def run_on_cpu(kernel, programs: int, *args, **meta) -> None:
    """Compile ``kernel`` for the CPU backend and run it over ``programs`` programs."""
    host = registry.backend("host")
    compiled = kernel.compile(*args, target="cpu", **meta)
    host.launcher().launch(compiled, (programs, 1, 1), kernel.plan(args, meta).args, None)


@pytest.mark.parametrize("name", NAMES)
def test_compiled_lowering_is_the_interpreters_bit_for_bit(name):
    """The generic LLVM rule (NVIDIA's too) run by the CPU backend, every conversion."""
    rng = np.random.default_rng(0)
    x32 = np.concatenate([rng.integers(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32).view(np.float32),
                          np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32),
                          EDGES.astype(np.float32), -EDGES.astype(np.float32)])
    x32 = np.resize(x32, -(-x32.size // CPU_BLOCK) * CPU_BLOCK)
    for x in (x32, x32.astype(np.float64)):  # NaNs stay NaN
        for rounding in ("rtne", "rtz"):
            z = np.zeros(x.size, np.uint8)
            run_on_cpu(encode_kernel, x.size // CPU_BLOCK, x, z, x.size, FP8=FORMATS[name][0], ROUNDING=rounding,
                       BLOCK=CPU_BLOCK)
            np.testing.assert_array_equal(z, encode(name, x, rounding), err_msg=rounding)
    z = np.zeros(256, np.float32)
    run_on_cpu(decode_kernel, 1, PATTERNS, z, FP8=FORMATS[name][0], BLOCK=BLOCK)
    np.testing.assert_array_equal(z.view(np.uint32), decode(name, np.float32).view(np.uint32))


# --------------------------------------------------------------------------- #
# Bits, abs, where, full, shapes, arithmetic, dot
# --------------------------------------------------------------------------- #

@tilec.jit
def moves_kernel(x_ptr, z_ptr, FP8: tl.constexpr):
    """Bits through where, reshape, trans and permute, back to uint8: all unchanged."""
    r = tl.arange(0, 16)
    x = tl.load(x_ptr + r[:, None] * 16 + r[None, :]).to(FP8, bitcast=True)
    y = tl.where(r[:, None] >= 0, x, tl.zeros((16, 16), FP8))
    y = tl.permute(tl.reshape(tl.trans(y), (16, 4, 4)), (0, 2, 1))
    y = tl.trans(tl.reshape(tl.permute(y, (0, 2, 1)), (16, 16)))
    tl.store(z_ptr + r[:, None] * 16 + r[None, :], y.to(tl.uint8, bitcast=True))


@pytest.mark.parametrize("name", NAMES)
def test_every_pattern_moves_unchanged(name):
    z = np.zeros(256, np.uint8)
    moves_kernel[(1,)](PATTERNS, z, FP8=FORMATS[name][0])
    np.testing.assert_array_equal(z, PATTERNS)


@tilec.jit
def abs_kernel(x_ptr, z_ptr, FP8: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(FP8, bitcast=True)
    tl.store(z_ptr + offs, tl.abs(x).to(tl.uint8, bitcast=True))


@pytest.mark.parametrize("name", NAMES)
def test_abs_clears_the_sign_bit(name):
    z = np.zeros(256, np.uint8)
    abs_kernel[(1,)](PATTERNS, z, FP8=FORMATS[name][0], BLOCK=BLOCK)
    want = PATTERNS & 0x7F
    if FORMATS[name][4] == "fnuz":
        want[0x80] = 0x80  # its NaN stays NaN
    np.testing.assert_array_equal(z, want)


@tilec.jit
def full_kernel(z_ptr, VALUE: tl.constexpr, FP8: tl.constexpr):
    r = tl.arange(0, 4)
    full = tl.full((4,), VALUE, FP8)
    tl.store(z_ptr + r, tl.where(r == 0, tl.zeros((4,), FP8), full).to(tl.uint8, bitcast=True))


@pytest.mark.parametrize("value", [1.0, -2.5, 0.1, 1e6, float("nan"), -float("inf")])
@pytest.mark.parametrize("name", NAMES)
def test_full_and_zeros(name, value):
    z = np.zeros(4, np.uint8)
    full_kernel[(1,)](z, VALUE=value, FP8=FORMATS[name][0])
    np.testing.assert_array_equal(z, [0] + [ref_encode(name, np.array([value]), "rtne")[0]] * 3)


@tilec.jit
def arith_kernel(x_ptr, y_ptr, z_ptr, FP8: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(FP8, bitcast=True)
    y = tl.load(y_ptr + offs).to(FP8, bitcast=True)
    s = x * y + x
    tl.static_assert(s.dtype == FP8)  # Triton's typing: fp8 op fp8 is that fp8
    tl.store(z_ptr + offs, s.to(tl.uint8, bitcast=True))


@pytest.mark.parametrize("name", NAMES)
def test_arithmetic_rounds_each_op_once(name):
    """fp8 ops compute in float32 and round back (products of fp8 values are exact there)."""
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 256, 256, dtype=np.uint8), rng.integers(0, 256, 256, dtype=np.uint8)
    z = np.zeros(256, np.uint8)
    arith_kernel[(1,)](x, y, z, FP8=FORMATS[name][0], BLOCK=BLOCK)
    values = ref_decode(name)
    product = ref_decode(name)[ref_encode(name, (values[x] * values[y]).astype(np.float32), "rtne")]
    want = ref_encode(name, (product + values[x]).astype(np.float32), "rtne")
    np.testing.assert_array_equal(z, want)


@tilec.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, A: tl.constexpr, B: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :]).to(A, bitcast=True)
    b = tl.load(b_ptr + r[:, None] * N + r[None, :]).to(B, bitcast=True)
    c = tl.dot(a, b)
    tl.static_assert(c.dtype == tl.float32)
    tl.store(c_ptr + r[:, None] * N + r[None, :], c)


@pytest.mark.parametrize("a_name, b_name", [("fp8e4nv", "fp8e4nv"), ("fp8e5", "fp8e5"), ("fp8e4nv", "fp8e5"),
                                            ("fp8e4b15", "fp8e4b15"), ("fp8e4b8", "fp8e5b16")])
def test_dot_accumulates_in_float32(a_name, b_name):
    rng = np.random.default_rng(2)
    finite_a = np.flatnonzero(np.isfinite(ref_decode(a_name))).astype(np.uint8)
    finite_b = np.flatnonzero(np.isfinite(ref_decode(b_name))).astype(np.uint8)
    a, b = rng.choice(finite_a, (32, 32)), rng.choice(finite_b, (32, 32))
    c = np.zeros((32, 32), np.float32)
    dot_kernel[(1,)](a, b, c, A=FORMATS[a_name][0], B=FORMATS[b_name][0], N=32)
    values_a, values_b = ref_decode(a_name)[a], ref_decode(b_name)[b]
    want = values_a @ values_b
    # exact products summed in f32 -- or, on NVIDIA's fp8 tensor cores (the
    # GPU mirror), in a float of 13 mantissa bits that truncates
    magnitude = np.abs(values_a) @ np.abs(values_b)
    np.testing.assert_array_less(np.abs(c - want), 32 * 2.0 ** -13 * magnitude + 1e-30)


@tilec.jit
def promoted_dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr, IMPRECISE: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :]).to(tl.float8e4nv, bitcast=True)
    b = tl.load(b_ptr + r[:, None] * N + r[None, :]).to(tl.float8e4nv, bitcast=True)
    c_ptrs = c_ptr + r[:, None] * N + r[None, :]
    tl.store(c_ptrs, tl.dot(a, b, tl.load(c_ptrs), max_num_imprecise_acc=IMPRECISE))


@pytest.mark.parametrize("imprecise", [None, 32, 1 << 30])
def test_max_num_imprecise_acc_adds_each_product_to_acc_in_full_precision(imprecise):
    """With it, an fp8 dot's product goes into zeros and is added to acc in
    f32: 2^20 + 1 is exact, where a 22-bit accumulator (NVIDIA's fp8 tensor
    cores, accumulating into acc without it) keeps 2^20."""
    a = np.zeros((32, 32), np.uint8)
    a[0, 0] = 0x38  # 1.0 in e4m3: the product is 1.0 at [0, 0], zero elsewhere
    c = np.full((32, 32), 2.0 ** 20, np.float32)
    text = promoted_dot_kernel.compile(a, a, c, N=32, IMPRECISE=imprecise).asm["tir"]
    assert ("add %" in text.split("dot %", 1)[1]) == (imprecise is not None), text
    promoted_dot_kernel[(1,)](a, a, c, N=32, IMPRECISE=imprecise)
    assert c[0, 0] == 2.0 ** 20 + 1 or (imprecise is None and c[0, 0] == 2.0 ** 20)
    assert (c.ravel()[1:] == 2.0 ** 20).all()


@pytest.mark.parametrize("imprecise, message", [
    (16, "max_num_imprecise_acc = 16 is below this dot's K = 32"),
    (32.0, "max_num_imprecise_acc must be a constexpr int, got"),
])
def test_a_bad_max_num_imprecise_acc_is_an_error_that_writes_nothing(imprecise, message):
    a, c = np.zeros((32, 32), np.uint8), np.full((32, 32), 7.0, np.float32)
    with pytest.raises(tilec.CompilationError, match=message):
        promoted_dot_kernel[(1,)](a, a, c, N=32, IMPRECISE=imprecise)
    assert (c == 7.0).all()


# --------------------------------------------------------------------------- #
# What Triton refuses
# --------------------------------------------------------------------------- #

@tilec.jit
def int_cast_kernel(x_ptr, z_ptr):
    tl.store(z_ptr, tl.load(x_ptr).to(tl.float8e5))


@tilec.jit
def int_mix_kernel(x_ptr, y_ptr, z_ptr):
    tl.store(z_ptr, tl.load(x_ptr).to(tl.float8e5, bitcast=True) + tl.load(y_ptr))


def test_ints_do_not_mix_with_fp8():
    one = np.ones(1, np.int8)
    with pytest.raises(CompilationError, match="convert only to and from float types"):
        int_cast_kernel[(1,)](one, np.zeros(1, np.uint8))
    with pytest.raises(CompilationError, match="cannot combine fp8e5 with int8"):
        int_mix_kernel[(1,)](one, one, np.zeros(1, np.uint8))


# --------------------------------------------------------------------------- #
# Arguments
# --------------------------------------------------------------------------- #

@tilec.jit
def copy_kernel(x_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.static_assert(x_ptr.dtype.element_ty == z_ptr.dtype.element_ty)
    tl.store(z_ptr + offs, tl.abs(tl.load(x_ptr + offs)))


@pytest.mark.parametrize("torch_name, name", [("float8_e4m3fn", "fp8e4nv"), ("float8_e5m2", "fp8e5"),
                                              ("float8_e4m3fnuz", "fp8e4b8"), ("float8_e5m2fnuz", "fp8e5b16")])
def test_torch_fp8_tensors_are_fp8_pointers(torch_name, name):
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(PATTERNS.copy()).view(getattr(torch, torch_name))
    z = torch.zeros(256, dtype=getattr(torch, torch_name))
    copy_kernel[(1,)](x, z, BLOCK=BLOCK)
    assert copy_kernel.plan((x, z), {"BLOCK": BLOCK}).args[0].type.elem == tilec.ir.ScalarType("f" + name[2:])
    np.testing.assert_array_equal(z.view(torch.uint8).numpy() & 0x7F, PATTERNS & 0x7F)


@tilec.jit
def print_kernel(x_ptr, FP8: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 4)).to(FP8, bitcast=True)
    tl.device_print("x", x)


def test_device_print_shows_the_values(capfd):
    print_kernel[(1,)](np.array([0x38, 0x3C, 0xC0, 0x7C], np.uint8), FP8=tl.float8e5)
    assert "x: [ 0.5  1.  -2.   inf]" in capfd.readouterr().out


@tilec.jit
def widen_kernel(x_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))


@pytest.mark.parametrize("name", NAMES)
def test_reinterpret_passes_bytes_as_fp8(name):
    """``tilec.reinterpret`` (Triton's): any fp8 type, float8e4b15 included, from uint8 or int8 data."""
    z = np.zeros(256, np.float32)
    widen_kernel[(1,)](tilec.reinterpret(PATTERNS.view(np.int8), FORMATS[name][0]), z, BLOCK=BLOCK)
    same_floats(z, ref_decode(name).astype(np.float32))
    wrapper = tilec.reinterpret(PATTERNS, FORMATS[name][0])
    assert tilec.reinterpret(wrapper, PATTERNS.dtype) is PATTERNS and wrapper.shape == (256,)


def test_reinterpret_needs_the_same_width():
    with pytest.raises(TypeError, match="cannot reinterpret f32 data as tl.float8e5: the element widths must match"):
        widen_kernel[(1,)](tilec.reinterpret(np.zeros(4, np.float32), tl.float8e5), np.zeros(4, np.float32),
                           BLOCK=4)
