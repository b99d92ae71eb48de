"""Float arithmetic written as formulas: the values a portable math function
computes with (``Num``, ``Int``, ``Mask``) carry their ``Emitter``, so that
``fma(-k, ln2_hi, x)`` or ``r * r + 0.5`` emits the LLVM instructions in the
order the formula is written, one rounding per operation (no fast-math
flags: LLVM may neither reassociate nor contract them).

Everything here is branch-free and vectorizes on every target: selects,
bit casts, integer shifts and adds, the intrinsics ``llvm.fma``,
``llvm.fabs``, ``llvm.copysign`` and ``llvm.sqrt``, and loads from a
constant table (``constant_table``, ``Emitter.word``: a gather where the
loop is vectorized).  Rounding to an integer
is the add-and-subtract of ``1.5 * 2^(P-1)`` (``round_small``), not
``llvm.rint``, and scaling by a power of two builds the power from its bits
(``pow2``), not ``llvm.ldexp``: x86-64 without SSE4.1 calls the C library
for those two (which would stop LLVM vectorizing the caller's loop); a
backend whose target has the instruction asks for ``llvm.ldexp``
(``native_scale``), which gives the same bits.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence, Union

from llvmlite import ir as llir

from tilec.codegen_llvm.scalar_base import overloaded
from tilec.rules import registry


@dataclass(frozen=True)
class Format:
    """An IEEE binary format's facts: ``precision`` bits of significand
    (hidden bit included), ``bias`` of the exponent, the integer type of
    the same width."""

    kind: str
    precision: int
    bias: int
    float_type: llir.Type
    int_type: llir.IntType

    @property
    def mantissa_bits(self) -> int:
        return self.precision - 1

    @property
    def width(self) -> int:
        return self.int_type.width


F32 = Format("f32", 24, 127, llir.FloatType(), llir.IntType(32))
F64 = Format("f64", 53, 1023, llir.DoubleType(), llir.IntType(64))
FORMATS = {str(F32.float_type): F32, str(F64.float_type): F64}

Operand = Union["Num", float, int]


class Emitter:
    """Builds one function's body: ``b`` the builder, ``fmt`` the format of its
    float type, ``call(name, *args)`` a sibling function of the library;
    ``native_scale``: the target scales by a power of two in one instruction
    (``scale``)."""

    def __init__(self, builder: llir.IRBuilder, fmt: Format, call: Callable[..., "Num"],
                 native_scale: bool = False):
        self.b, self.fmt, self.call, self.native_scale = builder, fmt, call, native_scale

    # Constants and conversions -------------------------------------------
    def num(self, value: Operand) -> "Num":
        return value if isinstance(value, Num) else Num(self, llir.Constant(self.fmt.float_type, float(value)))

    def int(self, value: Union["Int", int]) -> "Int":
        return value if isinstance(value, Int) else Int(self, llir.Constant(self.fmt.int_type, int(value)))

    def bits(self, x: "Num") -> "Int":
        return Int(self, self.b.bitcast(x.v, self.fmt.int_type))

    def from_bits(self, i: "Int") -> "Num":
        return Num(self, self.b.bitcast(i.v, self.fmt.float_type))

    def to_float(self, i: "Int") -> "Num":
        """A (small) integer as a float, exactly."""
        return Num(self, self.b.sitofp(i.v, self.fmt.float_type))

    def in_format(self, value: Union["Num", "Int"]) -> Union["Num", "Int"]:
        """``value`` of another emitter's format as this one's: a float
        extended or rounded, an integer zero-extended or truncated."""
        b, ours, theirs = self.b, self.fmt.width, value.e.fmt.width
        if isinstance(value, Num):
            convert = (lambda v, t: v) if ours == theirs else b.fpext if theirs < ours else b.fptrunc
            return Num(self, convert(value.v, self.fmt.float_type))
        convert = (lambda v, t: v) if ours == theirs else b.zext if theirs < ours else b.trunc
        return Int(self, convert(value.v, self.fmt.int_type))

    def word(self, table: llir.GlobalVariable, index: "Int") -> "Int":
        """Element ``index`` of ``table`` (a constant array of unsigned
        integers, ``constant_table``), zero-extended."""
        p = self.b.gep(table, [llir.Constant(llir.IntType(64), 0), index.v], inbounds=True)
        return Int(self, self.b.zext(self.b.load(p), self.fmt.int_type))

    # Intrinsics ----------------------------------------------------------
    def _intrinsic(self, name: str, *args: Operand) -> "Num":
        vals = [self.num(a).v for a in args]
        t = self.fmt.float_type
        fn = self.b.module.globals.get(overloaded(name, t))
        if fn is None:
            fn = llir.Function(self.b.module, llir.FunctionType(t, [t] * len(vals)), overloaded(name, t))
        return Num(self, self.b.call(fn, vals))

    def fma(self, a: Operand, b: Operand, c: Operand) -> "Num":
        """``a * b + c`` rounded once."""
        return self._intrinsic("llvm.fma", a, b, c)

    def abs(self, x: "Num") -> "Num":
        return self._intrinsic("llvm.fabs", x)

    def copysign(self, magnitude: Operand, sign: Operand) -> "Num":
        return self._intrinsic("llvm.copysign", magnitude, sign)

    def sqrt(self, x: "Num") -> "Num":
        return self._intrinsic("llvm.sqrt", x)

    # Choices -------------------------------------------------------------
    def select(self, mask: "Mask", a, b):
        """``a`` where ``mask`` holds, else ``b`` (floats, ints or masks alike;
        two Python ints make an ``Int``, other Python numbers a ``Num``)."""
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            a = self.int(a) if isinstance(a, int) and isinstance(b, int) else self.num(a)
        kind = type(a) if isinstance(a, (Num, Int, Mask)) else type(b)
        lift = self.num if kind is Num else self.int if kind is Int else None
        av, bv = (x if isinstance(x, kind) else lift(x) for x in (a, b))
        return kind(self, self.b.select(mask.v, av.v, bv.v))

    def isnan(self, x: "Num") -> "Mask":
        return Mask(self, self.b.fcmp_unordered("uno", x.v, x.v))

    def eq(self, a: Operand, b: Operand) -> "Mask":
        return Mask(self, self.b.fcmp_ordered("==", self.num(a).v, self.num(b).v))

    def ne(self, a: Operand, b: Operand) -> "Mask":
        """Ordered: false when either is NaN."""
        return Mask(self, self.b.fcmp_ordered("!=", self.num(a).v, self.num(b).v))

    def signbit(self, x: "Num") -> "Mask":
        return self.bits(x) < 0

    # Shapes every function uses ------------------------------------------
    def poly(self, x: Operand, coeffs: Sequence[float]) -> "Num":
        """``c0 + c1 x + c2 x^2 ...`` by Horner's rule, one fma a step."""
        acc = self.num(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, c)
        return acc

    def round_small(self, x: "Num") -> tuple["Num", "Int"]:
        """``rint(x)`` as a float and as an integer, for ``|x| < 2^(P-2)``
        (beyond, finite garbage; never poison)."""
        shifter = 1.5 * 2.0 ** self.fmt.mantissa_bits
        t = x + shifter
        return t - shifter, self.bits(t) - self.bits(self.num(shifter))

    def pow2(self, k: "Int") -> "Num":
        """``2^k`` for ``1 - bias <= k <= bias``."""
        return self.from_bits((k + self.fmt.bias) << self.fmt.mantissa_bits)

    def scale(self, p: "Num", k: "Int") -> "Num":
        """``p * 2^k`` rounded once, for ``|k| <= 2 bias - 2``: two exact halves
        of the scaling, so that a subnormal result is rounded only by the last;
        under ``native_scale``, ``llvm.ldexp``, which rounds once as well
        (AVX-512's ``vscalefps``: one instruction for eight)."""
        if self.native_scale:
            t, i = self.fmt.float_type, self.fmt.int_type
            name = f"llvm.ldexp.{self.fmt.kind}.i{i.width}"
            fn = self.b.module.globals.get(name) or llir.Function(self.b.module, llir.FunctionType(t, [t, i]), name)
            return Num(self, self.b.call(fn, [p.v, k.v]))
        half = k >> 1
        return p * self.pow2(half) * self.pow2(k - half)

    def clamp(self, x: "Num", lo: float, hi: float) -> "Num":
        """``x`` held to ``[lo, hi]`` by ordered compares (a NaN stays NaN)."""
        x = self.select(x < lo, lo, x)
        return self.select(x > hi, hi, x)

    def keep_zero(self, x: "Num", result: "Num") -> "Num":
        """``x`` itself where it is +-0 (the sign of zero through odd functions)."""
        return self.select(self.eq(x, 0.0), x, result)


