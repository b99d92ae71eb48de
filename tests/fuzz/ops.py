"""The ops of a fuzz program: each is a small typed record that knows its two
meanings, the ``tl.*`` source line(s) of the kernel (``source``) and what the
line does to numpy tiles (``evaluate``), so a program cannot mean one thing in
the kernel and another in the model.

Values are tiles of the program's rank: per axis the tile's full size or 1
(broadcast), or scalars (``dims == ()``).  ``Val.err`` bounds how far a value
may drift from the model's (relative to the program's largest magnitude): 0
for values every correct compiler computes exactly, more after float
reductions (reassociation), approximate math or, on a GPU, contracted FMAs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

import numpy as np

from .dtypes import (FLOATS, HALFS, INTS, SINTS, Undefined, bits, cast, minmax_type, numpy_type, promote,
                     promote_literal, sum_type, true_div_type)
from .model import Env

Literal = Union[int, float]


@dataclass(frozen=True)
class Val:
    """A named value of the program: dtype, per-axis full (True) or broadcast (False), error bound."""
    name: str
    dtype: str
    dims: tuple
    err: float = 0.0


def shape_expr(rank: int) -> str:
    """The tile shape as kernel source, ``(B0, B1)``."""
    return "(" + ", ".join(f"B{a}" for a in range(rank)) + ("," if rank == 1 else "") + ")"


def full(v: Val, rank: int) -> str:
    """Source of ``v`` broadcast to the whole tile (as stores and carried values need it)."""
    return v.name if v.dims == (True,) * rank else f"tl.broadcast_to({v.name}, {shape_expr(rank)})"


def operand(x: Union[Val, Literal]) -> str:
    """Source of a value or a Python number (infinities as users write them, ``float("-inf")``)."""
    if isinstance(x, Val):
        return x.name
    return f'float("{x}")' if isinstance(x, float) and not np.isfinite(x) else repr(x)


# --------------------------------------------------------------------------- #
# Binary operators: source format, numpy meaning on promoted arrays, result dtype
# --------------------------------------------------------------------------- #

@dataclass(frozen=True)
class BinarySpec:
    fmt: str                      # {a}, {b}, {w}: the promoted type's bit width - 1 (shift counts)
    ref: Callable                 # (a, b) promoted numpy arrays -> result
    dtypes: tuple                 # operand dtypes it takes (after promotion)
    compute: Callable = lambda d: d  # the dtype it computes in, from the promoted one
    result: Callable = lambda d: d    # the result's dtype, from the computing one
    discrete: bool = False        # an inexact operand could change the result by more than its error
    multiplies: bool = False      # scales the operand's error by the other operand


def c_div(a, b):
    """C division (toward zero); ``INT_MIN // -1`` overflows, which is undefined."""
    x, y = (np.atleast_1d(v).astype(object) for v in np.broadcast_arrays(a, b))
    q = np.abs(x) // np.abs(y)
    q = np.where((x < 0) != (y < 0), -q, q)
    if (q > np.iinfo(a.dtype).max).any():
        raise Undefined("INT_MIN // -1")
    return q.astype(a.dtype).reshape(np.broadcast(a, b).shape)


def c_rem(a, b):
    """C remainder (the sign of the dividend)."""
    q = c_div(a, b)
    with np.errstate(all="ignore"):
        return (a - q * b).astype(a.dtype)


def _maximum(a, b):
    return np.fmax(a, b) if a.dtype.kind not in "iub" else np.maximum(a, b)


def _minimum(a, b):
    return np.fmin(a, b) if a.dtype.kind not in "iub" else np.minimum(a, b)


