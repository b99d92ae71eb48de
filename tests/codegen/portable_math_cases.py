"""Shared by ``test_portable_math.py`` and ``benchmarks/portable_math_accuracy.py``:
each function of ``PORTABLE_MATH`` compiled through the real ``scalar_math``
path into a host-JIT loop, its reference, the inputs worth trying, and the
error in ulps.

References: for f32, numpy's float64 functions (their error is far below an
f32 ulp, so the error measured is against the correctly rounded result); for
f64, numpy's ``longdouble`` functions where the long double has 64 bits of
significand (x86), and Python's ``math.erf``/``math.erfc`` for erf and erfc
(themselves good to about an ulp: the f64 bounds there are looser).
"""
from __future__ import annotations

import ctypes
import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from llvmlite import ir as llir

from codegen.host_jit import native_function
from codegen.scalar_cases import build_host_loop

from tilec.codegen_llvm.portable_math import PORTABLE_MATH
from tilec.codegen_llvm.scalar_base import MathLibrary
from tilec.ir import ops as ir
from tilec.ir.core import Value
from tilec.ir.types import f32, f64

DTYPES = {"f32": np.float32, "f64": np.float64}
TYPES = {"f32": f32, "f64": f64}
#: numpy's long double carries 64 bits of significand here: an f64 reference.
EXTENDED = np.finfo(np.longdouble).nmant >= 63


def _elementwise(fn: Callable) -> Callable:
    """A Python float function (``math.erf``) on each element, as a float64 array."""
    return lambda *xs: np.array([fn(*(float(v) for v in args)) for args in zip(*xs)], np.float64)


@dataclass(frozen=True)
class Case:
    """One function: its tile IR (``make(T)``), its numpy reference on float64
    or long double arrays, and the range of each operand where its values are
    interesting."""

    name: str
    make: Callable
    reference: Callable
    ranges: tuple

    @property
    def arity(self) -> int:
        return len(self.ranges)


def _unary(cls) -> Callable:
    return lambda t: cls(src=Value(t)).make_results()


def _call(name: str, arity: int = 1) -> Callable:
    return lambda t: ir.MathCall(fn=name, args=[Value(t) for _ in range(arity)]).make_results()


CASES = {c.name: c for c in [
    Case("exp", _unary(ir.Exp), np.exp, ((-110, 90),)),
    Case("exp2", _unary(ir.Exp2), np.exp2, ((-160, 130),)),
    Case("log", _unary(ir.Log), np.log, ((0, 10),)),
    Case("log2", _unary(ir.Log2), np.log2, ((0, 10),)),
    Case("sin", _unary(ir.Sin), np.sin, ((-1e5, 1e5),)),
    Case("cos", _unary(ir.Cos), np.cos, ((-1e5, 1e5),)),
    Case("erf", _unary(ir.Erf), _elementwise(math.erf), ((-6, 6),)),
    Case("expm1", _call("expm1"), np.expm1, ((-30, 90),)),
    Case("log1p", _call("log1p"), np.log1p, ((-1, 10),)),
    Case("log10", _call("log10"), np.log10, ((0, 10),)),
    Case("exp10", _call("exp10"), lambda x: np.power(x.dtype.type(10), x), ((-48, 40),)),
    Case("tanh", _call("tanh"), np.tanh, ((-12, 12),)),
    Case("sinh", _call("sinh"), np.sinh, ((-100, 100),)),
    Case("cosh", _call("cosh"), np.cosh, ((-100, 100),)),
    Case("tan", _call("tan"), np.tan, ((-1e5, 1e5),)),
    Case("atan", _call("atan"), np.arctan, ((-20, 20),)),
    Case("asin", _call("asin"), np.arcsin, ((-1, 1),)),
    Case("acos", _call("acos"), np.arccos, ((-1, 1),)),
    Case("cbrt", _call("cbrt"), np.cbrt, ((-1e3, 1e3),)),
    Case("erfc", _call("erfc"), _elementwise(math.erfc), ((-6, 30),)),
    Case("atan2", _call("atan2", 2), np.arctan2, ((-50, 50), (-50, 50))),
    Case("pow", _call("pow", 2), np.power, ((0, 10), (-40, 40))),
    Case("fmod", lambda t: ir.Rem(lhs=Value(t), rhs=Value(t)).make_results(), np.fmod, ((-1e3, 1e3), (-10, 10))),
]}