def constant_table(module: llir.Module, name: str, words: Sequence[int], bits: int) -> llir.GlobalVariable:
    """An internal constant array ``name`` of ``module`` holding ``words``
    (unsigned, ``bits`` wide), made on first use, in the address space where
    the module's data layout puts globals (``G<n>``; 0 without one)."""
    table = module.globals.get(name)
    if table is None:
        space = re.search(r"(?:^|-)G(\d+)", module.data_layout or "")
        t = llir.ArrayType(llir.IntType(bits), len(words))
        table = llir.GlobalVariable(module, t, name, addrspace=int(space.group(1)) if space else 0)
        table.initializer = llir.Constant(t, list(words))
        table.global_constant, table.linkage, table.unnamed_addr = True, "internal", True
    return table


def two_sum(a: "Num", b: "Num") -> tuple["Num", "Num"]:
    """``a + b`` rounded and its rounding error, exactly (Knuth's, any order of size)."""
    total = a + b
    b_part = total - a
    return total, (a - (total - b_part)) + (b - b_part)


class _Value:
    """What ``Num`` and ``Int`` share: arithmetic with another value of the
    kind or a Python number (lifted by ``_lift``) emits one instruction,
    ``OPS`` naming the builder's method for each operator."""

    __slots__ = ("e", "v")
    OPS: dict[str, str] = {}

    def __init__(self, e: Emitter, v: llir.Value):
        self.e, self.v = e, v

    def _lift(self, other):
        raise NotImplementedError

    def _compare(self, op: str, a: llir.Value, b: llir.Value) -> llir.Value:
        raise NotImplementedError

    def _bin(self, op: str, other, swap: bool = False):
        a, b = self, self._lift(other)
        if swap:
            a, b = b, a
        return type(self)(self.e, getattr(self.e.b, self.OPS[op])(a.v, b.v))

    def _cmp(self, op: str, other) -> "Mask":
        return Mask(self.e, self._compare(op, self.v, self._lift(other).v))

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __lt__(self, o): return self._cmp("<", o)
    def __le__(self, o): return self._cmp("<=", o)
    def __gt__(self, o): return self._cmp(">", o)
    def __ge__(self, o): return self._cmp(">=", o)