BOOL_INTS = ("int1",) + INTS
BINARY = {
    "add": BinarySpec("({a} + {b})", np.add, INTS + FLOATS),
    "sub": BinarySpec("({a} - {b})", np.subtract, INTS + FLOATS),
    "mul": BinarySpec("({a} * {b})", np.multiply, INTS + FLOATS, multiplies=True),
    "truediv": BinarySpec("({a} / {b})", np.divide, INTS + FLOATS, true_div_type, multiplies=True),
    "floordiv": BinarySpec("({a} // ({b} | 1))", lambda a, b: c_div(a, b | 1), INTS, discrete=True),
    "mod": BinarySpec("({a} % ({b} | 1))", lambda a, b: c_rem(a, b | 1), INTS, discrete=True),
    "fmod": BinarySpec("({a} % {b})", np.fmod, FLOATS, lambda d: "float32" if d in HALFS else d,
                       multiplies=True, discrete=True),
    "and": BinarySpec("({a} & {b})", np.bitwise_and, BOOL_INTS),
    "or": BinarySpec("({a} | {b})", np.bitwise_or, BOOL_INTS),
    "xor": BinarySpec("({a} ^ {b})", np.bitwise_xor, BOOL_INTS),
    "shl": BinarySpec("({a} << ({b} & {w}))", lambda a, b: np.left_shift(a, b & (a.itemsize * 8 - 1)), INTS),
    "shr": BinarySpec("({a} >> ({b} & {w}))", lambda a, b: np.right_shift(a, b & (a.itemsize * 8 - 1)), INTS),
    "lt": BinarySpec("({a} < {b})", np.less, INTS + FLOATS, result=lambda d: "int1", discrete=True),
    "le": BinarySpec("({a} <= {b})", np.less_equal, INTS + FLOATS, result=lambda d: "int1", discrete=True),
    "eq": BinarySpec("({a} == {b})", np.equal, ("int1",) + INTS + FLOATS, result=lambda d: "int1", discrete=True),
    "ne": BinarySpec("({a} != {b})", np.not_equal, ("int1",) + INTS + FLOATS, result=lambda d: "int1", discrete=True),
    "maximum": BinarySpec("tl.maximum({a}, {b})", _maximum, INTS + FLOATS),
    "minimum": BinarySpec("tl.minimum({a}, {b})", _minimum, INTS + FLOATS),
}


def binary_types(name: str, a: str, b: Union[str, Literal]) -> tuple:
    """(the dtype ``a op b`` computes in, its result dtype)."""
    p = BINARY[name].compute(promote(a, b) if isinstance(b, str) else promote_literal(a, b))
    return p, BINARY[name].result(p)


def apply_binary(name: str, a: np.ndarray, a_type: str, b, b_type: Union[str, Literal]) -> np.ndarray:
    """The numpy meaning of ``a op b`` (``b`` a tile of ``b_type`` or a literal).  The kernel
    fixes a divisor (``| 1``) or shift count (``& w``) up in its own type before promotion;
    doing it after gives the same low bits."""
    p, _ = binary_types(name, a_type, b_type)
    with np.errstate(all="ignore"):
        if name == "shr":
            return shift_right(cast(a, p), cast(np.asarray(b), p), a_type in SINTS)
        return np.asarray(BINARY[name].ref(cast(a, p), cast(np.asarray(b), p)))


def shift_right(a: np.ndarray, b: np.ndarray, signed: bool) -> np.ndarray:
    """Triton's ``>>``: in the promoted type, arithmetic when the LEFT operand's own
    type is signed (``int8 >> uint8`` keeps the sign), logical otherwise."""
    kind = np.dtype(f"{'i' if signed else 'u'}{a.itemsize}")
    count = (b & (a.itemsize * 8 - 1)).astype(kind)
    return np.right_shift(a.view(kind), count).view(a.dtype)


# --------------------------------------------------------------------------- #
# Ops
# --------------------------------------------------------------------------- #

@dataclass(frozen=True)
class Load:
    """``tl.load`` of an input array over ``axes`` of the tile, masked, with ``other``."""
    out: Val
    arg: str
    axes: tuple
    other: Literal

    def source(self, rank: int) -> list:
        return [f"{self.out.name} = tl.load({self.arg} + {offsets(self.axes, rank)}, "
                f"mask={mask(self.axes, rank)}, other={operand(self.other)})"]

    def evaluate(self, env: Env) -> None:
        idx, ok = env.offsets(self.axes), env.mask(self.axes)
        data = env.arrays[self.arg].ravel()
        other = cast(np.asarray(self.other), self.out.dtype)
        env.set(self.out, np.where(ok, data[np.where(ok, idx, 0)], other))


@dataclass(frozen=True)
class Binary:
    out: Val
    op: str
    a: Val
    b: Union[Val, Literal]

    def source(self, rank: int) -> list:
        p, _ = binary_types(self.op, self.a.dtype, self.b.dtype if isinstance(self.b, Val) else self.b)
        expr = BINARY[self.op].fmt.format(a=self.a.name, b=operand(self.b), w=bits(p) - 1)
        return [f"{self.out.name} = {expr}"]

    def evaluate(self, env: Env) -> None:
        b, b_type = (env[self.b], self.b.dtype) if isinstance(self.b, Val) else (self.b, self.b)
        env.set(self.out, apply_binary(self.op, env[self.a], self.a.dtype, b, b_type))


UNARY = {  # name: (source format, numpy meaning, dtypes)
    "neg": ("-{a}", np.negative, INTS + FLOATS),
    "abs": ("tl.abs({a})", np.abs, INTS + FLOATS),
    "invert": ("~{a}", np.invert, BOOL_INTS),
    "sqrt": ("tl.sqrt({a})", np.sqrt, ("float32", "float64")),
    "exp": ("tl.exp({a})", np.exp, ("float32", "float64")),
}


