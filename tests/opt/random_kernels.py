"""A hypothesis strategy for random *runnable* kernels, built with ``Builder``.

Each kernel loads a tile ``x`` (1-D or a ragged 2-D reshape), mixes it with a
scalar argument ``s`` and constants chosen to trigger folds and identities
(0, 1, -1, -0.0, NaN, extremes) through elementwise int or float ops,
compares and selects, shape chains of splats, ``if``s on the scalar, and
``for`` loops (trip count ``n`` may be 0) whose bodies use both loop and outer
values; then stores the last ``STORED`` values it computed.
``KernelCase.run(fn)`` interprets any version of the kernel on the drawn
inputs and returns what it stored.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from tilec import ir
from tilec.ir import Builder, Function
from tilec.ir.interp_dtypes import bf16_bits, from_memory, memory_dtype
from tilec.ir.interpret import interpret

TYPES = ("i8", "i16", "i32", "i64", "u8", "u32", "u64", "f16", "bf16", "f32", "f64")
SHAPES = ((8,), (16,), (2, 4), (4, 2), (1, 8), (2, 8))
INT_BINARY = (ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Rem, ir.And, ir.Or, ir.Xor, ir.Shl, ir.Shr,
              ir.Maximum, ir.Minimum)
FLOAT_BINARY = (ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Rem, ir.Maximum, ir.Minimum)
INT_UNARY = (ir.Neg, ir.Not, ir.Abs)
FLOAT_UNARY = (ir.Neg, ir.Abs, ir.Floor, ir.Sqrt)
PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")
STORED = 3  # the last values computed are stored: enough to observe most ops, few enough to leave dead code


def _special_values(t: ir.ScalarType) -> list:
    if t.is_float:
        return [0.0, -0.0, 1.0, -1.0, float("nan"), float("inf"), -float("inf"), 65504.0]
    lo = -(1 << (t.bits - 1)) if t.is_signed else 0
    hi = lo + (1 << t.bits) - 1
    return [0, 1, 2, lo, hi] + ([-1] if t.is_signed else [])


def scalar_values(t: ir.ScalarType):
    """Python values of type ``t``: the special ones mostly, any others too."""
    if t.is_float:
        width = 16 if t.name == "f16" else 32 if t.name in ("bf16", "f32") else 64
        anything = st.floats(width=width)
    else:
        lo = -(1 << (t.bits - 1)) if t.is_signed else 0
        anything = st.integers(lo, lo + (1 << t.bits) - 1)
    special = st.sampled_from(_special_values(t))
    return st.one_of(special, special, anything)  # two to one: the edge cases are the point


class _Generator:
    """Appends random ops of element type ``t`` and tile shape ``shape`` to a builder.

    Each kernel draws a small palette of binary ops and constant values and
    sticks to it ("swarm" testing): the same few ops and values then meet
    often enough to exercise folds, identities and CSE together.
    """

    def __init__(self, draw, b: Builder, t: ir.ScalarType, shape: tuple, s: ir.Value, n: ir.Value):
        self.draw, self.b, self.t, self.shape, self.s, self.n = draw, b, t, shape, s, n
        self.tile_type = ir.TileType(shape, t)
        self.binaries = draw(st.lists(st.sampled_from(FLOAT_BINARY if t.is_float else INT_BINARY),
                                      min_size=1, max_size=3, unique=True))
        self.values = draw(st.lists(scalar_values(t), min_size=1, max_size=3))

    def constant(self) -> ir.Value:
        """A constant tile, written directly or as a splat chain (canonicalize's food)."""
        value = self.draw(st.sampled_from(self.values))
        if self.draw(st.booleans()):
            return self.b.value(ir.Constant, value=value, type=self.tile_type)
        return self.splat(self.b.value(ir.Constant, value=value, type=self.t))

    def splat(self, scalar: ir.Value) -> ir.Value:
        """``scalar`` as a tile, through expand_dims + broadcast for 2-D shapes half the time."""
        if len(self.shape) == 1 or self.draw(st.booleans()):
            return self.b.value(ir.Splat, src=scalar, shape=self.shape)
        row = self.b.value(ir.Splat, src=scalar, shape=self.shape[1:])
        wide = self.b.value(ir.ExpandDims, src=row, axis=0)
        return self.b.value(ir.Broadcast, src=wide, shape=self.shape)

    def operand(self, pool: list) -> ir.Value:
        """A value of the pool (often a recent one), or a new constant, which joins
        the pool so that later ops combine constants with each other too."""
        if self.draw(st.integers(0, 2)) == 0:
            pool.append(self.constant())
            return pool[-1]
        if self.draw(st.integers(0, 5)) == 0:
            return self.splat(self.s)
        return self.draw(st.sampled_from(pool[-3:] if self.draw(st.booleans()) else pool))

    def step(self, pool: list, depth: int) -> None:
        """Add one computed value (or a loop's results) to ``pool``."""
        kind = self.draw(st.sampled_from(["binary"] * 4 + ["unary", "select", "cast", "loop", "if"]))
        if kind == "loop" and depth == 0:
            pool.extend(self.loop(pool))
        elif kind == "if" and depth == 0:
            pool.append(self.branch(pool))
        elif kind == "unary":
            cls = self.draw(st.sampled_from(FLOAT_UNARY if self.t.is_float else INT_UNARY))
            pool.append(self.b.value(cls, src=self.operand(pool)))
        elif kind == "select":
            cond = self.b.value(ir.Compare, lhs=self.operand(pool), rhs=self.operand(pool),
                                pred=self.draw(st.sampled_from(PREDICATES)))
            pool.append(self.b.value(ir.Select, cond=cond, a=self.operand(pool), b=self.operand(pool)))
        elif kind == "cast":  # to the same type: an identity for canonicalize
            pool.append(self.b.value(ir.Cast, src=self.operand(pool), to=self.t))
        else:
            self.binary(pool)

    def binary(self, pool: list) -> None:
        cls = self.draw(st.sampled_from(self.binaries))
        extra = {"propagate_nan": self.draw(st.booleans())} if cls in (ir.Maximum, ir.Minimum) else {}
        pool.append(self.b.value(cls, lhs=self.operand(pool), rhs=self.operand(pool), **extra))

    def loop(self, pool: list) -> list:
        """A ``for`` over ``range(0, n)`` carrying one or two tiles; its results."""
        i32 = ir.i32
        zero, one = (self.b.value(ir.Constant, value=v, type=i32) for v in (0, 1))
        inits = [self.operand(pool) for _ in range(self.draw(st.integers(1, 2)))]
        loop = self.b.create(ir.For, lower=zero, upper=self.n, step=one, inits=inits)
        iv = loop.body.add_arg(i32, "i")
        carried = [loop.body.add_arg(v.type, "acc") for v in inits]
        with self.b.at(loop.body):
            inner = pool + carried + [self.splat(self.b.value(ir.Cast, src=iv, to=self.t))]
            for _ in range(self.draw(st.integers(1, 4))):
                self.step(inner, depth=1)
            yielded = [self.draw(st.sampled_from(inner[-3:])) for _ in carried]
            self.b.create(ir.Yield, values=yielded)
        loop.make_results()
        return loop.results


    def branch(self, pool: list) -> ir.Value:
        """An ``if`` on the scalar argument choosing between two computed tiles."""
        limit = self.b.value(ir.Constant, value=self.draw(st.sampled_from(self.values)), type=self.t)
        cond = self.b.value(ir.Compare, lhs=self.s, rhs=limit, pred=self.draw(st.sampled_from(PREDICATES)))
        op = self.b.create(ir.If, cond=cond)
        for region in (op.then_body, op.else_body):
            with self.b.at(region):
                inner = list(pool)
                self.step(inner, depth=1)
                self.b.create(ir.Yield, values=[inner[-1]])
        return op.make_results().result


@dataclass
class KernelCase:
    fn: Function
    t: ir.ScalarType
    x: np.ndarray  # memory representation
    n: int
    s: object

    def run(self, fn: Function) -> np.ndarray:
        """What ``fn`` (a version of this kernel) stores, in the compute representation."""
        out = np.zeros(STORED * self.x.size, self.x.dtype)
        interpret(fn, (1,), [out, self.x.copy(), self.n, self.s])
        return from_memory(out, self.t)


def _memory_array(values: list, t: ir.ScalarType) -> np.ndarray:
    if t.name == "bf16":
        return bf16_bits(np.array(values, np.float32))
    return np.array(values, memory_dtype(t))


def _pointers(b: Builder, base: ir.Value, offs: ir.Value, shape: tuple) -> ir.Value:
    return b.value(ir.AddPtr, ptr=b.value(ir.Splat, src=base, shape=shape), offset=offs)


def _store_values(b: Builder, out_ptr: ir.Value, offs: ir.Value, values: list) -> None:
    """Store ``values`` one after the other into ``out``."""
    numel = int(np.prod(ir.shape_of(offs.type)))
    for k, v in enumerate(values):
        at = b.value(ir.Add, lhs=offs, rhs=b.value(ir.Constant, value=k * numel, type=offs.type))
        b.create(ir.Store, ptr=_pointers(b, out_ptr, at, ir.shape_of(offs.type)), value=v)


@st.composite
def kernel_cases(draw) -> KernelCase:
    t = ir.SCALAR_TYPES[draw(st.sampled_from(TYPES))]
    shape = draw(st.sampled_from(SHAPES))
    b = Builder()
    out_ptr, x_ptr = b.block.add_arg(ir.PointerType(t), "out"), b.block.add_arg(ir.PointerType(t), "x")
    n, s = b.block.add_arg(ir.i32, "n"), b.block.add_arg(t, "s")
    offs = b.value(ir.Arange, start=0, end=int(np.prod(shape)))
    if len(shape) > 1:
        offs = b.value(ir.Reshape, src=offs, shape=shape)
    gen = _Generator(draw, b, t, shape, s, n)
    pool = [b.value(ir.Load, ptr=_pointers(b, x_ptr, offs, shape))]
    for _ in range(draw(st.integers(2, 10))):
        gen.step(pool, depth=0)
    _store_values(b, out_ptr, offs, pool[-STORED:])
    fn = Function("random_kernel", b.block, ["out", "x", "n", "s"], [{}, {}, {}, {}])
    xs = draw(st.lists(st.one_of(st.sampled_from(gen.values), scalar_values(t)), min_size=offs.type.numel,
                       max_size=offs.type.numel))
    return KernelCase(fn, t, _memory_array(xs, t), draw(st.integers(0, 3)), draw(scalar_values(t)))


def same_results(got: np.ndarray, want: np.ndarray) -> bool:
    """Bitwise equal ints; floats equal with the same sign (so -0.0 != 0.0), or both NaN."""
    if got.dtype.kind != "f":
        return np.array_equal(got, want)
    both_nan = np.isnan(got) & np.isnan(want)
    return bool(np.all(both_nan | ((got == want) & (np.signbit(got) == np.signbit(want)))))
