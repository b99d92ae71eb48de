"""Shared host-array references, kernel builders, settings and strategies for the
reference-interpreter tests (tests/ir/test_interpret_*.py).

Kernels are written in the IR text form.  Most tests run a 1-D elementwise
kernel over ``n`` ragged elements in blocks of 16, so every case has several
programs in one batch and a partly masked last block.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from helpers import values
from tilec.ir.interpret import interpret
from tilec.ir.parser import parse_function

PROPERTY = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
FEW = settings(PROPERTY, max_examples=6)
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


def odd_double(x: Fraction) -> float:
    """``x`` rounded to odd in float64: of the two doubles around an inexact ``x``, the one
    with an odd significand.  Rounding that once more to a type of at most 24 bits is
    the correct rounding of ``x`` itself (no double-rounding error)."""
    d = float(x)
    if Fraction(d) == x:
        return d
    other = float(np.nextafter(d, np.inf if x > Fraction(d) else -np.inf))
    return d if np.float64(d).view(np.uint64) & 1 else other


def ref_cast(x, src: str, dst: str, rtz: bool = False) -> np.ndarray:
    if dst == "i1":
        return x != 0
    if dst in FLOATS:
        to_double = float if dst == "f64" else (lambda v: odd_double(Fraction(v)))  # f64: one rounding
        wide = x.astype(np.float64) if src in FLOATS else np.array([to_double(int(v)) for v in x])
        return ref_round(wide, dst, rtz)
    if src in FLOATS:
        info = np.iinfo(HELPER_NAME[dst])
        clamp = [0 if math.isnan(v) else min(max(math.trunc(v), info.min), info.max) if math.isfinite(v)
                 else (info.max if v > 0 else info.min) for v in x.astype(np.float64)]
        return np.array(clamp, dtype=object)
    return wrap(exact_ints(x), HELPER_NAME[dst])


# --------------------------------------------------------------------------- #
# Kernel text
# --------------------------------------------------------------------------- #

@functools.lru_cache(maxsize=None)  # parsing dominates a small kernel's run time
def kernel(args: str, body: str, name: str = "k"):
    return parse_function(f"func @{name}({args}) {{{body}\n}}\n")


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


def elementwise_kernel(ins: tuple, out: str, body: str, block: int = BLOCK):
    """``out[i] = body(a0[i], a1[i], ...)`` for ``i < n``; ``body`` defines ``%r`` and may
    use ``{B}`` (block), ``{T}`` (first input's tile type) and ``{R}`` (the result's)."""
    args = ", ".join(f"%p{i}: ptr<{t}>" for i, t in enumerate(ins))
    text = lanes(block)
    for i, t in enumerate(ins):
        text += pointer_to(f"p{i}", t, block) + f"\n  %a{i} = load %p{i}_at, %mask, _ : tile<{block}x{t}>"
    text += "\n" + body.format(B=block, T=f"tile<{block}x{ins[0]}>", R=f"tile<{block}x{out}>")
    text += pointer_to("pout", out, block) + "\n  store %pout_at, %r, %mask"
    return kernel(f"{args}, %pout: ptr<{out}>, %n: i32", text)


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