@dataclass(frozen=True)
class Unary:
    out: Val
    op: str
    a: Val

    def source(self, rank: int) -> list:
        return [f"{self.out.name} = " + UNARY[self.op][0].format(a=self.a.name)]

    def evaluate(self, env: Env) -> None:
        with np.errstate(all="ignore"):
            env.set(self.out, np.asarray(UNARY[self.op][1](env[self.a])))


@dataclass(frozen=True)
class Cast:
    out: Val
    a: Val

    def source(self, rank: int) -> list:
        return [f"{self.out.name} = {self.a.name}.to(tl.{self.out.dtype})"]

    def evaluate(self, env: Env) -> None:
        env.set(self.out, cast(env[self.a], self.out.dtype))


@dataclass(frozen=True)
class Where:
    out: Val
    cond: Val
    a: Val
    b: Val

    def source(self, rank: int) -> list:
        return [f"{self.out.name} = tl.where({self.cond.name}, {self.a.name}, {self.b.name})"]

    def evaluate(self, env: Env) -> None:
        p = self.out.dtype
        env.set(self.out, np.where(env[self.cond], cast(env[self.a], p), cast(env[self.b], p)))


REDUCE_ACC = {"sum": sum_type, "max": minmax_type, "min": minmax_type, "argmax": minmax_type}  # computes in
REDUCE_RESULT = {**REDUCE_ACC, "argmax": lambda d: "int32"}


@dataclass(frozen=True)
class Reduce:
    """``tl.sum/max/min/argmax`` along ``axis`` (None: all), re-expanded to the tile's rank."""
    out: Val
    kind: str
    a: Val
    axis: Optional[int]
    keep_dims: bool

    def source(self, rank: int) -> list:
        if self.axis is None:
            return [f"{self.out.name} = tl.{self.kind}({self.a.name})"]
        if self.keep_dims:
            return [f"{self.out.name} = tl.{self.kind}({self.a.name}, axis={self.axis}, keep_dims=True)"]
        return [f"{self.out.name} = tl.expand_dims(tl.{self.kind}({self.a.name}, axis={self.axis}), {self.axis})"]

    def evaluate(self, env: Env) -> None:
        x = env[self.a]
        if self.kind != "sum" and x.dtype.kind not in "iub" and np.isnan(x.astype(np.float64)).any():
            raise Undefined(f"NaN in a float {self.kind}")  # which NaN or index wins is not pinned down
        acc = cast(x, REDUCE_ACC[self.kind](self.a.dtype))
        keep = self.axis is not None
        if self.kind == "argmax":
            env.set(self.out, np.expand_dims(np.argmax(acc, axis=self.axis), self.axis).astype(np.int32))
            return
        fn = {"sum": np.sum, "max": np.max, "min": np.min}[self.kind]
        env.note_scale(np.sum(np.abs(acc.astype(np.float64)), axis=self.axis))
        with np.errstate(all="ignore"):
            env.set(self.out, np.asarray(fn(acc, axis=self.axis, keepdims=keep)).astype(acc.dtype))


@dataclass(frozen=True)
class Scan:
    """``tl.cumsum`` along ``axis``."""
    out: Val
    a: Val
    axis: int

    def source(self, rank: int) -> list:
        return [f"{self.out.name} = tl.cumsum({self.a.name}, axis={self.axis})"]

    def evaluate(self, env: Env) -> None:
        acc = cast(env[self.a], sum_type(self.a.dtype))
        env.note_scale(np.sum(np.abs(acc.astype(np.float64)), axis=self.axis))
        with np.errstate(all="ignore"):
            env.set(self.out, np.cumsum(acc, axis=self.axis, dtype=acc.dtype))


@dataclass(frozen=True)
class Loop:
    """A ``for`` loop carrying ``out`` (started from ``init``): ``out = (out op x [+ i]).to(dtype)``."""
    out: Val
    init: Val
    op: str
    x: Val
    trips: int
    add_index: bool

    def source(self, rank: int) -> list:
        step = f"({self.x.name} + i)" if self.add_index else self.x.name
        expr = BINARY[self.op].fmt.format(a=self.out.name, b=step, w=0)
        return [f"{self.out.name} = {full(self.init, rank)}.to(tl.{self.out.dtype})",
                f"for i in range({self.trips}):",
                f"    {self.out.name} = {expr}.to(tl.{self.out.dtype})"]

    def evaluate(self, env: Env) -> None:
        acc = cast(np.broadcast_to(env[self.init], env.tile), self.out.dtype)
        step, step_type = env[self.x], self.x.dtype
        for i in range(self.trips):
            if self.add_index:
                step, step_type = apply_binary("add", env[self.x], self.x.dtype, np.int32(i), "int32"), \
                    binary_types("add", self.x.dtype, "int32")[1]
            acc = cast(apply_binary(self.op, acc, self.out.dtype, step, step_type), self.out.dtype)
            env.note_scale(acc)
        env.set(self.out, acc)


