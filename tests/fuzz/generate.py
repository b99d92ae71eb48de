"""Hypothesis strategies for fuzz programs and their inputs.

Programs grow one op at a time from a pool of typed values (loads, ``pid``,
the scalar ``s``); each op draws operands the op accepts, so every program
type-checks by construction, and hypothesis shrinks a failing one op by op.

Error accounting (``Val.err``) depends on where the program runs: on the host
only float reductions, scans and ``exp`` may differ from the model; on a GPU
every float op may (approximate division, contracted FMAs).  An inexact float
never feeds an op whose result could jump (a comparison, a float -> int cast,
``argmax``, a branch) or scale its error (``*``, ``/``, ``sqrt``).

Shifts of mixed signedness follow Triton's rule (``ops.shift_right``: the
left operand's own signedness picks the shift).  Not generated (each has its
own tests): stores of a lower-rank value through a higher-rank pointer (a
compile error; every store here is broadcast to the tile first), int ->
pointer casts and ``print``.
"""
from __future__ import annotations

import dataclasses
import math

import ml_dtypes
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .dtypes import ALL, FLOATS, INTS, UINTS, eps, int_arg_type, numpy_type, promote, sum_type
from .ops import (ATOMICS, BINARY, REDUCE_RESULT, UNARY, Atomic, Binary, Branch, Cast, Load, Loop, Reduce, Scan,
                  Store, Unary, Val, Where, binary_types)
from .program import Array, Program

HOST, GPU = "host", "gpu"
BLOCKS = {1: (1, 2, 4, 8, 16, 32, 64), 2: (1, 2, 4, 8, 16), 3: (1, 2, 4)}
# The int argument `s`: small (1 is specialised), or typed int64 / uint64 by its size.
SCALAR_ARGS = st.one_of(st.integers(-3, 3), st.sampled_from((2**31, -2**40 - 3, 2**63 + 5, 2**64 - 1)))
GPU_SLOW_OPS = ("truediv", "sqrt")  # approximate on a GPU (a few ulps)
# float32 exp on a GPU is ex2.approx(x * log2(e)), as in Triton: rounding the product
# costs |x| / 2 ulps of the result (|x| < 89 before it overflows), ex2 two more.
GPU_EXP_ULPS = 48


class Builder:
    """The program being drawn: the tile, the value pool, the ops so far."""

    def __init__(self, draw, mode: str, blocks: tuple, s: int):
        self.draw, self.mode, self.blocks = draw, mode, blocks
        self.pool = [Val("pid", "int32", ()), Val("s", int_arg_type(s), ())]
        self.ops: list = []

    def name(self) -> str:
        return f"v{len(self.ops)}"

    def add(self, op) -> None:
        self.ops.append(op)
        if hasattr(op, "out"):
            self.pool.append(op.out)

    def pick(self, ok=lambda v: True):
        """A pool value satisfying ``ok``, or None; half the time one of the newest
        three, so that ops chain into deep expressions."""
        choices = [v for v in self.pool if ok(v)]
        if not choices:
            return None
        return self.draw(st.sampled_from(choices[-3:] if self.draw(st.booleans()) else choices))

    def leaves(self) -> list:
        """Computed values no later op reads (the ones worth storing), newest last."""
        read = {v.name for op in self.ops for v in operands(op)}
        return [v for v in self.pool if v.name not in read and v.name not in ("pid", "s")]

    def own_error(self, op: str, dtype: str, count: int = 1) -> float:
        """The error an op adds to a float result of ``dtype`` in this mode."""
        if dtype not in FLOATS:
            return 0.0
        if op in ("sum", "cumsum"):
            return count * eps(dtype)
        if self.mode == HOST:
            return 2 * eps(dtype) if op == "exp" else 0.0
        if op == "exp":
            return GPU_EXP_ULPS * eps(dtype)
        return 4 * eps(dtype) if op in GPU_SLOW_OPS else eps(dtype) if op in ("add", "sub", "mul", "fmod") else 0.0


def operands(op) -> list:
    """The pool values an op reads."""
    return [getattr(op, f.name) for f in dataclasses.fields(op)
            if f.name != "out" and isinstance(getattr(op, f.name), Val)]


def exact(v: Val) -> bool:
    return v.err == 0


def join_dims(*vals: Val) -> tuple:
    """The dims of an elementwise op's result (scalars broadcast to anything)."""
    tiles = [v.dims for v in vals if v.dims]
    return tuple(any(d) for d in zip(*tiles)) if tiles else ()


# --------------------------------------------------------------------------- #
# One builder per op kind: None when the pool has no fitting operands
# --------------------------------------------------------------------------- #

def literal_for(b: Builder, dtype: str):
    """A Python number that keeps ``dtype`` (unsigned: non-negative), or a float for an int."""
    if dtype in FLOATS or b.draw(st.integers(0, 3)) == 0:
        return b.draw(st.sampled_from((0.5, -1.5, 2.0, 3.25)))
    return b.draw(st.integers(0 if dtype in UINTS else -5, 5))


