"""Axis analysis: what each integer or pointer value looks like along each dim.

For every value, ``analyze_axes(fn)`` gives an ``AxisInfo`` with, per
dimension (one entry for a scalar), three powers of two:

* ``contiguity[d] = c``: cut dim ``d`` into aligned chunks ``[k*c, (k+1)*c)``;
  inside a chunk each element is the previous one plus 1 (for pointers: plus
  one element);
* ``divisibility[d] = v``: every element whose index along ``d`` is a multiple
  of ``c`` (the first of its chunk) is a multiple of ``v`` -- for pointers, the
  byte address is; with ``c == 1`` that is every element;
* ``constancy[d] = s``: inside aligned chunks of ``s`` along ``d`` the elements
  are equal.

Contiguity and constancy never exceed the dimension's size; divisibility is
capped at ``2**30`` (a 0 counts as divisible by it).  This is Triton's AxisInfo
idea; a backend's layout pass and the codegen use it to pick vector loads
and stores (``AxisInfo.vector_width``, a mask's ``constancy``).

Rules are a table ``RULES: op class -> rule``, one small function each.  An op
without a rule, and every value the rules cannot see through (loads,
reductions, ``while`` loops, region arguments), gets the conservative 1s.
Carried values of ``for`` loops are found by a fixed point of the meet of the
initial and the yielded values.

Integer arithmetic wraps; every rule holds modulo ``2**bits``.  ``div`` and
``rem`` by a power of two also need a non-negative dividend: the analysis
tracks which values are known non-negative (unsigned types, ``arange`` from
0, program ids, non-negative constants, and sums and products of such; like
Triton, it assumes offsets arithmetic does not overflow a signed type).

It is an analysis, so the IR is never changed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tilec import ir
from tilec.ir.core import Block, Function, Op, Value
from tilec.ir.types import PointerType, ScalarType, elem_type, shape_of
from tilec.rules import registry

MAX_DIVISIBILITY = 2 ** 30
# Rounds of the loop fixed point before giving up on a loop's carried values.
MAX_LOOP_ROUNDS = 32


@dataclass(frozen=True)
class AxisInfo:
    """Per-dimension contiguity, divisibility and constancy (module docstring)."""

    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.contiguity)

    def vector_width(self, dim: int, elem_bytes: int, max_bytes: int) -> int:
        """How many consecutive elements along ``dim`` one thread may access as
        one vector of at most ``max_bytes`` (the target's widest access), for
        a pointer value with these facts (divisibility in bytes).  Layout
        choice and codegen both ask this; a mask narrows it further to its
        ``constancy[dim]`` (equal mask bits)."""
        by_alignment = max(1, self.divisibility[dim] // elem_bytes)
        return max(1, min(self.contiguity[dim], by_alignment, max(1, max_bytes // elem_bytes)))


def analyze_axes(fn: Function) -> dict[Value, AxisInfo]:
    """The ``AxisInfo`` of every value of ``fn`` (arguments, results, region arguments)."""
    a = _Analysis()
    attrs = fn.arg_attrs or [{}] * len(fn.args)
    for arg, d in zip(fn.args, attrs):
        a.info[arg] = _seed_arg(arg, d)
    a.block(fn.body)
    return a.info


# --------------------------------------------------------------------------- #
# Power-of-two helpers
# --------------------------------------------------------------------------- #

def _pow2_dividing(n: int) -> int:
    """The largest power of two dividing ``n`` (0 -> ``MAX_DIVISIBILITY``), capped."""
    n = abs(int(n))
    return MAX_DIVISIBILITY if n == 0 else min(n & -n, MAX_DIVISIBILITY)


def _is_pow2(n) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n > 0 and n & (n - 1) == 0


def _dims(v: Value) -> tuple[int, ...]:
    """The sizes of ``v``'s dims; a scalar has one dim of size 1."""
    return shape_of(v.type) or (1,)


def _conservative(v: Value) -> AxisInfo:
    n = len(_dims(v))
    return AxisInfo((1,) * n, (1,) * n, (1,) * n)


def _make(v: Value, contiguity, divisibility, constancy) -> AxisInfo:
    """An ``AxisInfo`` for ``v``, capping contiguity and constancy at the dim sizes."""
    dims = _dims(v)
    return AxisInfo(tuple(max(1, min(c, n)) for c, n in zip(contiguity, dims)),
                    tuple(max(1, min(x, MAX_DIVISIBILITY)) for x in divisibility),
                    tuple(max(1, min(s, n)) for s, n in zip(constancy, dims)))


def _div_at(info: AxisInfo, d: int, c: int) -> int:
    """What divides the elements at indices that are multiples of ``c`` along ``d``.

    Those are chunk starts of ``info`` when ``c`` is a multiple of its
    contiguity; otherwise they sit inside a chunk, an offset that is a
    multiple of ``c`` after its (divisible) start.
    """
    own = info.divisibility[d]
    return own if c >= info.contiguity[d] else min(own, c)


def _div_all(info: AxisInfo) -> int:
    """What divides every element."""
    return max(_div_at(info, d, 1) for d in range(info.rank))


def _meet(x: AxisInfo, y: AxisInfo) -> AxisInfo:
    """An ``AxisInfo`` true of both ``x`` and ``y`` (of one type)."""
    cont = tuple(min(a, b) for a, b in zip(x.contiguity, y.contiguity))
    div = tuple(min(_div_at(x, d, c), _div_at(y, d, c)) for d, c in enumerate(cont))
    const = tuple(min(a, b) for a, b in zip(x.constancy, y.constancy))
    return AxisInfo(cont, div, const)


def _elem_bytes(t) -> int:
    e = elem_type(t)
    return e.elem.bytes if isinstance(e, PointerType) else e.bytes


def _seed_arg(arg: Value, attrs: dict) -> AxisInfo:
    div = attrs.get("divisibility", 1)
    if isinstance(elem_type(arg.type), PointerType):
        div = max(div, _elem_bytes(arg.type))
    n = len(_dims(arg))
    return _make(arg, (1,) * n, (div,) * n, (1,) * n)


# --------------------------------------------------------------------------- #
# The walk
# --------------------------------------------------------------------------- #

class _Analysis:
    def __init__(self):
        self.info: dict[Value, AxisInfo] = {}
        self.const: dict[Value, object] = {}   # values known to be one constant everywhere
        self.nonneg: set[Value] = set()        # integer values known to be >= 0

    def get(self, v: Value) -> AxisInfo:
        got = self.info.get(v)
        if got is None:
            got = self.info[v] = _conservative(v)
        return got

    def is_nonneg(self, v: Value) -> bool:
        e = elem_type(v.type)
        return v in self.nonneg or (isinstance(e, ScalarType) and e.kind in ("uint", "bool"))

    def block(self, block: Block) -> None:
        for a in block.args:
            self.info.setdefault(a, _conservative(a))
        for op in block.ops:
            self.op(op)

    def op(self, op: Op) -> None:
        rule = RULES.get(type(op))
        got = rule(self, op) if rule is not None else None
        if got is None:
            for r in op.regions:
                self.block(r)
            got = [_conservative(r) for r in op.results]
        elif isinstance(got, AxisInfo):
            got = [got]
        for r, i in zip(op.results, got):
            self.info[r] = i


RULES, rule = registry("Register the decorated ``fn(analysis, op) -> AxisInfo | list | None`` for the given op classes.")


# --------------------------------------------------------------------------- #
# Sources
# --------------------------------------------------------------------------- #

@rule(ir.Constant)
def _constant(a: _Analysis, op: ir.Constant):
    v = op.result
    value = op.value
    if isinstance(value, bool) or isinstance(value, int):
        div = _pow2_dividing(int(value))
        a.const[v] = int(value)
        if int(value) >= 0:
            a.nonneg.add(v)
    else:
        div = 1
    dims = _dims(v)
    return _make(v, (1,) * len(dims), (div,) * len(dims), dims)


@rule(ir.Arange)
def _arange(a: _Analysis, op: ir.Arange):
    if op.start >= 0:
        a.nonneg.add(op.result)
    return _make(op.result, (op.end - op.start,), (_pow2_dividing(op.start),), (1,))


@rule(ir.ProgramId, ir.NumPrograms)
def _program_id(a: _Analysis, op: Op):
    a.nonneg.add(op.result)
    return _make(op.result, (1,), (1,), (1,))


# --------------------------------------------------------------------------- #
# Shapes
# --------------------------------------------------------------------------- #

def _keep_facts(a: _Analysis, src: Value, dst: Value) -> None:
    """``dst`` holds only values of ``src``: it keeps its constant and sign facts."""
    if src in a.const:
        a.const[dst] = a.const[src]
    if a.is_nonneg(src):
        a.nonneg.add(dst)


@rule(ir.Splat)
def _splat(a: _Analysis, op: ir.Splat):
    _keep_facts(a, op.src, op.result)
    div = a.get(op.src).divisibility[0]
    n = len(op.shape)
    return _make(op.result, (1,) * n, (div,) * n, tuple(op.shape))


@rule(ir.Broadcast)
def _broadcast(a: _Analysis, op: ir.Broadcast):
    _keep_facts(a, op.src, op.result)
    src = a.get(op.src)
    old = shape_of(op.src.type)
    cont, div, const = [], [], []
    for d, (m, n) in enumerate(zip(old, op.shape)):
        if m == n:
            cont.append(src.contiguity[d]), div.append(src.divisibility[d]), const.append(src.constancy[d])
        else:  # a size-1 dim repeated: one (divisible) value along it
            cont.append(1), div.append(src.divisibility[d]), const.append(n)
    return _make(op.result, cont, div, const)


@rule(ir.ExpandDims)
def _expand_dims(a: _Analysis, op: ir.ExpandDims):
    _keep_facts(a, op.src, op.result)
    src = a.get(op.src)
    scalar = not shape_of(op.src.type)
    cont = [] if scalar else list(src.contiguity)
    div = [] if scalar else list(src.divisibility)
    const = [] if scalar else list(src.constancy)
    # Every element starts a chunk of the new size-1 dim.
    cont.insert(op.axis, 1), div.insert(op.axis, _div_all(src)), const.insert(op.axis, 1)
    return _make(op.result, cont, div, const)


@rule(ir.Permute)
def _permute(a: _Analysis, op: ir.Permute):
    _keep_facts(a, op.src, op.result)
    src = a.get(op.src)
    return _make(op.result, [src.contiguity[i] for i in op.order], [src.divisibility[i] for i in op.order],
                 [src.constancy[i] for i in op.order])


@rule(ir.ConvertLayout)
def _convert_layout(a: _Analysis, op: ir.ConvertLayout):
    _keep_facts(a, op.src, op.result)
    return a.get(op.src)  # the same values, held by other threads


@rule(ir.Assume)
def _assume(a: _Analysis, op: ir.Assume):
    _keep_facts(a, op.src, op.result)
    src = a.get(op.src)
    cont, div, const = list(src.contiguity), list(src.divisibility), list(src.constancy)
    field = {"multiple_of": div, "max_contiguous": cont, "max_constancy": const}[op.kind]
    for d, hint in enumerate(op.values):
        field[d] = max(field[d], hint)
    return _make(op.result, cont, div, const)


# --------------------------------------------------------------------------- #
# Arithmetic
# --------------------------------------------------------------------------- #

def _additive(x: AxisInfo, y: AxisInfo, cont: list[int]) -> tuple[list, list]:
    """Divisibility and constancy of ``x +- y`` given the result's contiguity."""
    div = [min(_div_at(x, d, c), _div_at(y, d, c)) for d, c in enumerate(cont)]
    const = [min(p, q) for p, q in zip(x.constancy, y.constancy)]
    return div, const


def _int_like(v: Value) -> bool:
    e = elem_type(v.type)
    return isinstance(e, PointerType) or e.is_int


@rule(ir.Add, ir.Sub)
def _add_sub(a: _Analysis, op: Op):
    if not _int_like(op.lhs):
        return _elementwise_const(a, op)
    x, y = a.get(op.lhs), a.get(op.rhs)
    cont = [min(x.contiguity[d], y.constancy[d]) for d in range(x.rank)]
    if isinstance(op, ir.Add):
        cont = [max(c, min(y.contiguity[d], x.constancy[d])) for d, c in enumerate(cont)]
        if a.is_nonneg(op.lhs) and a.is_nonneg(op.rhs):
            a.nonneg.add(op.result)
    div, const = _additive(x, y, cont)
    return _make(op.result, cont, div, const)


@rule(ir.Mul)
def _mul(a: _Analysis, op: ir.Mul):
    if not _int_like(op.lhs):
        return _elementwise_const(a, op)
    if a.const.get(op.rhs) == 1:
        _keep_facts(a, op.lhs, op.result)
        return a.get(op.lhs)
    if a.const.get(op.lhs) == 1:
        _keep_facts(a, op.rhs, op.result)
        return a.get(op.rhs)
    if a.is_nonneg(op.lhs) and a.is_nonneg(op.rhs):
        a.nonneg.add(op.result)
    x, y = a.get(op.lhs), a.get(op.rhs)
    cont = [1] * x.rank
    div = [_div_at(x, d, 1) * _div_at(y, d, 1) for d in range(x.rank)]
    const = [min(p, q) for p, q in zip(x.constancy, y.constancy)]
    return _make(op.result, cont, div, const)


def _pow2_divisor(a: _Analysis, v: Value) -> Optional[int]:
    c = a.const.get(v)
    return c if _is_pow2(c) else None


@rule(ir.Div)
def _div(a: _Analysis, op: ir.Div):
    if not _int_like(op.lhs):
        return _elementwise_const(a, op)
    x = a.get(op.lhs)
    p = _pow2_divisor(a, op.rhs)
    if p is None or not a.is_nonneg(op.lhs):
        # Equal dividends still give equal quotients.
        const = [min(s, t) for s, t in zip(x.constancy, a.get(op.rhs).constancy)]
        return _make(op.result, [1] * x.rank, [1] * x.rank, const)
    a.nonneg.add(op.result)
    if p == 1:
        return x
    cont, div, const = [], [], []
    for d in range(x.rank):
        m = min(x.contiguity[d], p)
        # An aligned run x0, x0+1, ..., x0+m-1 (m | x0, m | p) stays in one p-block.
        const.append(max(x.constancy[d], m if _div_at(x, d, m) >= m else 1))
        cont.append(1)
        # Every element (contiguity 1): x0+j with j < c <= p and p | x0 gives x0/p.
        ok = x.contiguity[d] <= p and x.divisibility[d] >= p
        div.append(x.divisibility[d] // p if ok else 1)
    return _make(op.result, cont, div, const)


@rule(ir.Rem)
def _rem(a: _Analysis, op: ir.Rem):
    """``x % y`` for ``x >= 0`` keeps ``x``'s aligned runs that no multiple of
    ``y`` cuts: runs of ``m`` starting at multiples of ``m``, where a power
    of two ``p >= m`` divides ``y`` (``y`` a constant, or constant along the
    dim with known divisibility, as a splat of a ``N % 16 == 0`` argument).

    With a constant ``y`` the analysis must prove ``x >= 0``.  With a runtime
    ``y`` it assumes it, as Triton does: that is the wrap-around index idiom
    (``(pid_n * BN + arange(BN)) % N``), whose ``pid_n`` comes through
    divisions no sign analysis sees through, and a negative index there
    would address memory before the tensor (docs/internals.md)."""
    if not _int_like(op.lhs):
        return _elementwise_const(a, op)
    x, y = a.get(op.lhs), a.get(op.rhs)
    const = [min(s, t) for s, t in zip(x.constancy, y.constancy)]
    exact = _pow2_divisor(a, op.rhs)
    nonneg = a.is_nonneg(op.lhs)
    if nonneg:
        a.nonneg.add(op.result)
    nonneg = nonneg or exact is None
    cont, div = [], []
    for d in range(x.rank):
        p = exact or (_div_at(y, d, 1) if y.constancy[d] >= _dims(op.rhs)[d] else 1)
        m = min(x.contiguity[d], p)
        c = m if nonneg and _div_at(x, d, m) >= m else 1
        cont.append(c)
        # x = k*v gives x rem y = x - q*y: a multiple of min(v, p); 0 when y = p and p | v.
        v = _div_at(x, d, c)
        div.append(MAX_DIVISIBILITY if exact and v >= p else min(v, p))
    return _make(op.result, cont, div, const)


def _elementwise_const(a: _Analysis, op: Op):
    """Only constancy survives an arbitrary elementwise op (floats included)."""
    ins = [a.get(v) for v in op.operands]
    const = [min(i.constancy[d] for i in ins) for d in range(ins[0].rank)]
    return _make(op.result, [1] * len(const), [1] * len(const), const)


@rule(ir.And, ir.Or)
def _and_or(a: _Analysis, op: Op):
    x, y = a.get(op.lhs), a.get(op.rhs)
    pick = max if isinstance(op, ir.And) else min   # x & y keeps either's zero low bits
    div = [pick(_div_at(x, d, 1), _div_at(y, d, 1)) for d in range(x.rank)]
    const = [min(p, q) for p, q in zip(x.constancy, y.constancy)]
    if isinstance(op, ir.And) and (a.is_nonneg(op.lhs) or a.is_nonneg(op.rhs)):
        a.nonneg.add(op.result)
    return _make(op.result, [1] * x.rank, div, const)


@rule(ir.Xor, ir.Maximum, ir.Minimum, ir.Neg, ir.Not, ir.Abs, ir.Exp, ir.Exp2, ir.Log, ir.Log2,
      ir.Sqrt, ir.Rsqrt, ir.Sin, ir.Cos, ir.Floor, ir.Ceil, ir.Erf, ir.Shl, ir.Shr, ir.UMulHi, ir.Fma,
      ir.Bitcast)
def _other_elementwise(a: _Analysis, op: Op):
    return _elementwise_const(a, op)


@rule(ir.Compare)
def _compare(a: _Analysis, op: ir.Compare):
    x, y = a.get(op.lhs), a.get(op.rhs)
    const = [min(p, q) for p, q in zip(x.constancy, y.constancy)]
    e = elem_type(op.lhs.type)
    if isinstance(e, ScalarType) and e.is_int and not e.is_bool:
        # run < bound (or its negation ge), bound > run (or le): with the
        # run's start and the bound multiples of m, a run of m flips nowhere.
        if op.pred in ("lt", "ge"):
            run, bound = x, y
        elif op.pred in ("gt", "le"):
            run, bound = y, x
        else:
            run = bound = None
        if run is not None:
            const = [max(s, _constant_runs(run, bound, d)) for d, s in enumerate(const)]
    return _make(op.result, [1] * len(const), [1] * len(const), const)


def _constant_runs(run: AxisInfo, bound: AxisInfo, d: int) -> int:
    m = min(run.contiguity[d], bound.constancy[d])
    while m > 1 and (_div_at(run, d, m) < m or _div_at(bound, d, m) < m):
        m //= 2
    return m


@rule(ir.Select)
def _select(a: _Analysis, op: ir.Select):
    c, x, y = a.get(op.cond), a.get(op.a), a.get(op.b)
    cont = [min(c.constancy[d], x.contiguity[d], y.contiguity[d]) for d in range(x.rank)]
    div = [min(_div_at(x, d, k), _div_at(y, d, k)) for d, k in enumerate(cont)]
    const = [min(c.constancy[d], x.constancy[d], y.constancy[d]) for d in range(x.rank)]
    if a.is_nonneg(op.a) and a.is_nonneg(op.b):
        a.nonneg.add(op.result)
    return _make(op.result, cont, div, const)


@rule(ir.Cast)
def _cast(a: _Analysis, op: ir.Cast):
    src, dst = elem_type(op.src.type), op.to
    x = a.get(op.src)
    if isinstance(src, PointerType) or isinstance(dst, PointerType):
        return _address_cast(op, src, dst, x)
    if not (src.is_int and dst.is_int) or src.is_bool or dst.is_bool:
        return _make(op.result, [1] * x.rank, [1] * x.rank, x.constancy)
    nonneg = a.is_nonneg(op.src)
    # Divisibility survives wrapping; a run stays a run unless a value changes sign class.
    widening = dst.bits > src.bits or (dst.bits == src.bits and dst.kind == src.kind)
    keeps_runs = widening and (src.kind == dst.kind or nonneg or (src.kind == "uint" and dst.bits > src.bits))
    if nonneg and widening:
        a.nonneg.add(op.result)
    cont = x.contiguity if keeps_runs else (1,) * x.rank
    div = x.divisibility if keeps_runs else tuple(_div_at(x, d, 1) for d in range(x.rank))
    return _make(op.result, cont, div, x.constancy)


def _address_cast(op: ir.Cast, src, dst, x: AxisInfo) -> AxisInfo:
    """A cast to or from a pointer keeps the address, so its alignment (divisibility, in
    bytes both ways) and its equal runs survive.  A run survives only between pointers to
    elements of one size: consecutive ints are one byte apart and consecutive pointers one
    element, so a pointer made from an integer (or from a pointer to another size) is never
    taken for contiguous: no vector access spans lanes whose pointers are unrelated."""
    rank = x.rank
    if not all(isinstance(t, PointerType) or t.bits == 64 for t in (src, dst)):
        return _make(op.result, [1] * rank, [1] * rank, x.constancy)
    if isinstance(src, PointerType) and isinstance(dst, PointerType) and src.elem.bytes == dst.elem.bytes:
        return x
    return _make(op.result, [1] * rank, [_div_at(x, d, 1) for d in range(rank)], x.constancy)


@rule(ir.AddPtr)
def _addptr(a: _Analysis, op: ir.AddPtr):
    p, o = a.get(op.ptr), a.get(op.offset)
    size = _elem_bytes(op.ptr.type)
    cont = [max(min(o.contiguity[d], p.constancy[d]), min(p.contiguity[d], o.constancy[d]))
            for d in range(p.rank)]
    div = [min(_div_at(p, d, c), _div_at(o, d, c) * size) for d, c in enumerate(cont)]
    const = [min(s, t) for s, t in zip(p.constancy, o.constancy)]
    return _make(op.result, cont, div, const)


# --------------------------------------------------------------------------- #
# Control flow
# --------------------------------------------------------------------------- #

@rule(ir.For)
def _for(a: _Analysis, op: ir.For):
    iv, *carried = op.body.args
    lo, step = a.get(op.lower), a.get(op.step)
    a.info[iv] = _make(iv, (1,), (min(lo.divisibility[0], step.divisibility[0]),), (1,))
    if a.is_nonneg(op.lower) and a.is_nonneg(op.step):
        a.nonneg.add(iv)
    state = [a.get(v) for v in op.inits]
    for _ in range(MAX_LOOP_ROUNDS):
        for arg, s in zip(carried, state):
            a.info[arg] = s
        a.block(op.body)
        yielded = [a.get(v) for v in op.body.terminator.values]
        new = [_meet(s, y) for s, y in zip(state, yielded)]
        if new == state:
            return state
        state = new
    for arg in carried:
        a.info[arg] = _conservative(arg)
    a.block(op.body)
    return [_conservative(r) for r in op.results]


@rule(ir.If)
def _if(a: _Analysis, op: ir.If):
    a.block(op.then_body)
    a.block(op.else_body)
    then_t, else_t = op.then_body.terminator, op.else_body.terminator
    if then_t is None or else_t is None:
        return [_conservative(r) for r in op.results]
    return [_meet(a.get(x), a.get(y)) for x, y in zip(then_t.values, else_t.values)]