class Num(_Value):
    """A float value (comparisons ordered: false where either is NaN)."""

    __slots__ = ()
    OPS = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}

    def _lift(self, other) -> "Num":
        return self.e.num(other)

    def _compare(self, op, a, b):
        return self.e.b.fcmp_ordered(op, a, b)

    def __truediv__(self, o): return self._bin("div", o)
    def __rtruediv__(self, o): return self._bin("div", o, True)
    def __neg__(self): return Num(self.e, self.e.b.fneg(self.v))


class Int(_Value):
    """An integer of the float's width (signed where it matters: ``>>`` and comparisons)."""

    __slots__ = ()
    OPS = {"add": "add", "sub": "sub", "mul": "mul", "and": "and_", "or": "or_", "xor": "xor",
           "shl": "shl", "ashr": "ashr", "lshr": "lshr", "udiv": "udiv"}

    def _lift(self, other) -> "Int":
        return self.e.int(other)

    def _compare(self, op, a, b):
        return self.e.b.icmp_signed(op, a, b)

    def __and__(self, o): return self._bin("and", o)
    def __or__(self, o): return self._bin("or", o)
    def __xor__(self, o): return self._bin("xor", o)
    def __lshift__(self, o): return self._bin("shl", o)
    def __rshift__(self, o): return self._bin("ashr", o)

    def udiv(self, o) -> "Int":
        return self._bin("udiv", o)

    def lshr(self, o) -> "Int":
        """Shifted right, zeros in at the top (``>>`` shifts the sign in)."""
        return self._bin("lshr", o)

    def equals(self, o) -> "Mask":
        return self._cmp("==", o)


class Mask:
    """A truth value per element (an ``i1``)."""

    __slots__ = ("e", "v")

    def __init__(self, e: Emitter, v: llir.Value):
        self.e, self.v = e, v

    def __and__(self, o): return Mask(self.e, self.e.b.and_(self.v, o.v))
    def __or__(self, o): return Mask(self.e, self.e.b.or_(self.v, o.v))
    def __invert__(self): return Mask(self.e, self.e.b.not_(self.v))


BODIES, defines = registry(
    "Register the decorated ``body(e, *args) -> Num`` as the portable function of the given C names.")
