"""The five 8-bit float formats (Triton's ``float8*`` dtypes) and their
conversions, in numpy: the definition the interpreter runs and every
backend's lowering matches bit for bit.

Each format is 1 sign bit, ``exponent_bits`` and ``mantissa_bits``, with an
exponent ``bias``, in one of three families:

* ``ieee`` (``f8e5``, OCP E5M2): the all-ones exponent is infinity (mantissa
  0) or NaN (the rest), as IEEE 754;
* ``fn`` (``f8e4nv``, OCP E4M3FN, and ``f8e4b15``): no infinities; only the
  all-ones pattern (``0x7f``/``0xff``) is NaN, so the largest exponent holds
  finite values too;
* ``fnuz`` (``f8e4b8``, ``f8e5b16``, AMD's E4M3FNUZ/E5M2FNUZ): no infinities,
  no negative zero; ``0x80`` is the only NaN.

A conversion to a format (``encode``) rounds to nearest even (``"rtne"``)
or toward zero (``"rtz"``) once, from the source value itself, and
saturates: a finite value beyond the largest finite one gives that one
(with its sign).  Infinity gives the largest finite value too, except that
rounding toward zero keeps the infinity of ``f8e5``; NaN gives the format's
canonical NaN (``0x7f``, positive; ``0x80`` for ``fnuz``); a negative value
that rounds to zero gives ``-0`` (``+0`` for ``fnuz``).  This is Triton 3.6
on Hopper GPUs for ``float8e4nv``/``float8e5`` (NVIDIA's saturating
conversion instructions); docs/internals.md says where it comes from and
where Triton differs.
A conversion from a format (``decode``) is exact: every fp8 value is a
float16, bfloat16 and float32 value.

The interpreter holds fp8 values as float32 (the ``decode`` of their bits),
as it holds bf16 values; a NaN keeps its fp8 bit pattern in the float32's
low byte, so that ``to_bits(decode(b)) == b`` for every pattern ``b`` and a
bitcast round trip keeps NaN payloads.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_QUIET_NAN32 = 0x7FC00000


@dataclass(frozen=True)
class Fp8Format:
    """One 8-bit float format: its field widths, exponent bias and family
    (``"ieee"``, ``"fn"`` or ``"fnuz"``; see the module doc)."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    family: str

    @property
    def max_bits(self) -> int:
        """The bit pattern of the largest finite value."""
        return {"ieee": self.inf_bits - 1, "fn": 0x7E, "fnuz": 0x7F}[self.family]

    @property
    def nan_bits(self) -> int:
        """The canonical NaN a conversion gives."""
        return 0x80 if self.family == "fnuz" else 0x7F

    @property
    def inf_bits(self) -> int:
        """The bit pattern of +infinity (``ieee`` only)."""
        return ((1 << self.exponent_bits) - 1) << self.mantissa_bits

    @property
    def min_exponent(self) -> int:
        """The unbiased exponent of the smallest normal value."""
        return 1 - self.bias

    def is_nan(self, bits: np.ndarray) -> np.ndarray:
        """Which of the uint8 patterns ``bits`` are NaN."""
        bits = np.asarray(bits, np.uint8)
        if self.family == "fnuz":
            return bits == 0x80
        magnitude = bits & 0x7F
        return magnitude > self.inf_bits if self.family == "ieee" else magnitude == 0x7F


FP8_FORMATS = {f.name: f for f in (
    Fp8Format("f8e4nv", 4, 3, 7, "fn"),
    Fp8Format("f8e5", 5, 2, 15, "ieee"),
    Fp8Format("f8e4b15", 4, 3, 15, "fn"),
    Fp8Format("f8e4b8", 4, 3, 8, "fnuz"),
    Fp8Format("f8e5b16", 5, 2, 16, "fnuz"),
)}


def fp8_format(t) -> Fp8Format:
    """The format of fp8 scalar type ``t``."""
    return FP8_FORMATS[t.name]


# --------------------------------------------------------------------------- #
# Decoding: bits -> float32 (exact)
# --------------------------------------------------------------------------- #

