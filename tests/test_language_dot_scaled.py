"""``tl.dot_scaled`` on the interpreter, against a numpy reference written
from the format definitions (OCP microscaling: e2m1, e4m3 ``fn``, e5m2, e8m0
scales), with Triton's emulation rules: operands decoded to fp16 if either
format is "fp16", else bf16; scales ``2**(s - 127)``, 0 for ``s = 0``, NaN
for 0xFF (infinity with ``fast_math``), rounded to that type; the scaled
product rounded to it; a float32 dot.

The reference's decoding is checked against ml_dtypes' tables; the kernel's
decoding exactly, through an identity ``rhs``; then every format pair on
drawn codes, halves and scales (NaN/inf codes, 0x00/0xFF and extreme
exponents included), packing along M/N, batches, ``acc``, ``fast_math``; the
argument errors; and the compile for sm_80 and sm_90 (ptxas included) and for every
AMD arch (linked; the decoded dot on the bf16 MFMA/WMMA).
That the answers are Triton's on the H100 is ``tests/gpu/test_dot_scaled_gpu.py``'s job.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import FEW, PROPERTY, round_bf16
from tilec.errors import CompilationError

MINIFLOATS = {"e2m1": (2, 1, 1, "none"), "e4m3": (4, 3, 7, "fn"), "e5m2": (5, 2, 15, "ieee")}
HALVES = {"bf16", "fp16"}
FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")
F32_MAX = float(np.finfo(np.float32).max)

# --------------------------------------------------------------------------- #
# The reference
# --------------------------------------------------------------------------- #


def minifloat_values(codes, fmt: str) -> np.ndarray:
    """float64 values of ``fmt``'s integer codes, from the format's definition:
    ``(-1)**s * 2**(e - bias) * (1 + m / 2**M)``, subnormals ``(-1)**s * 2**(1 -
    bias) * m / 2**M``; e5m2's all-ones exponent is inf (m = 0) or NaN, e4m3's
    ``S.1111.111`` is NaN."""
    e_bits, m_bits, bias, specials = MINIFLOATS[fmt]
    codes = np.asarray(codes, np.int64)
    sign = np.where((codes >> (e_bits + m_bits)) & 1, -1.0, 1.0)
    e, m = (codes >> m_bits) & ((1 << e_bits) - 1), codes & ((1 << m_bits) - 1)
    magnitude = np.where(e == 0, m / 2.0 ** m_bits * 2.0 ** (1 - bias), (1 + m / 2.0 ** m_bits) * 2.0 ** (e - bias))
    top = e == (1 << e_bits) - 1
    if specials == "ieee":
        magnitude = np.where(top, np.where(m == 0, np.inf, np.nan), magnitude)
    elif specials == "fn":
        magnitude = np.where(top & (m == (1 << m_bits) - 1), np.nan, magnitude)
    return sign * magnitude


def to_compute(x, compute: str) -> np.ndarray:
    """float64 values rounded to the compute type (bf16 or fp16), held as float64.
    The inputs here are exact float32 values (at most 11 significant bits,
    inside float32's range or past it), so going through float32 rounds once."""
    with np.errstate(all="ignore"):
        x32 = np.asarray(x, np.float64).astype(np.float32)
        return (round_bf16(x32) if compute == "bf16" else x32.astype(np.float16)).astype(np.float64)


def scale_values(s, compute: str, fast_math: bool) -> np.ndarray:
    """e8m0 exponents as factors in the compute type: 0 for 0, ``2**(s - 127)``,
    NaN for 0xFF (inf with ``fast_math``: the float32 with those exponent bits)."""
    s = np.asarray(s, np.int64)
    factor = np.where(s == 0, 0.0, 2.0 ** (s.astype(np.float64) - 127))
    factor = np.where(s == 255, np.inf if fast_math else np.nan, factor)
    return to_compute(factor, compute)


def unpack_e2m1(packed: np.ndarray, axis: int) -> np.ndarray:
    """Codes of bytes holding two e2m1 codes, the low nibble first, along ``axis``."""
    pairs = np.stack([packed & 0xF, packed >> 4], axis=axis + 1)
    shape = list(packed.shape)
    shape[axis] *= 2
    return pairs.reshape(shape)


def operand_values(data, fmt, scale, side, k_pack, compute, fast_math) -> np.ndarray:
    """The scaled operand in the compute type, laid out as ``[..., M, K]``
    (lhs) or ``[..., K, N]`` (rhs)."""
    rank = data.ndim
    k_axis = rank - 1 if side == "lhs" else rank - 2
    if fmt in HALVES:
        values = to_compute(data.view(np.float16) if fmt == "fp16" else halves_as_bf16(data), compute)
    else:
        codes = data
        if fmt == "e2m1":
            other = rank - 2 if side == "lhs" else rank - 1
            codes = unpack_e2m1(data, k_axis if k_pack else other)
        values = to_compute(minifloat_values(codes, fmt), compute)
    if scale is None:
        return values
    k = values.shape[k_axis]
    factor = np.repeat(scale_values(scale, compute, fast_math), k // scale.shape[-1], axis=-1)
    if side == "rhs":
        factor = np.swapaxes(factor, -1, -2)
    with np.errstate(all="ignore"):
        return to_compute(values * factor, compute)


def halves_as_bf16(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def reference(a, b, acc):
    """``a @ b + acc`` in float64 with IEEE's inf/NaN rules for every product
    (a BLAS may skip zeros), and each entry's magnitude ``|a| @ |b| + |acc|``
    over the finite products, which bounds float32's rounding error."""
    with np.errstate(all="ignore"):
        products = a[..., :, :, None] * b[..., None, :, :]
        exact = products.sum(axis=-2) + acc
        finite = np.where(np.isfinite(products), np.abs(products), 0.0)
        magnitude = finite.sum(axis=-2) + np.abs(acc)
    return exact, magnitude


def assert_dot_close(got: np.ndarray, want: np.ndarray, magnitude: np.ndarray) -> None:
    """float32 ``got`` is ``want`` up to float32 accumulation (1e-5 of the
    magnitude); entries whose finite part could overflow float32 are free
    (their inf/NaN depends on the summation order); NaN meets NaN, inf the same inf."""
    with np.errstate(all="ignore"):
        want32 = want.astype(np.float32).astype(np.float64)
        checked = magnitude < F32_MAX / 4
        got = got.astype(np.float64)
        same = (got == want32) | (np.isnan(got) & np.isnan(want32)) | \
            (np.isfinite(want32) & (np.abs(got - want32) <= 1e-5 * magnitude + 1e-38))
    bad = checked & ~same
    assert not bad.any(), (f"{bad.sum()} of {bad.size} differ; first at {np.argwhere(bad)[:4].tolist()}: "
                           f"got {got[bad][:4]}, want {want32[bad][:4]}")


# --------------------------------------------------------------------------- #
# The kernel: operands as stored (packed e2m1, fp8 bytes, 16-bit halves)
# --------------------------------------------------------------------------- #


@tilec.jit
def dot_scaled_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, acc_ptr, out_ptr, BATCH: tl.constexpr, M: tl.constexpr,
                      N: tl.constexpr, K: tl.constexpr, A_FMT: tl.constexpr, B_FMT: tl.constexpr,
                      A_KPACK: tl.constexpr, B_KPACK: tl.constexpr, GROUP: tl.constexpr, FAST: tl.constexpr):
    A_ROWS: tl.constexpr = M // 2 if A_FMT == "e2m1" and not A_KPACK else M
    A_COLS: tl.constexpr = K // 2 if A_FMT == "e2m1" and A_KPACK else K
    B_ROWS: tl.constexpr = K // 2 if B_FMT == "e2m1" and B_KPACK else K
    B_COLS: tl.constexpr = N // 2 if B_FMT == "e2m1" and not B_KPACK else N
    batch = tl.arange(0, BATCH)[:, None, None]
    a = tl.load(a_ptr + batch * (A_ROWS * A_COLS) + tl.arange(0, A_ROWS)[None, :, None] * A_COLS
                + tl.arange(0, A_COLS)[None, None, :])
    b = tl.load(b_ptr + batch * (B_ROWS * B_COLS) + tl.arange(0, B_ROWS)[None, :, None] * B_COLS
                + tl.arange(0, B_COLS)[None, None, :])
    out = batch * (M * N) + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :]
    sa = None
    sb = None
    acc = None
    if sa_ptr is not None:
        sa = tl.load(sa_ptr + batch * (M * (K // GROUP)) + tl.arange(0, M)[None, :, None] * (K // GROUP)
                     + tl.arange(0, K // GROUP)[None, None, :])
    if sb_ptr is not None:
        sb = tl.load(sb_ptr + batch * (N * (K // GROUP)) + tl.arange(0, N)[None, :, None] * (K // GROUP)
                     + tl.arange(0, K // GROUP)[None, None, :])
    if acc_ptr is not None:
        acc = tl.load(acc_ptr + out)
    if BATCH == 1:  # the 2-D form
        a = tl.reshape(a, (A_ROWS, A_COLS))
        b = tl.reshape(b, (B_ROWS, B_COLS))
        out = tl.reshape(out, (M, N))
        if sa_ptr is not None:
            sa = tl.reshape(sa, (M, K // GROUP))
        if sb_ptr is not None:
            sb = tl.reshape(sb, (N, K // GROUP))
        if acc_ptr is not None:
            acc = tl.reshape(acc, (M, N))
    tl.store(out_ptr + out, tl.dot_scaled(a, sa, A_FMT, b, sb, B_FMT, acc, FAST, A_KPACK, B_KPACK))


def run(a_fmt, b_fmt, a_data, b_data, sa=None, sb=None, acc=None, a_kpack=True, b_kpack=True, fast_math=False):
    """The kernel's float32 output for operands as stored; shapes are read off the data."""
    batch = a_data.shape[0] if a_data.ndim == 3 else 1
    m = a_data.shape[-2] * (2 if a_fmt == "e2m1" and not a_kpack else 1)
    k = a_data.shape[-1] * (2 if a_fmt == "e2m1" and a_kpack else 1)
    n = b_data.shape[-1] * (2 if b_fmt == "e2m1" and not b_kpack else 1)
    scale = sa if sa is not None else sb
    group = 32 if scale is None else k // scale.shape[-1]
    out = np.full(a_data.shape[:-2] + (m, n), np.float32(-12345.0), np.float32)
    dot_scaled_kernel[(1,)](a_data, sa, b_data, sb, acc, out, BATCH=batch, M=m, N=n, K=k, A_FMT=a_fmt, B_FMT=b_fmt,
                            A_KPACK=a_kpack, B_KPACK=b_kpack, GROUP=group, FAST=fast_math)
    return out


def expected(a_fmt, b_fmt, a_data, b_data, sa=None, sb=None, acc=None, a_kpack=True, b_kpack=True, fast_math=False):
    """The reference's ``(value, magnitude)`` for the same arguments as ``run``."""
    compute = "fp16" if "fp16" in (a_fmt, b_fmt) else "bf16"
    a = operand_values(a_data, a_fmt, sa, "lhs", a_kpack, compute, fast_math)
    b = operand_values(b_data, b_fmt, sb, "rhs", b_kpack, compute, fast_math)
    return reference(a, b, np.zeros(()) if acc is None else acc.astype(np.float64))


# --------------------------------------------------------------------------- #
# Drawn operands
# --------------------------------------------------------------------------- #

SPECIAL_SCALES = np.array([0, 1, 2, 100, 126, 127, 128, 150, 253, 254, 255], np.uint8)


def halves(rs, shape, fmt, special_rate):
    """16-bit operand bits: normal-ish values of varied sign and exponent, a few
    zeros, infinities, NaNs and subnormals."""
    values = rs.standard_normal(shape) * 2.0 ** rs.randint(-6, 7, shape)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -20, -(2.0 ** -130)])
    values = np.where(rs.random_sample(shape) < special_rate, rs.choice(specials, shape), values)
    with np.errstate(all="ignore"):
        if fmt == "fp16":
            return values.astype(np.float16)
        return (round_bf16(values.astype(np.float32)).view(np.uint32) >> 16).astype(np.uint16)


def codes(rs, shape, fmt, special_rate):
    """Minifloat bytes: every code, the non-finite ones (e4m3 NaN, e5m2 inf/NaN)
    kept at ``special_rate`` and otherwise moved to a finite code."""
    data = rs.randint(0, 256, shape).astype(np.uint8)
    if fmt == "e2m1":
        return data
    top = {"e4m3": 0x7F, "e5m2": 0x7C}[fmt]
    non_finite = (data & top) == top
    keep = rs.random_sample(shape) < special_rate
    return np.where(non_finite & ~keep, data & 0xF3, data).astype(np.uint8)


def operand(rs, fmt, rows, k, side, k_pack, special_rate, batch=()):
    """Stored ``fmt`` data for a ``rows x K`` (lhs) or ``K x rows`` (rhs) operand."""
    shape = (rows, k) if side == "lhs" else (k, rows)
    if fmt == "e2m1":
        axis = (1 if side == "lhs" else 0) if k_pack else (0 if side == "lhs" else 1)
        shape = tuple(n // 2 if d == axis else n for d, n in enumerate(shape))
    shape = batch + shape
    return halves(rs, shape, fmt, special_rate) if fmt in HALVES else codes(rs, shape, fmt, special_rate)


def scales(rs, shape, compute, extreme_rate):
    """e8m0 exponents in a range where the compute type neither overflows nor
    flushes, and at ``extreme_rate`` 0x00, 0xFF and extreme exponents."""
    low, high = (100, 150) if compute == "bf16" else (118, 134)
    s = rs.randint(low, high + 1, shape).astype(np.uint8)
    return np.where(rs.random_sample(shape) < extreme_rate, rs.choice(SPECIAL_SCALES, shape), s).astype(np.uint8)


draws = st.tuples(st.integers(0, 2 ** 32 - 1), st.sampled_from([0.0, 0.02, 0.2]), st.sampled_from([0.0, 0.05, 0.5]))


# --------------------------------------------------------------------------- #
# Decoding
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("fmt, ml_name", [("e2m1", "float4_e2m1fn"), ("e4m3", "float8_e4m3fn"),
                                          ("e5m2", "float8_e5m2")])
def test_the_reference_decodes_as_ml_dtypes(fmt, ml_name):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    all_codes = np.arange(16 if fmt == "e2m1" else 256, dtype=np.uint8)
    theirs = all_codes.view(getattr(ml_dtypes, ml_name)).astype(np.float64)
    np.testing.assert_array_equal(minifloat_values(all_codes, fmt), theirs)


@pytest.mark.parametrize("fmt", MINIFLOATS)
@pytest.mark.parametrize("identity_fmt", ["bf16", "fp16"])
def test_every_finite_code_decodes_exactly(fmt, identity_fmt):
    """lhs @ identity is lhs: each finite code's value, exactly, in both compute types."""
    if fmt == "e2m1":
        packed = np.tile((np.arange(0, 16, 2) | (np.arange(1, 16, 2) << 4)).astype(np.uint8), (16, 1))  # 0..15
        lhs_codes = unpack_e2m1(packed, 1)
    else:
        lhs_codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
        lhs_codes = np.where(np.isfinite(minifloat_values(lhs_codes, fmt)), lhs_codes, 0).astype(np.uint8)
        packed = lhs_codes
    k = lhs_codes.shape[1]
    eye = np.eye(k, 16)
    identity = eye.astype(np.float16) if identity_fmt == "fp16" else np.where(eye == 1, 0x3F80, 0).astype(np.uint16)
    got = run(fmt, identity_fmt, packed, identity)
    want = to_compute(minifloat_values(lhs_codes, fmt), identity_fmt)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("compute_fmt", ["bf16", "fp16"])
@pytest.mark.parametrize("fast_math", [False, True])
def test_every_scale_decodes_as_triton_emulates(compute_fmt, fast_math):
    """Ones scaled by each of the 256 exponents: ``2**(s - 127)`` rounded to
    the compute type, 0 for 0x00, NaN (inf with fast_math) for 0xFF."""
    one = 0x3F80 if compute_fmt == "bf16" else 0x3C00
    lhs = np.full((16, 512), one, np.uint16)
    lhs = lhs if compute_fmt == "bf16" else lhs.view(np.float16)
    sa = np.arange(256, dtype=np.uint8).reshape(16, 16)
    eye = np.zeros((512, 16))  # the product's column j sums group j of each row
    eye[np.arange(512), np.arange(512) // 32] = 1.0
    rhs = eye.astype(np.float16) if compute_fmt == "fp16" else np.where(eye == 1, 0x3F80, 0).astype(np.uint16)
    got = run(compute_fmt, compute_fmt, lhs, rhs, sa=sa, fast_math=fast_math)
    factors = scale_values(sa, compute_fmt, fast_math)
    want, _ = reference(np.repeat(factors, 32, axis=1), eye, np.zeros(()))
    np.testing.assert_array_equal(got, want.astype(np.float32))


# --------------------------------------------------------------------------- #
# Every format pair, drawn values
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("a_fmt, b_fmt", list(itertools.product(FORMATS, FORMATS)))
@FEW
@given(draw=draws)
def test_every_format_pair_matches_the_reference(a_fmt, b_fmt, draw):
    """M = N = 16, K = 64: minifloat sides carry scales, halves none."""
    seed, special_rate, extreme_rate = draw
    rs = np.random.RandomState(seed)
    compute = "fp16" if "fp16" in (a_fmt, b_fmt) else "bf16"
    a = operand(rs, a_fmt, 16, 64, "lhs", True, special_rate)
    b = operand(rs, b_fmt, 16, 64, "rhs", True, special_rate)
    sa = None if a_fmt in HALVES else scales(rs, (16, 2), compute, extreme_rate)
    sb = None if b_fmt in HALVES else scales(rs, (16, 2), compute, extreme_rate)
    got = run(a_fmt, b_fmt, a, b, sa, sb)
    assert_dot_close(got, *expected(a_fmt, b_fmt, a, b, sa, sb))


@pytest.mark.parametrize("a_fmt, b_fmt, scaled", [("bf16", "fp16", "both"), ("e4m3", "e5m2", "none"),
                                                  ("e2m1", "bf16", "rhs"), ("fp16", "e2m1", "lhs")])
@FEW
@given(draw=draws)
def test_scales_are_optional_on_any_format(a_fmt, b_fmt, scaled, draw):
    seed, special_rate, extreme_rate = draw
    rs = np.random.RandomState(seed)
    compute = "fp16" if "fp16" in (a_fmt, b_fmt) else "bf16"
    a = operand(rs, a_fmt, 32, 64, "lhs", True, special_rate)
    b = operand(rs, b_fmt, 16, 64, "rhs", True, special_rate)
    sa = scales(rs, (32, 2), compute, extreme_rate) if scaled in ("both", "lhs") else None
    sb = scales(rs, (16, 2), compute, extreme_rate) if scaled in ("both", "rhs") else None
    got = run(a_fmt, b_fmt, a, b, sa, sb)
    assert_dot_close(got, *expected(a_fmt, b_fmt, a, b, sa, sb))


# --------------------------------------------------------------------------- #
# Packing, batches, acc, fast_math, groups of 16
# --------------------------------------------------------------------------- #


LAYOUTS = [  # a_fmt, b_fmt, a_kpack, b_kpack, batch, group, with acc, fast_math
    ("e2m1", "e2m1", False, False, (), 32, False, False),
    ("e2m1", "e2m1", True, False, (), 32, True, False),
    ("e2m1", "e4m3", False, True, (), 32, False, True),
    ("bf16", "e2m1", True, False, (), 32, False, False),
    ("e2m1", "e5m2", True, True, (2,), 32, True, False),
    ("e4m3", "e2m1", True, False, (2,), 32, False, False),
    ("e2m1", "fp16", True, True, (), 16, False, False),
    ("e5m2", "e4m3", True, True, (), 16, True, True),
]


@pytest.mark.parametrize("a_fmt, b_fmt, a_kpack, b_kpack, batch, group, with_acc, fast_math", LAYOUTS)
@FEW
@given(draw=draws)
def test_packing_batches_acc_and_fast_math(a_fmt, b_fmt, a_kpack, b_kpack, batch, group, with_acc, fast_math, draw):
    seed, special_rate, extreme_rate = draw
    rs = np.random.RandomState(seed)
    compute = "fp16" if "fp16" in (a_fmt, b_fmt) else "bf16"
    m, n, k = 32, 16, 64
    a = operand(rs, a_fmt, m, k, "lhs", a_kpack, special_rate, batch)
    b = operand(rs, b_fmt, n, k, "rhs", b_kpack, special_rate, batch)
    sa = scales(rs, batch + (m, k // group), compute, extreme_rate)
    sb = scales(rs, batch + (n, k // group), compute, extreme_rate)
    acc = rs.standard_normal(batch + (m, n)).astype(np.float32) if with_acc else None
    kw = dict(a_kpack=a_kpack, b_kpack=b_kpack, fast_math=fast_math)
    got = run(a_fmt, b_fmt, a, b, sa, sb, acc, **kw)
    assert_dot_close(got, *expected(a_fmt, b_fmt, a, b, sa, sb, acc, **kw))


def test_e2m1_packs_the_first_element_in_the_low_nibble():
    """Byte 0x21 along K is the codes 1 then 2 (0.5 then 1.0); along M with lhs_k_pack=False, rows 0 then 1."""
    a = np.zeros((16, 16), np.uint8)
    a[0, 0] = 0x21

    def row_of_ones(r):
        return np.where(np.arange(32)[:, None] == r, np.full((32, 16), 0x3F80), 0).astype(np.uint16)
    assert run("e2m1", "bf16", a, row_of_ones(0))[0, 0] == 0.5  # element (0, 0) is the low nibble
    assert run("e2m1", "bf16", a, row_of_ones(1))[0, 0] == 1.0  # element (0, 1) the high one
    eye = np.where(np.eye(16) == 1, 0x3F80, 0).astype(np.uint16)
    got = run("e2m1", "bf16", a, eye, a_kpack=False)
    assert got[0, 0] == 0.5 and got[1, 0] == 1.0


# --------------------------------------------------------------------------- #
# Errors: a CompilationError at the call's line
# --------------------------------------------------------------------------- #


@tilec.jit
def misuse_kernel(a_ptr, s_ptr, out_ptr, CASE: tl.constexpr):
    """``a`` a 32x32 uint8 tile, ``s`` 32x1 exponents (K = 32: one group), ``f`` float32."""
    r, c = tl.arange(0, 32)[:, None], tl.arange(0, 32)[None, :]
    a = tl.load(a_ptr + r * 32 + c)
    s = tl.load(s_ptr + r)
    s2 = tl.load(s_ptr + r * 2 + tl.arange(0, 2)[None, :])
    f = a.to(tl.float32)
    if CASE == 0:
        out = tl.dot_scaled(a, s, "e3m2", a, s, "e4m3")  # bad format
    elif CASE == 1:
        out = tl.dot_scaled(a, a, "e4m3", a, None, "e4m3")  # scale shape
    elif CASE == 2:
        out = tl.dot_scaled(a, None, "e2m1", a, None, "e4m3")  # K after packing
    elif CASE == 3:
        out = tl.dot_scaled(a, s, "e4m3", a, s, "e4m3", lhs_k_pack=False)  # k_pack
    elif CASE == 4:
        out = tl.dot_scaled(f, s, "e4m3", a, s, "e4m3")  # operand dtype
    elif CASE == 5:
        out = tl.dot_scaled(a, f, "e4m3", a, s, "e4m3")  # scale dtype
    elif CASE == 6:
        out = tl.dot_scaled(a, s, "e4m3", a, s, "e4m3", out_dtype=tl.float16)  # out_dtype
    elif CASE == 7:
        out = tl.dot_scaled(a, s, "e4m3", a, s, "e4m3", acc=a)  # acc
    elif CASE == 8:
        out = tl.dot_scaled(tl.reshape(a, (8, 128)), None, "e4m3", tl.reshape(a, (128, 8)), None, "e4m3")  # small
    elif CASE == 9:
        out = tl.dot_scaled(a, s, "e4m3", a, s2, "e4m3")  # group sizes
    elif CASE == 10:
        out = tl.dot_scaled(a, s, "e4m3", tl.reshape(a, (1, 32, 32)), None, "e4m3")  # ranks
    else:
        out = tl.dot_scaled(a, None, "bf16", a, None, "e4m3")  # half bits
    tl.store(out_ptr + r * 32 + c, out)


MISUSES = {  # the comment on the call's line: what the message must say
    "bad format": "lhs_format must be one of 'e2m1', 'e4m3', 'e5m2', 'bf16', 'fp16'",
    "scale shape": "lhs_scale tile<32x32xuint8> does not fit lhs tile<32x32xuint8> in 'e4m3' (K = 32)",
    "K after packing": "K differs after unpacking: lhs tile<32x32xuint8> in 'e2m1' holds K = 64",
    "k_pack": "lhs_k_pack=False packs e2m1 codes along M; it needs lhs_format 'e2m1', got 'e4m3'",
    "operand dtype": "lhs in format 'e4m3' must hold its codes as a uint8 tile; got tile<32x32xfp32>",
    "scale dtype": "lhs_scale must be a uint8 tile of e8m0 exponents (or None), got tile<32x32xfp32>",
    "out_dtype": "accumulates in float32 only (as Triton), got out_dtype fp16",
    "acc": "acc must be a float32 tile of the product's shape (32, 32), got tile<32x32xuint8>",
    "small": "needs M, N and K >= 16 (as tl.dot), got M=8, N=8, K=128",
    "group sizes": "must cover groups of one size, got one exponent per 32 and per 16 K-elements",
    "ranks": "must both be 2-D, or 3-D with one batch size",
    "half bits": "lhs in format 'bf16' must be a bf16 tile or its bits as uint16, got tile<32x32xuint8>",
}


@pytest.mark.parametrize("case, what", list(enumerate(MISUSES)))
def test_misuse_is_a_compile_error_at_the_call(case, what):
    source = open(__file__).read().splitlines()
    line = next(i for i, text in enumerate(source, 1) if text.endswith(f"# {what}"))
    with pytest.raises(CompilationError) as info:
        misuse_kernel[(1,)](np.zeros((32, 32), np.uint8), np.zeros(64, np.uint8), np.zeros((32, 32), np.float32),
                            CASE=case)
    message = str(info.value)
    assert "`tl.dot_scaled`" in message and MISUSES[what] in message, message
    assert f"{__file__}:{line}:" in message, message


# --------------------------------------------------------------------------- #
# NVIDIA: compiled and assembled for sm_80 and sm_90
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("a_fmt, b_fmt, batch, a_kpack", [("e2m1", "bf16", 1, True), ("e4m3", "e5m2", 1, True),
                                                          ("e2m1", "fp16", 2, False), ("bf16", "e2m1", 1, True)])
def test_compiles_and_assembles_for_nvidia(target, a_fmt, b_fmt, batch, a_kpack):
    from tilec.backends.nvidia import ptxas
    rs = np.random.RandomState(0)
    lead = (batch,) if batch > 1 else ()
    a = operand(rs, a_fmt, 64, 128, "lhs", a_kpack, 0.0, lead)
    b = operand(rs, b_fmt, 32, 128, "rhs", True, 0.0, lead)
    sa, sb = np.zeros(lead + (64, 4), np.uint8), np.zeros(lead + (32, 4), np.uint8)
    compiled = dot_scaled_kernel.compile(a, sa, b, sb, None, np.zeros(lead + (64, 32), np.float32), BATCH=batch,
                                         M=64, N=32, K=128, A_FMT=a_fmt, B_FMT=b_fmt, A_KPACK=a_kpack, B_KPACK=True,
                                         GROUP=32, FAST=False, target=target)
    assert compiled.asm["ptx"]
    assert ("cubin" in compiled.asm) == (ptxas.find_ptxas() is not None)


# --------------------------------------------------------------------------- #
# AMD: decoded as Triton emulates, then a bf16 dot on the arch's MFMA/WMMA
# (gfx950's scaled MFMA, v_mfma_scale_f32_*_f8f6f4, is not used yet)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("target, instruction", [("gfx90a", "v_mfma_f32_16x16x16bf16_1k"),
                                                 ("gfx942", "v_mfma_f32_16x16x16_bf16"),
                                                 ("gfx950", "v_mfma_f32_16x16x32_bf16"),
                                                 ("gfx1100", "v_wmma_f32_16x16x16_bf16"),
                                                 ("gfx1201", "v_wmma_f32_16x16x16_bf16")])
@pytest.mark.parametrize("a_fmt, b_fmt", [("e2m1", "bf16"), ("e4m3", "e5m2")])
def test_compiles_and_links_for_amd_on_the_bf16_matrix_instruction(target, instruction, a_fmt, b_fmt):
    from tilec.backends.amd.lld import find_lld

    rs = np.random.RandomState(0)
    a, b = operand(rs, a_fmt, 64, 128, "lhs", True, 0.0), operand(rs, b_fmt, 32, 128, "rhs", True, 0.0)
    compiled = dot_scaled_kernel.compile(a, np.zeros((64, 4), np.uint8), b, np.zeros((32, 4), np.uint8), None,
                                         np.zeros((64, 32), np.float32), BATCH=1, M=64, N=32, K=128, A_FMT=a_fmt,
                                         B_FMT=b_fmt, A_KPACK=True, B_KPACK=True, GROUP=32, FAST=False, target=target)
    assert instruction in compiled.asm["asm"] and "_scale_" not in compiled.asm["asm"]
    assert ("hsaco" in compiled.asm) == (find_lld() is not None)
