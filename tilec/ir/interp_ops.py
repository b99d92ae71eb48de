"""What every pure, region-free op computes, on batched numpy arrays.

Every array carries a leading *batch* axis, one entry per program being
interpreted: a scalar value is ``(B,)``, a tile ``(B, *shape)``.  ``B`` may
be 1 for a value that is the same in every program (constants, ``arange``);
numpy broadcasting does the rest.  Values use the compute representation of
``interp_dtypes``.

``PURE[OpClass](op, operands) -> results`` is filled by ``@evaluates``.
``evaluate_pure`` runs one op on unbatched arrays: the constant folder uses it,
so folding and interpreting can never disagree.

Integer division by zero does not trap on a GPU and gives an unspecified
value; here it is defined as ``x / 0 == -1`` (all bits set) and ``x % 0 == x``.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from tilec.ir import ops as ir
from tilec.ir.math_functions import VALUE
from tilec.ir.interp_dtypes import bitcast, cast, compute_dtype, convert_constant, memory_dtype, round_float
from tilec.ir.types import ScalarType, bf16, elem_type, f16, shape_of
from tilec.rules import registry

PURE, evaluates = registry("Register the decorated ``fn(op, operands) -> results`` for the given op classes.")


def evaluate_pure(op: ir.Op, operands: list) -> list[np.ndarray]:
    """Results of ``op`` on unbatched operand arrays (compute representation)."""
    with np.errstate(all="ignore"):
        results = PURE[type(op)](op, [np.asarray(x)[None] for x in operands])
    return [np.array(r[0]) for r in results]


# --------------------------------------------------------------------------- #
# Integer kernels: wrap like the hardware; never trap
# --------------------------------------------------------------------------- #

def _all_ones(dtype: np.dtype):
    return np.invert(np.zeros((), dtype))


def _c_div(a, b):
    """Quotient truncated toward zero; ``x / 0`` is all ones."""
    zero = b == 0
    safe = np.where(zero, b.dtype.type(1), b)
    q = (a - np.fmod(a, safe)) // safe  # exact division, so floor == truncation
    return np.where(zero, _all_ones(q.dtype), q)


def _c_rem(a, b):
    """Remainder with the sign of the dividend; ``x % 0`` is ``x``."""
    zero = b == 0
    return np.where(zero, a, np.fmod(a, np.where(zero, b.dtype.type(1), b)))


def _shift_amount(b, bits: int, limit: int):
    """Shift counts as unsigned, clamped to ``limit``, in ``b``'s own dtype (so numpy does not promote)."""
    unsigned = b.view(np.dtype(f"u{b.dtype.itemsize}"))
    return np.minimum(unsigned, limit).astype(b.dtype), unsigned >= bits


def _shl(a, b):
    """``a << b``; counts of the bit width or more give 0 (as NVIDIA GPUs clamp the count)."""
    bits = a.dtype.itemsize * 8
    s, big = _shift_amount(b, bits, bits - 1)
    return np.where(big, a.dtype.type(0), np.left_shift(a, s))


def _shr(a, b):
    """Arithmetic shift for signed, logical for unsigned; large counts fill with the sign (or 0)."""
    bits = a.dtype.itemsize * 8
    s, big = _shift_amount(b, bits, bits - 1)
    shifted = np.right_shift(a, s)
    return shifted if a.dtype.kind == "i" else np.where(big, a.dtype.type(0), shifted)


def _umulhi(a, b):
    """High half of the unsigned double-width product, in ``a``'s dtype."""
    bits = a.dtype.itemsize * 8
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    ua, ub = a.view(unsigned).astype(np.uint64), b.view(unsigned).astype(np.uint64)
    high = (ua * ub) >> np.uint64(bits) if bits <= 32 else _umulhi64(ua, ub)
    return high.astype(unsigned).view(a.dtype)


def _umulhi64(a, b):
    """High 64 bits of a 64x64 product from 32-bit halves (no partial sum overflows)."""
    low32, s32 = np.uint64(0xFFFFFFFF), np.uint64(32)
    a_lo, a_hi, b_lo, b_hi = a & low32, a >> s32, b & low32, b >> s32
    hi_lo = a_hi * b_lo
    cross = ((a_lo * b_lo) >> s32) + (hi_lo & low32) + a_lo * b_hi
    return a_hi * b_hi + (hi_lo >> s32) + (cross >> s32)


# --------------------------------------------------------------------------- #
# Float kernels
# --------------------------------------------------------------------------- #

_libm_erf = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x):
    """erf: float64 from libm (about 100 ns an element, but within an ulp); narrower
    floats from ``_erf_series``, whose ~1e-15 error vanishes in their rounding."""
    return _libm_erf(x) if x.dtype == np.float64 else _erf_series(x).astype(x.dtype)