SIGNEDNESS_MATTERS = ("shl", "shr", "truediv", "floordiv", "mod")


def signedness_allowed(name: str, a: Val, other) -> bool:
    """Two int tiles of different signedness (bool counts as signed): ``/ // %`` refuse
    them (a clear error, as Triton does); shifts take them (``ops.shift_right``).
    ``b | 1`` of a bool divisor is an int32, and Triton shifts a bool as unsigned: no bools here."""
    if name not in SIGNEDNESS_MATTERS or not isinstance(other, Val):
        return True
    if "int1" in (a.dtype, other.dtype):
        return False
    if a.dtype not in INTS or other.dtype not in INTS or name in ("shl", "shr"):
        return True
    return (a.dtype in UINTS) == (other.dtype in UINTS)


def binary(b: Builder):
    name = b.draw(st.sampled_from(sorted(BINARY)))
    spec = BINARY[name]
    strict = spec.discrete or spec.multiplies

    def fits(x: Val, y) -> bool:
        p = promote(x.dtype, y.dtype) if isinstance(y, Val) else binary_types(name, x.dtype, y)[0]
        return (p in spec.dtypes and signedness_allowed(name, x, y)
                and not (strict and (x.err or getattr(y, "err", 0))))

    a = b.pick(lambda v: v.dtype in spec.dtypes + ("int1",))
    if a is None:
        return None
    other = literal_for(b, a.dtype) if a.dtype != "int1" and b.draw(st.booleans()) else b.pick(lambda v: fits(a, v))
    if other is None or not fits(a, other):
        return None
    _, out_type = binary_types(name, a.dtype, other.dtype if isinstance(other, Val) else other)
    err = a.err + getattr(other, "err", 0.0) + b.own_error(name, out_type)
    dims = join_dims(a, other) if isinstance(other, Val) else a.dims
    return Binary(Val(b.name(), out_type, dims, err), name, a, other)


def unary(b: Builder):
    name = b.draw(st.sampled_from(sorted(UNARY)))
    strict = name in ("sqrt", "exp")
    a = b.pick(lambda v: v.dtype in UNARY[name][2] and not (strict and v.err))
    if a is None:
        return None
    return Unary(Val(b.name(), a.dtype, a.dims, a.err + b.own_error(name, a.dtype)), name, a)


def cast(b: Builder):
    to = b.draw(st.sampled_from(ALL))
    jumps = to not in FLOATS  # float -> int / bool
    a = b.pick(lambda v: not (jumps and v.err))
    return None if a is None else Cast(Val(b.name(), to, a.dims, a.err), a)


def where(b: Builder):
    cond = b.pick(lambda v: v.dtype == "int1")
    x, y = b.pick(), b.pick()
    if cond is None:
        return None
    return Where(Val(b.name(), promote(x.dtype, y.dtype), join_dims(cond, x, y), x.err + y.err), cond, x, y)


def reduce(b: Builder):
    kind = b.draw(st.sampled_from(("sum", "max", "min", "argmax")))
    a = b.pick(lambda v: v.dims and (kind == "sum" or v.dtype != "int1") and not (kind == "argmax" and v.err))
    if a is None:
        return None
    axis = b.draw(st.one_of(st.none(), st.integers(0, len(a.dims) - 1))) if kind != "argmax" else \
        b.draw(st.integers(0, len(a.dims) - 1))
    axes = range(len(a.dims)) if axis is None else (axis,)
    count = math.prod(b.blocks[i] if a.dims[i] else 1 for i in axes)
    out_type = REDUCE_RESULT[kind](a.dtype)
    dims = () if axis is None else tuple(d and i != axis for i, d in enumerate(a.dims))
    out = Val(b.name(), out_type, dims, a.err + b.own_error(kind, out_type, count))
    return Reduce(out, kind, a, axis, b.draw(st.booleans()))


def scan(b: Builder):
    a = b.pick(lambda v: v.dims)
    if a is None:
        return None
    axis = b.draw(st.integers(0, len(a.dims) - 1))
    out_type = sum_type(a.dtype)
    count = b.blocks[axis] if a.dims[axis] else 1
    return Scan(Val(b.name(), out_type, a.dims, a.err + b.own_error("cumsum", out_type, count)), a, axis)


def loop(b: Builder):
    init = b.pick(lambda v: v.dtype != "int1")
    if init is None:
        return None
    op = b.draw(st.sampled_from(("add", "sub", "maximum")))
    # an int carried value only takes ints: a float step would make `.to` a float -> int cast
    x = b.pick(lambda v: v.dtype != "int1" and (init.dtype in FLOATS or v.dtype in INTS))
    trips = b.draw(st.integers(0, 3))
    add_index = x.dtype in INTS and b.draw(st.booleans())
    err = init.err + trips * (x.err + b.own_error(op, init.dtype))
    return Loop(Val(b.name(), init.dtype, (True,) * len(b.blocks), err), init, op, x, trips, add_index)