@functools.cache
def compiled(name: str, kind: str, math: MathLibrary = PORTABLE_MATH) -> Callable:
    """``CASES[name]`` on ``kind`` through ``scalar_math`` with ``math``
    (``PORTABLE_MATH``), JIT-compiled on this host: numpy arrays in, an array out."""
    case, dtype = CASES[name], DTYPES[kind]
    module = llir.Module()
    symbol = f"portable_{name}_{kind}"
    build_host_loop(module, symbol, case.make(TYPES[kind]), math)
    fnty = ctypes.CFUNCTYPE(None, ctypes.c_int64, *[ctypes.c_void_p] * (case.arity + 1))
    fn = native_function(module, symbol, fnty)

    def run(*xs: np.ndarray) -> np.ndarray:
        xs = [np.ascontiguousarray(x, dtype) for x in xs]
        out = np.empty(len(xs[0]), dtype)
        fn(len(out), *[x.ctypes.data for x in xs], out.ctypes.data)
        return out
    return run


def reference(name: str, kind: str, *xs: np.ndarray) -> np.ndarray:
    """The reference values (float64 for f32; long double where it is wider for f64)."""
    case = CASES[name]
    wide = np.longdouble if kind == "f64" and EXTENDED and name not in ("erf", "erfc") else np.float64
    with np.errstate(all="ignore"):
        return case.reference(*(x.astype(wide) for x in xs))


def ulp_errors(got: np.ndarray, ref: np.ndarray, kind: str) -> np.ndarray:
    """The error of each result in ulps of the reference rounded to ``kind``:
    0 where they are equal (NaN for NaN, a zero of the same sign), infinite
    where they differ in kind (a NaN, an infinity or the sign of a zero)."""
    dtype = DTYPES[kind]
    with np.errstate(all="ignore"):
        rounded = ref.astype(dtype)
        signs_differ = np.signbit(got) != np.signbit(rounded)
        same = ((got == rounded) & ~signs_differ) | (np.isnan(got) & np.isnan(rounded))
        spacing = np.spacing(np.abs(rounded)).astype(ref.dtype)
        err = np.abs(got.astype(ref.dtype) - ref) / spacing
        comparable = np.isfinite(rounded) & np.isfinite(got) & ~((got == 0) & (rounded == 0) & signs_differ)
        err = np.where(comparable, err, np.inf)
    return np.where(same, 0.0, err).astype(np.float64)


def edge_values(kind: str) -> np.ndarray:
    """Zeros, infinities, NaN, the extremes and subnormals of ``kind``, and small integers."""
    info = np.finfo(DTYPES[kind])
    base = [0.0, np.inf, np.nan, float(info.tiny), float(info.smallest_subnormal), float(info.max),
            float(info.tiny) / 3, float(info.eps), 1.0, 2.0, 3.0, 0.5, 1e-30, 1e30]
    return np.array(base + [-v for v in base], DTYPES[kind])


def sample(name: str, kind: str, count: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``count`` inputs per operand: uniform over the case's range, log-uniform
    over every magnitude of the type, and ``edge_values``."""
    case, dtype = CASES[name], DTYPES[kind]
    info = np.finfo(dtype)

    def one(lo: float, hi: float) -> np.ndarray:
        uniform = rng.uniform(lo, hi, count // 2)
        logs = rng.uniform(np.log(float(info.smallest_subnormal)), np.log(float(info.max)), count // 2)
        spread = np.exp(logs) * rng.choice([-1.0, 1.0], count // 2)
        edges = edge_values(kind)
        return np.concatenate([uniform, spread, edges, rng.permutation(edges)]).astype(dtype)
    return [one(lo, hi) for lo, hi in case.ranges]