def _erf_series(x):
    """erf in float64 to ~1e-15: a positive series for |x| <= 3, erfc's continued fraction beyond."""
    x64 = np.asarray(x, np.float64)
    a = np.minimum(np.abs(x64), 6.0)  # erf(6) == 1 in float64
    small = np.minimum(a, 3.0)
    term, total = small.copy(), small.copy()
    for n in range(1, 80):  # erf(x) = 2/sqrt(pi) e^-x^2 sum 2^n x^(2n+1) / (2n+1)!!
        term = term * (2 * small * small) / (2 * n + 1)
        total += term
    series = 2 / math.sqrt(math.pi) * np.exp(-small * small) * total
    large = np.maximum(a, 3.0)
    frac = large.copy()
    for k in range(60, 0, -1):  # erfc(x) = e^-x^2/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
        frac = large + (k / 2) / frac
    tail = 1 - np.exp(-large * large) / math.sqrt(math.pi) / frac
    return np.copysign(np.where(a <= 3.0, series, tail), x64)


def _fma_f64_odd(a, b, c):
    """``a*b + c`` in float64 rounded to odd: exact for inputs of 24 significant bits or
    fewer, so one more rounding to f32/f16/bf16 equals a single correctly rounded fma."""
    p = a.astype(np.float64) * b.astype(np.float64)
    c = c.astype(np.float64)
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)  # TwoSum: s + err == p + c exactly
    inexact = (err != 0) & np.isfinite(s)
    truncated = np.where(inexact & (np.signbit(err) != np.signbit(s)), np.nextafter(s, 0.0), s)
    return (truncated.view(np.uint64) | inexact.astype(np.uint64)).view(np.float64)


def _fma(a, b, c, t: ScalarType):
    # float64 has no wider type to round through; it gets two roundings.
    if t.name == "f64":
        return a * b + c
    return round_float(_fma_f64_odd(a, b, c), t)


def _signed_zeros(result, a, b, zeros_of_pair):
    """``-0.0 < +0.0`` (as NVIDIA GPUs' max and min): numpy's answer for a pair of zeros of
    different signs depends on its code path, so the pair's result is set here."""
    both = (a == 0) & (b == 0)
    return np.where(both, zeros_of_pair(a, b), result) if both.any() else result


def _float_max(a, b, propagate_nan=False):
    result = np.maximum(a, b) if propagate_nan else np.fmax(a, b)
    return _signed_zeros(result, a, b, np.add)  # +0 unless both are -0


def _float_min(a, b, propagate_nan=False):
    result = np.minimum(a, b) if propagate_nan else np.fmin(a, b)
    return _signed_zeros(result, a, b, lambda x, y: -(-x - y))  # -0 unless both are +0


def _int_max(a, b, propagate_nan=False):
    return np.maximum(a, b)


def _int_min(a, b, propagate_nan=False):
    return np.minimum(a, b)


def _exactly(divide: Callable) -> Callable:
    """``divide`` taking ``ir.Div``'s ``rounding`` too: the interpreter divides
    exactly (correctly rounded) whatever a backend may do faster."""
    return lambda x, y, rounding="": divide(x, y)


# (float kernel, int kernel) per elementwise op class; None where the type is not accepted.
KERNELS: dict[type, tuple] = {
    ir.Neg: (np.negative, np.negative),
    ir.Not: (None, np.invert),
    ir.Abs: (np.abs, np.abs),
    ir.Exp: (np.exp, None), ir.Exp2: (np.exp2, None), ir.Log: (np.log, None), ir.Log2: (np.log2, None),
    ir.Sqrt: (np.sqrt, None), ir.Rsqrt: (lambda x: np.reciprocal(np.sqrt(x)), None),
    ir.Sin: (np.sin, None), ir.Cos: (np.cos, None), ir.Floor: (np.floor, None), ir.Ceil: (np.ceil, None),
    ir.Erf: (_erf, None),
    ir.Add: (np.add, np.add), ir.Sub: (np.subtract, np.subtract), ir.Mul: (np.multiply, np.multiply),
    ir.Div: (_exactly(np.true_divide), _exactly(_c_div)), ir.Rem: (np.fmod, _c_rem),
    ir.And: (None, np.bitwise_and), ir.Or: (None, np.bitwise_or), ir.Xor: (None, np.bitwise_xor),
    ir.Shl: (None, _shl), ir.Shr: (None, _shr), ir.UMulHi: (None, _umulhi),
    ir.Maximum: (_float_max, _int_max), ir.Minimum: (_float_min, _int_min),
}


# Computed in float64 and rounded, so that the reference is as exact as numpy's float64
# (numpy's float32 versions may be a few ulps off).
_TRANSCENDENTAL = {ir.Exp, ir.Exp2, ir.Log, ir.Log2, ir.Sin, ir.Cos, ir.Rsqrt}


