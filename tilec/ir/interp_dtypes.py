"""How the interpreter holds each IR element type in numpy, and conversions.

Two representations per type:

* the *compute* one, in which values live while a kernel runs: ``i1`` ->
  ``bool``, ints -> numpy ints of the same width and signedness (wrapping),
  ``f16`` -> ``float16``, ``f32``/``f64`` as themselves, pointers -> ``int64``
  addresses, and ``bf16`` -> ``float32`` values that are always exactly
  representable in bf16 (rounded to nearest even after every op); the
  fp8 types -> ``float32`` values of the type (``fp8.decode``'s);
* the *memory* one, the bytes a load reads: ``i1`` -> ``uint8`` (0 or 1),
  ``bf16`` -> ``uint16`` bits, fp8 -> ``uint8`` bits, everything else as
  its compute dtype.

``cast`` defines the ``Cast`` op (see its docstring for the rules).
"""
from __future__ import annotations

import numpy as np

from tilec.ir import fp8
from tilec.ir.types import PointerType, ScalarType, bf16

_COMPUTE = {
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "bf16": np.float32, "f32": np.float32, "f64": np.float64,
    **{name: np.float32 for name in fp8.FP8_FORMATS},
}
_MEMORY_OVERRIDES = {"i1": np.uint8, "bf16": np.uint16, **{name: np.uint8 for name in fp8.FP8_FORMATS}}

ADDRESS = np.dtype(np.int64)


def compute_dtype(t) -> np.dtype:
    """The numpy dtype values of element type ``t`` have while a kernel runs."""
    if isinstance(t, PointerType):
        return ADDRESS
    return np.dtype(_COMPUTE[t.name])


def memory_dtype(t) -> np.dtype:
    """The numpy dtype of ``t``'s bytes in memory."""
    if isinstance(t, PointerType):
        return ADDRESS
    return np.dtype(_MEMORY_OVERRIDES.get(t.name, _COMPUTE[t.name]))


def to_memory(x: np.ndarray, t) -> np.ndarray:
    """Compute representation -> memory representation."""
    if t == bf16:
        return bf16_bits(x)
    if _is_fp8(t):
        return fp8.to_bits(x, t)
    return x.astype(memory_dtype(t), copy=False)


def from_memory(m: np.ndarray, t) -> np.ndarray:
    """Memory representation -> compute representation (any nonzero byte is a true ``i1``)."""
    if t == bf16:
        return (m.astype(np.uint32) << 16).view(np.float32)
    if _is_fp8(t):
        return fp8.decode(m, t)
    if isinstance(t, ScalarType) and t.is_bool:
        return m != 0
    return m.astype(compute_dtype(t), copy=False)


# --------------------------------------------------------------------------- #
# bf16 and float rounding
# --------------------------------------------------------------------------- #

def bf16_bits(x32: np.ndarray) -> np.ndarray:
    """The bf16 bit pattern (uint16) nearest to float32 ``x32`` (ties to even; NaN stays NaN)."""
    bits = np.asarray(x32, np.float32).view(np.uint32)
    rounded = (bits + (np.uint32(0x7FFF) + ((bits >> 16) & 1))) >> 16
    quiet_nan = (bits | 0x00400000) >> 16  # rounding a NaN's payload could carry into the sign
    return np.where(np.isnan(x32), quiet_nan, rounded).astype(np.uint16)