def branch(b: Builder):
    cond = b.pick(lambda v: v.dims == () and v.dtype != "int1" and exact(v))
    x = b.pick()
    y = b.pick(lambda v: not (x.dtype not in FLOATS and v.dtype in FLOATS and v.err))
    cmp = b.draw(st.sampled_from((">", "==", "<")))
    return Branch(Val(b.name(), x.dtype, (True,) * len(b.blocks), max(x.err, y.err)), cond, cmp, x, y)


OP_KINDS = (binary, binary, binary, unary, cast, where, reduce, scan, loop, branch)


# --------------------------------------------------------------------------- #
# Programs and their inputs
# --------------------------------------------------------------------------- #

@st.composite
def programs(draw, mode: str = HOST, max_ops: int = 8) -> Program:
    """A random well-typed program (no inputs yet) for ``mode`` (``host`` or ``gpu``)."""
    rank = draw(st.sampled_from((1, 2, 2, 2, 3)))
    blocks = tuple(draw(st.sampled_from(BLOCKS[rank])) for _ in range(rank))
    sizes = (draw(st.integers(1, 2 * blocks[0] + 1)),) + tuple(draw(st.integers(1, n)) for n in blocks[1:])
    s = draw(SCALAR_ARGS)
    b = Builder(draw, mode, blocks, s)
    inputs = [load_input(b, i) for i in range(draw(st.integers(1, 3)))]
    for _ in range(draw(st.integers(1, max_ops))):
        op = None
        for _attempt in range(3):  # an op kind the pool has no operands for: draw another
            op = op or draw(st.sampled_from(OP_KINDS))(b)
        if op is not None:
            b.add(op)
    add_outputs(b)
    return Program(blocks, sizes, tuple(inputs), tuple(b.ops), s)


def load_input(b: Builder, i: int) -> Array:
    """Draw an input array (dtype, the axes it spans) and add its masked load to the program."""
    rank = len(b.blocks)
    dtype = b.draw(st.sampled_from(ALL))
    axes = tuple(a for a in range(rank) if b.draw(st.booleans())) or (b.draw(st.integers(0, rank - 1)),)
    array = Array(f"in{i}", dtype, axes)
    dims = tuple(a in axes for a in range(rank))
    b.add(Load(Val(b.name(), dtype, dims), array.name, axes, other_for(b, dtype)))
    return array


def other_for(b: Builder, dtype: str):
    """``other=``: a number of the loaded dtype (never outside its range)."""
    if dtype == "int1":
        return b.draw(st.booleans())
    if dtype in FLOATS:
        return b.draw(st.sampled_from((0.0, -1.0, 2.5, float("-inf"))))
    return b.draw(st.integers(0 if dtype in UINTS else -4, 4))


def add_outputs(b: Builder) -> None:
    """Store the newest value and up to two more nobody reads; maybe combine one
    atomically into few slots."""
    leaves = b.leaves()
    stored = [leaves[-1]] + [v for v in leaves[:-1] if b.draw(st.booleans())][:2]
    for i, v in enumerate(stored):
        b.ops.append(Store(f"out{i}", v))
    kind = b.draw(st.sampled_from(sorted(ATOMICS)))
    counted = b.pick(lambda v: v in leaves and v.dtype in ATOMICS[kind][1] and exact(v))
    if counted is not None and b.draw(st.booleans()):
        b.ops.append(Atomic(kind, f"hits_{kind}", counted, b.draw(st.integers(1, 5))))


def elements(dtype: str):
    """Values of ``dtype``: small ones (ties, zeros, negatives) and the whole range."""
    if dtype == "int1":
        return st.booleans()
    if dtype in INTS:
        info = np.iinfo(dtype)
        return st.one_of(st.integers(max(-8, int(info.min)), 8), st.integers(int(info.min), int(info.max)))
    width = 16 if dtype == "float16" else 64 if dtype == "float64" else 32
    special = st.sampled_from((0.0, -0.0, float("inf"), float("-inf"), float("nan")))
    return st.one_of(st.floats(-100, 100, width=width), st.integers(-4, 4).map(float), special)


@st.composite
def inputs_for(draw, program: Program) -> dict:
    """Input arrays for ``program``, by name (bf16 drawn as float32, then rounded)."""
    arrays = {}
    for a in program.inputs:
        held = np.float32 if a.dtype == "bfloat16" else numpy_type(a.dtype)
        x = draw(hnp.arrays(held, program.shape(a), elements=elements(a.dtype)))
        arrays[a.name] = x.astype(ml_dtypes.bfloat16) if a.dtype == "bfloat16" else x
    return arrays


@st.composite
def cases(draw, mode: str = HOST, max_ops: int = 8) -> tuple:
    """(program, inputs)."""
    program = draw(programs(mode, max_ops))
    return program, draw(inputs_for(program))