def elementwise_fn(cls: type, t: ScalarType, **attrs) -> Callable:
    """The function computing op class ``cls`` on arrays of element type ``t``.

    f16/bf16 are computed in f32 and rounded after the op (what one GPU
    instruction does), transcendental functions in f64; ``i1`` is computed on
    0/1 bytes and wrapped to one bit.
    """
    float_kernel, int_kernel = KERNELS[cls]
    if t.is_float:
        wide = np.float64 if cls in _TRANSCENDENTAL else np.float32
        if t in (f16, bf16) or (wide == np.float64 and t.name == "f32"):
            return lambda *xs: round_float(float_kernel(*(x.astype(wide) for x in xs), **attrs), t)
        return lambda *xs: float_kernel(*xs, **attrs)
    if t.is_bool:
        return lambda *xs: (int_kernel(*(x.view(np.uint8) for x in xs), **attrs) & 1).astype(bool)
    dtype = compute_dtype(t)
    return lambda *xs: int_kernel(*xs, **attrs).astype(dtype, copy=False)


@evaluates(*KERNELS)
def _elementwise(op, vals):
    return [elementwise_fn(type(op), elem_type(op.results[0].type), **op.attributes)(*vals)]


_PREDICATES = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal}


@evaluates(ir.Compare)
def _compare(op, vals):
    return [_PREDICATES[op.pred](*vals)]


@evaluates(ir.Select)
def _select(op, vals):
    return [np.where(*vals)]


@evaluates(ir.Fma)
def _fma_op(op, vals):
    return [_fma(*vals, elem_type(op.a.type))]


@evaluates(ir.Cast)
def _cast(op, vals):
    return [cast(vals[0], elem_type(op.src.type), op.to, op.rounding)]


@evaluates(ir.Bitcast)
def _bitcast(op, vals):
    return [bitcast(vals[0], elem_type(op.src.type), op.to)]


# --------------------------------------------------------------------------- #
# Constants and shapes (axis 0 is always the batch)
# --------------------------------------------------------------------------- #

@evaluates(ir.Constant)
def _constant(op, vals):
    shape = shape_of(op.type)
    scalar = convert_constant(op.value, elem_type(op.type))
    return [np.broadcast_to(scalar, (1,) + shape)]


@evaluates(ir.Arange)
def _arange(op, vals):
    return [np.arange(op.start, op.end, dtype=np.int32)[None]]


@evaluates(ir.Splat)
def _splat(op, vals):
    src = vals[0]
    return [np.broadcast_to(src.reshape(src.shape + (1,) * len(op.shape)), src.shape + tuple(op.shape))]


@evaluates(ir.Broadcast)
def _broadcast(op, vals):
    return [np.broadcast_to(vals[0], vals[0].shape[:1] + tuple(op.shape))]


@evaluates(ir.ExpandDims)
def _expand_dims(op, vals):
    return [np.expand_dims(vals[0], op.axis + 1)]


@evaluates(ir.Reshape)
def _reshape(op, vals):
    return [vals[0].reshape(vals[0].shape[:1] + tuple(op.shape))]


@evaluates(ir.Permute)
def _permute(op, vals):
    return [vals[0].transpose((0,) + tuple(i + 1 for i in op.order))]


@evaluates(ir.Join)
def _join(op, vals):
    return [np.stack(np.broadcast_arrays(*vals), axis=-1)]


@evaluates(ir.Split)
def _split(op, vals):
    return [vals[0][..., 0], vals[0][..., 1]]


@evaluates(ir.AddPtr)
def _addptr(op, vals):
    ptr, offset = vals
    size = memory_dtype(elem_type(op.ptr.type).elem).itemsize
    return [ptr + np.multiply(offset, size, dtype=np.int64)]


@evaluates(ir.Assume, ir.ConvertLayout)
def _identity(op, vals):
    return [vals[0]]


# --------------------------------------------------------------------------- #
# Named math functions (``math_call``), defined by ``math_functions``
# --------------------------------------------------------------------------- #

@evaluates(ir.MathCall)
def _math_call(op, vals):
    """Float functions: the float64 reference rounded once to the result type
    (or computed in T itself where the function says ``exact_in``); int
    functions: the reference on T's own arrays."""
    f, t = op.function, op.value_type
    out_type = elem_type(op.results[0].type)
    if not t.is_float:
        return [f.reference(*vals).astype(compute_dtype(out_type), copy=False)]
    wide = compute_dtype(t) if f.exact_in else np.float64
    args = [v.astype(wide) if p == VALUE else v.astype(np.int64) for p, v in zip(f.params, vals)]
    result = f.reference(*args)
    if out_type.is_float:
        return [round_float(np.asarray(result), out_type)]
    return [np.asarray(result).astype(compute_dtype(out_type), copy=False)]
