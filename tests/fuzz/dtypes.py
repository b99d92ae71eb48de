"""Triton's dtype rules as the fuzzer's numpy model applies them: which numpy
type holds each tile dtype, binary promotion, the accumulators of reductions,
and casts (wrapping for ints; float -> int only for values in range).

Names are tilec's (``int1`` is bool); bf16 values are ``ml_dtypes.bfloat16``.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

SINTS = ("int8", "int16", "int32", "int64")
UINTS = ("uint8", "uint16", "uint32", "uint64")
INTS = SINTS + UINTS
HALFS = ("float16", "bfloat16")
FLOATS = HALFS + ("float32", "float64")
NUMBERS = INTS + FLOATS
ALL = ("int1",) + NUMBERS


class Undefined(Exception):
    """The generated program does undefined behaviour on these inputs (a float ->
    int cast out of range, ``INT_MIN // -1``, NaN in a max): the case is skipped."""


def numpy_type(dtype: str):
    """The numpy type holding values of the tile dtype ``dtype``."""
    if dtype == "int1":
        return np.dtype(np.bool_)
    if dtype == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


def bits(dtype: str) -> int:
    return 1 if dtype == "int1" else numpy_type(dtype).itemsize * 8


def eps(dtype: str) -> float:
    """The spacing of ``dtype`` at 1: one rounding's relative error, generously."""
    return float(ml_dtypes.finfo(numpy_type(dtype)).eps) if dtype in FLOATS else 0.0


def int_arg_type(value: int) -> str:
    """The dtype a Python int argument gets: int32 when it fits, else int64, else uint64."""
    for dtype in ("int32", "int64", "uint64"):
        info = np.iinfo(dtype)
        if info.min <= value <= info.max:
            return dtype
    raise ValueError(f"{value} does not fit in 64 bits")


def int_promote(a: str, b: str) -> str:
    """C's usual arithmetic conversions, as Triton applies them to two int types."""
    if (a in UINTS) == (b in UINTS):
        return a if bits(a) >= bits(b) else b
    unsigned, signed = (a, b) if a in UINTS else (b, a)
    return unsigned if bits(unsigned) >= bits(signed) else signed


def promote(a: str, b: str) -> str:
    """The dtype Triton computes ``a op b`` in, for two tensors (bool is a signed 1-bit int)."""
    for wide in ("float64", "float32"):
        if wide in (a, b):
            return wide
    if "float16" in (a, b):
        return "float16"
    if "bfloat16" in (a, b):
        return "bfloat16" if a == b else "float32"
    return int_promote(a, b)


def promote_literal(a: str, literal) -> str:
    """The dtype of ``tensor op literal``: a Python number of a lower or equal kind keeps
    the tensor's dtype; a float literal with an int tensor computes in float32."""
    if isinstance(literal, float) and a not in FLOATS:
        return "float32"
    return a


def true_div_type(dtype: str) -> str:
    """``/`` computes in float32 for ints and halfs, else in the float type."""
    return dtype if dtype in ("float32", "float64") else "float32"


def sum_type(dtype: str) -> str:
    """``sum``/``cumsum`` accumulate ints and bools narrower than 32 bits in (u)int32, halfs in f32."""
    if dtype in HALFS:
        return "float32"
    if dtype == "int1" or (dtype in INTS and bits(dtype) < 32):
        return "uint32" if dtype in UINTS else "int32"
    return dtype


def minmax_type(dtype: str) -> str:
    """``max``/``min`` compute values narrower than 32 bits in float32 / int32."""
    if bits(dtype) >= 32:
        return dtype
    return "float32" if dtype in FLOATS else "int32"


def cast(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x.to(dtype)``: ints wrap, ``!= 0`` makes bools, floats round to nearest even;
    a float -> int cast of a NaN or out-of-range value is undefined."""
    x = np.asarray(x)
    if dtype == "int1":
        return x != 0
    if is_float_array(x):  # via float64, which holds every float value exactly
        x64 = x.astype(np.float64)
        if dtype in INTS:
            return float_to_int(x64, dtype)
        x = x64
    with np.errstate(all="ignore"):  # ints wrap, floats overflow to inf
        return x.astype(numpy_type(dtype))


def is_float_array(x: np.ndarray) -> bool:
    return x.dtype.kind == "f" or x.dtype == numpy_type("bfloat16")


def float_to_int(x: np.ndarray, dtype: str) -> np.ndarray:
    """Truncation toward zero of values that fit ``dtype``; anything else is ``Undefined``."""
    info = np.iinfo(dtype)
    t = np.trunc(x)
    top = float(info.max) + 1.0  # a power of two: float(info.max) itself may round up to it
    if not np.isfinite(x).all() or (t < float(info.min)).any() or (t >= top).any():
        raise Undefined(f"float -> {dtype} cast of a value out of range")
    return np.array([int(v) for v in t.ravel()], dtype=dtype).reshape(x.shape)