def round_bf16(x32: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bf16, still held as float32."""
    return (bf16_bits(x32).astype(np.uint32) << 16).view(np.float32)


def _f64_to_f32_odd(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounding to odd, so that a second rounding (to bf16) is exact."""
    f = x.astype(np.float32)
    wide = f.astype(np.float64)
    f = np.where(np.abs(wide) > np.abs(x), np.nextafter(f, np.float32(0)), f)  # truncate toward zero
    inexact = (wide != x) & ~np.isnan(x)
    return (f.view(np.uint32) | inexact.astype(np.uint32)).view(np.float32)


def round_float(x: np.ndarray, t: ScalarType) -> np.ndarray:
    """Float array ``x`` (any float dtype) rounded to nearest even in float type ``t``."""
    if t.is_fp8:
        return fp8.round_fp8(x, t)
    if t == bf16:
        if x.dtype == np.float64:
            x = _f64_to_f32_odd(x)
        return round_bf16(x.astype(np.float32, copy=False))
    return x.astype(compute_dtype(t), copy=False)


def _toward_zero(y: np.ndarray, t: ScalarType) -> np.ndarray:
    """The next value of type ``t`` from ``y`` toward zero (bf16 steps its own ulp)."""
    if t == bf16:
        return (((y.view(np.uint32) >> 16) - 1) << 16).astype(np.uint32).view(np.float32)
    return np.nextafter(y, y.dtype.type(0))


def round_float_rtz(x: np.ndarray, t: ScalarType) -> np.ndarray:
    """Float array ``x`` rounded toward zero in float type ``t`` (overflow gives the largest finite)."""
    if t.is_fp8:
        return fp8.round_fp8(x, t, "rtz")
    y = round_float(x, t)
    over = np.abs(y.astype(np.float64)) > np.abs(x.astype(np.float64))
    return np.where(over, _toward_zero(y, t), y) if over.any() else y


# --------------------------------------------------------------------------- #
# Casts
# --------------------------------------------------------------------------- #

def _float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Truncate toward zero, saturating out-of-range values and sending NaN to 0 (as NVIDIA GPUs convert)."""
    info = np.iinfo(dtype)
    t = np.trunc(x.astype(np.float64))
    high, low = t >= float(info.max), t <= float(info.min)
    r = np.where(np.isnan(t) | high | low, 0, t).astype(dtype)
    return np.where(high, dtype.type(info.max), np.where(low, dtype.type(info.min), r))


def _int_to_float(x: np.ndarray, dst: ScalarType) -> np.ndarray:
    """Ints as floats to be rounded to ``dst`` with a single rounding: f32 and f64 convert
    directly; f16 and bf16 go through f64, exact below 2**53 and rounded to odd above."""
    if dst.name in ("f32", "f64"):
        return x.astype(compute_dtype(dst))
    wide = x.astype(np.float64)
    return _int64_to_f64_odd(x, wide) if x.dtype.itemsize == 8 else wide


def _int64_to_f64_odd(x: np.ndarray, nearest: np.ndarray) -> np.ndarray:
    """64-bit ints ``x`` rounded to odd in f64, from their nearest doubles."""
    top = np.iinfo(x.dtype).max
    big = nearest >= float(top)  # rounded up to 2**63 (or 2**64): not an int of x's type
    back = np.where(big, x.dtype.type(top), np.where(big, 0.0, nearest).astype(x.dtype))
    away = big | np.where(x >= 0, back > x, back < x)  # |nearest| > |x|
    truncated = np.where(away, np.nextafter(nearest, 0.0), nearest)
    return (truncated.view(np.uint64) | (big | (back != x)).astype(np.uint64)).view(np.float64)


def _is_float(t) -> bool:
    return isinstance(t, ScalarType) and t.is_float


def _is_fp8(t) -> bool:
    return isinstance(t, ScalarType) and t.is_fp8


def cast(x: np.ndarray, src, dst, rounding: str = "rtne") -> np.ndarray:
    """Convert compute-representation ``x`` of element type ``src`` to ``dst``.

    Anything -> ``i1`` is ``x != 0`` (as Triton); float -> int truncates and
    saturates (NaN -> 0); ints wrap on narrowing and extend by the source's
    signedness; floats round to nearest even (or toward zero with
    ``rounding="rtz"``), to an fp8 type saturating (``fp8.encode``);
    pointers and ints exchange addresses.
    """
    if isinstance(dst, ScalarType) and dst.is_bool:
        return x != 0
    if _is_float(dst):
        wide = x if _is_float(src) else _int_to_float(x, dst)
        return round_float_rtz(wide, dst) if rounding == "rtz" else round_float(wide, dst)
    out = compute_dtype(dst)
    if _is_float(src):
        return _float_to_int(x, out)
    return x.astype(out)


def bitcast(x: np.ndarray, src, dst) -> np.ndarray:
    """Reinterpret the bits of ``x`` (element type ``src``) as ``dst`` of the same width."""
    bits = np.ascontiguousarray(to_memory(x, src))
    return from_memory(bits.view(memory_dtype(dst)), dst)


def convert_constant(value, t) -> np.ndarray:
    """A Python bool/int/float as a 0-d array of type ``t``, converted by the ``cast`` rules."""
    if isinstance(value, float):
        return cast(np.asarray(value, np.float64), ScalarType("f64"), t)
    return cast(np.asarray(value), ScalarType("i64"), t)