def _decode_table(fmt: Fp8Format) -> np.ndarray:
    """The float32 of each of the 256 patterns, NaNs as quiet NaNs carrying the pattern."""
    bits = np.arange(256, dtype=np.uint32)
    m = fmt.mantissa_bits
    exponent = ((bits >> m) & ((1 << fmt.exponent_bits) - 1)).astype(np.int64)
    mantissa = (bits & ((1 << m) - 1)).astype(np.float64)
    magnitude = np.where(exponent == 0, mantissa * 2.0 ** (fmt.min_exponent - m),
                         (1.0 + mantissa / 2 ** m) * 2.0 ** (exponent - fmt.bias))
    values = np.where(bits & 0x80, -magnitude, magnitude).astype(np.float32)
    if fmt.family == "ieee":
        values[(bits & 0x7F) == fmt.inf_bits] *= np.inf
    nan = fmt.is_nan(bits.astype(np.uint8))
    values.view(np.uint32)[nan] = _QUIET_NAN32 | bits[nan]
    return values


_DECODE = {name: _decode_table(fmt) for name, fmt in FP8_FORMATS.items()}


def decode(bits: np.ndarray, t) -> np.ndarray:
    """fp8 patterns (uint8) of type ``t`` as float32 values (exact)."""
    return _DECODE[t.name][np.asarray(bits, np.uint8)]


def to_bits(x32: np.ndarray, t) -> np.ndarray:
    """The patterns of float32 values that are fp8 values of type ``t``
    (``decode``'s inverse; a NaN gives the pattern it carries, or the
    canonical NaN when it carries none of ``t``'s)."""
    x32 = np.asarray(x32, np.float32)
    bits = encode(x32, t, "rtz")  # exact; and keeps f8e5's infinities
    carried = (x32.view(np.uint32) & 0xFF).astype(np.uint8)
    keep = np.isnan(x32) & fp8_format(t).is_nan(carried)
    return np.where(keep, carried, bits)


# --------------------------------------------------------------------------- #
# Encoding: float -> bits, rounded once
# --------------------------------------------------------------------------- #

_SOURCES = {  # numpy float dtype -> (unsigned view, mantissa bits, exponent bias)
    np.dtype(np.float32): (np.uint32, 23, 127),
    np.dtype(np.float64): (np.uint64, 52, 1023),
}


def encode(x: np.ndarray, t, rounding: str = "rtne") -> np.ndarray:
    """Float values ``x`` (float16 to float64) as fp8 patterns (uint8) of
    type ``t``, rounded once (``"rtne"`` or ``"rtz"``) and saturated as the
    module doc says.  Integer steps on the source's bits, the same ones a
    backend's lowering takes."""
    fmt = fp8_format(t)
    x = np.asarray(x)
    if x.dtype != np.float64:
        x = x.astype(np.float32)
    view, ms, source_bias = _SOURCES[x.dtype]
    width = 8 * x.dtype.itemsize
    raw = x.view(view).astype(np.uint64)
    sign = (raw >> np.uint64(width - 1)).astype(np.uint8)
    magnitude = raw & np.uint64((1 << (width - 1)) - 1)
    exponent_field = (magnitude >> np.uint64(ms)).astype(np.int64)
    fraction = magnitude & np.uint64((1 << ms) - 1)
    significand = np.where(exponent_field != 0, fraction | np.uint64(1 << ms), fraction)
    exponent = np.maximum(exponent_field, 1) - source_bias  # the exponent of significand's bit ms
    m = fmt.mantissa_bits
    drop = np.minimum(ms - m + np.maximum(fmt.min_exponent - exponent, 0), ms + 2).astype(np.uint64)
    kept = significand >> drop
    if rounding == "rtne":
        rest = significand & ((np.uint64(1) << drop) - np.uint64(1))
        half = np.uint64(1) << (drop - np.uint64(1))
        kept = kept + ((rest > half) | ((rest == half) & (kept & np.uint64(1) == 1))).astype(np.uint64)
    elif rounding != "rtz":
        raise ValueError(f"unknown rounding {rounding!r}: expected 'rtne' or 'rtz'")
    result = (np.maximum(exponent - fmt.min_exponent, 0) << m) + kept.astype(np.int64)
    result = np.minimum(result, fmt.max_bits)
    infinite = magnitude == np.uint64(((1 << (width - 1)) - 1) ^ ((1 << ms) - 1))
    if fmt.family == "ieee" and rounding == "rtz":
        result = np.where(infinite, fmt.inf_bits, result)
    result = result.astype(np.uint8) | (sign << 7)
    if fmt.family == "fnuz":
        result = np.where(result == 0x80, np.uint8(0), result)
    return np.where(np.isnan(x), np.uint8(fmt.nan_bits), result).astype(np.uint8)


def round_fp8(x: np.ndarray, t, rounding: str = "rtne") -> np.ndarray:
    """Float values ``x`` rounded to fp8 type ``t``, held as float32 (the interpreter's form)."""
    return decode(encode(x, t, rounding), t)