@dataclass(frozen=True)
class Branch:
    """``if cond <cmp> 0`` on a scalar, choosing between two tiles (``b`` cast to ``a``'s dtype)."""
    out: Val
    cond: Val
    cmp: str
    a: Val
    b: Val

    def source(self, rank: int) -> list:
        return [f"if {self.cond.name} {self.cmp} 0:",
                f"    {self.out.name} = {full(self.a, rank)}",
                "else:",
                f"    {self.out.name} = {full(self.b, rank)}.to(tl.{self.a.dtype})"]

    def evaluate(self, env: Env) -> None:
        taken = {">": np.greater, "==": np.equal, "<": np.less}[self.cmp](env[self.cond], 0)
        chosen = env[self.a] if bool(taken) else cast(env[self.b], self.a.dtype)
        env.set(self.out, np.broadcast_to(chosen, env.tile))


@dataclass(frozen=True)
class Store:
    """``tl.store`` of ``a`` (broadcast to the tile) to the output ``arg``, masked."""
    arg: str
    a: Val

    def source(self, rank: int) -> list:
        axes = tuple(range(rank))
        return [f"tl.store({self.arg} + {offsets(axes, rank)}, {full(self.a, rank)}, mask={mask(axes, rank)})"]

    def evaluate(self, env: Env) -> None:
        axes = tuple(range(len(env.tile)))
        idx, ok = np.broadcast_to(env.offsets(axes), env.tile), np.broadcast_to(env.mask(axes), env.tile)
        env.arrays[self.arg].ravel()[idx[ok]] = np.broadcast_to(env[self.a], env.tile)[ok]


ATOMICS = {  # name: (numpy ufunc, dtypes): each is order-independent on these dtypes
    "add": (np.add, ("int32", "int64", "uint32", "uint64")),
    "max": (np.maximum, ("int32", "int64", "uint32", "uint64", "float32", "float64")),
    "min": (np.minimum, ("int32", "int64", "uint32", "uint64", "float32", "float64")),
    "and": (np.bitwise_and, ("int32", "int64", "uint32", "uint64")),
    "or": (np.bitwise_or, ("int32", "int64", "uint32", "uint64")),
    "xor": (np.bitwise_xor, ("int32", "int64", "uint32", "uint64")),
}


@dataclass(frozen=True)
class Atomic:
    """``tl.atomic_<kind>`` of ``a`` into ``bins`` slots of ``arg`` (colliding addresses, so
    the slots see many programs' lanes; only kinds whose result has no order)."""
    kind: str
    arg: str
    a: Val
    bins: int

    def source(self, rank: int) -> list:
        axes = tuple(range(rank))
        return [f"tl.atomic_{self.kind}({self.arg} + {offsets(axes, rank)} % {self.bins}, {full(self.a, rank)}, "
                f"mask={mask(axes, rank)})"]

    def evaluate(self, env: Env) -> None:
        axes = tuple(range(len(env.tile)))
        idx, ok = np.broadcast_to(env.offsets(axes), env.tile), np.broadcast_to(env.mask(axes), env.tile)
        values = np.broadcast_to(env[self.a], env.tile)[ok]
        if values.dtype.kind == "f" and np.isnan(values).any():
            raise Undefined("NaN in a float atomic max/min")
        with np.errstate(all="ignore"):
            ATOMICS[self.kind][0].at(env.arrays[self.arg], idx[ok] % self.bins, values)


# --------------------------------------------------------------------------- #
# Index expressions shared by loads and stores
# --------------------------------------------------------------------------- #

def axis_index(a: int, rank: int) -> str:
    """``r{a}`` expanded to the tile's rank: ``r1[None, :]``."""
    if rank == 1:
        return f"r{a}"
    return f"r{a}[" + ", ".join(":" if i == a else "None" for i in range(rank)) + "]"


def offsets(axes: tuple, rank: int) -> str:
    """Row-major offsets into an array spanning ``axes`` (sizes ``n{a}``)."""
    terms = []
    for k, a in enumerate(axes):
        stride = "".join(f" * n{b}" for b in axes[k + 1:])
        terms.append(axis_index(a, rank) + stride)
    return "(" + " + ".join(terms) + ")"


def mask(axes: tuple, rank: int) -> str:
    return " & ".join(f"({axis_index(a, rank)} < n{a})" for a in axes)
