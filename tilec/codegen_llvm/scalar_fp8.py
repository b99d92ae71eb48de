"""Per-element emitters of casts to and from the fp8 types, in integer steps
any target runs, bit for bit the interpreter's (``tilec.ir.fp8``).

An fp8 value is its bit pattern in an ``i8`` register.  Decoding builds the
float32 from the fields (exact: every fp8 value is a float32); encoding
takes the float32 or float64 source's bits, drops the mantissa bits the
format cannot hold, rounding once (to nearest even or toward zero), and
saturates, as ``tilec.ir.fp8.encode`` does step for step.  float16 and
bfloat16 sources widen to float32 first (exact).
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec.ir.fp8 import Fp8Format, fp8_format
from tilec.ir.types import f32, f64

from tilec.codegen_llvm.scalar_base import llvm_type

I8, I32 = llir.IntType(8), llir.IntType(32)
_QUIET_NAN32 = 0x7FC00000  # a decoded NaN: this, with its fp8 pattern in the low byte (as the interpreter's)
_SOURCES = {32: (23, 127), 64: (52, 1023)}  # float width -> (mantissa bits, exponent bias)


def _is_nan(b: llir.IRBuilder, byte32: llir.Value, fmt: Fp8Format) -> llir.Value:
    """Whether the pattern (zero-extended to i32) is one of ``fmt``'s NaNs."""
    if fmt.family == "fnuz":
        return b.icmp_unsigned("==", byte32, I32(0x80))
    magnitude = b.and_(byte32, I32(0x7F))
    if fmt.family == "ieee":
        return b.icmp_unsigned(">", magnitude, I32(fmt.inf_bits))
    return b.icmp_unsigned("==", magnitude, I32(0x7F))


def decode_fp8(ctx, x: llir.Value, fmt: Fp8Format) -> llir.Value:
    """The float32 of fp8 pattern ``x`` (``i8``): a normal value's fields moved
    and rebiased, a subnormal one's mantissa scaled (exact), infinity and NaN
    as the interpreter holds them."""
    b, m = ctx.builder, fmt.mantissa_bits
    byte = b.zext(x, I32)
    magnitude = b.and_(byte, I32(0x7F))
    normal = b.add(b.shl(magnitude, I32(23 - m)), I32((127 - fmt.bias) << 23))
    scaled = b.fmul(b.uitofp(magnitude, llvm_type(f32)), llir.Constant(llvm_type(f32), 2.0 ** (fmt.min_exponent - m)))
    bits = b.select(b.icmp_unsigned("<", magnitude, I32(1 << m)), b.bitcast(scaled, I32), normal)
    if fmt.family == "ieee":
        bits = b.select(b.icmp_unsigned("==", magnitude, I32(fmt.inf_bits)), I32(0x7F800000), bits)
    bits = b.or_(bits, b.shl(b.and_(byte, I32(0x80)), I32(24)))
    bits = b.select(_is_nan(b, byte, fmt), b.or_(byte, I32(_QUIET_NAN32)), bits)
    return b.bitcast(bits, llvm_type(f32))


def encode_fp8(ctx, x: llir.Value, fmt: Fp8Format, rounding: str) -> llir.Value:
    """The fp8 pattern (``i8``) of float32 or float64 ``x``, rounded once and
    saturated (``tilec.ir.fp8.encode``'s steps, in the source's integer width)."""
    b = ctx.builder
    width = 64 if isinstance(x.type, llir.DoubleType) else 32
    ms, source_bias = _SOURCES[width]
    it = llir.IntType(width)

    def umin(v, k):
        return b.select(b.icmp_unsigned("<", v, it(k)), v, it(k))

    def smax0(v):
        return b.select(b.icmp_signed(">", v, it(0)), v, it(0))

    raw = b.bitcast(x, it)
    magnitude = b.and_(raw, it((1 << (width - 1)) - 1))
    exponent_field = b.lshr(magnitude, it(ms))
    fraction = b.and_(magnitude, it((1 << ms) - 1))
    normal = b.icmp_unsigned("!=", exponent_field, it(0))
    significand = b.select(normal, b.or_(fraction, it(1 << ms)), fraction)
    exponent = b.sub(b.select(normal, exponent_field, it(1)), it(source_bias))
    m = fmt.mantissa_bits
    drop = umin(b.add(smax0(b.sub(it(fmt.min_exponent), exponent)), it(ms - m)), ms + 2)
    kept = b.lshr(significand, drop)
    if rounding == "rtne":
        rest = b.and_(significand, b.sub(b.shl(it(1), drop), it(1)))
        half = b.shl(it(1), b.sub(drop, it(1)))
        odd = b.trunc(kept, llir.IntType(1))
        up = b.or_(b.icmp_unsigned(">", rest, half), b.and_(b.icmp_unsigned("==", rest, half), odd))
        kept = b.add(kept, b.zext(up, it))
    result = umin(b.add(b.shl(smax0(b.sub(exponent, it(fmt.min_exponent))), it(m)), kept), fmt.max_bits)
    infinity = ((1 << (width - 1)) - 1) ^ ((1 << ms) - 1)
    if fmt.family == "ieee" and rounding == "rtz":
        result = b.select(b.icmp_unsigned("==", magnitude, it(infinity)), it(fmt.inf_bits), result)
    sign = b.trunc(b.lshr(raw, it(width - 1)), I8)
    pattern = b.or_(b.trunc(result, I8), b.shl(sign, I8(7)))
    if fmt.family == "fnuz":
        pattern = b.select(b.icmp_unsigned("==", pattern, I8(0x80)), I8(0), pattern)
    return b.select(b.icmp_unsigned(">", magnitude, it(infinity)), I8(fmt.nan_bits), pattern)


def fp8_to_float(ctx, x, src, dst, rounding):
    """Exact: decoded to float32, then widened (f64) or narrowed (f16, bf16: exact too)."""
    y = decode_fp8(ctx, x, fp8_format(src))
    if dst == f32:
        return y
    return ctx.builder.fpext(y, llvm_type(dst)) if dst == f64 else ctx.builder.fptrunc(y, llvm_type(dst))


def float_to_fp8(ctx, x, src, dst, rounding):
    """float16/bfloat16 widened to float32 (exact), then encoded with ``rounding``."""
    if src.bits == 16:
        x = ctx.builder.fpext(x, llvm_type(f32))
    return encode_fp8(ctx, x, fp8_format(dst), rounding)


def fp8_to_fp8(ctx, x, src, dst, rounding):
    """Through float32, which holds the source exactly: one rounding."""
    return encode_fp8(ctx, decode_fp8(ctx, x, fp8_format(src)), fp8_format(dst), rounding)
