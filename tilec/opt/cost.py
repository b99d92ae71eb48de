"""A per-program estimate of the bytes a kernel moves and the flops it does.

``estimate_cost(fn)`` walks the optimized tile IR once (it runs on every
compile, so it is a single walk with no analysis) and counts, for one program
of the grid:

* bytes: every ``load``, ``store``, ``atomic_rmw`` and ``atomic_cas`` moves
  element bytes x tile size.  Masks are not looked at: a masked-off element
  counts as if it were accessed (the mask is usually all true except at the
  edges), and an atomic counts its element once (one read-modify-write);
* flops: a ``dot`` counts ``2*M*N*K`` (times the batch), an elementwise op on
  floats counts one per element (``fma`` two), a ``reduce`` or ``scan`` counts
  its combine block's flops once per element it combines.  Integer and
  pointer arithmetic, casts and data movement (broadcast, reshape, ...) are
  free;
* ``for`` multiplies its body by the trip count: a number when the bounds
  are constants (constexprs), else a formula in the kernel's arguments, as
  ``cdiv(K, 32)`` for ``range(0, K, 32)``.  A trip count no formula covers (a
  ``while``, bounds computed from loads) is named ``trips_line<N>`` after the
  loop's line.  An ``if`` counts its costlier branch.

So the estimate is a polynomial in the unknown trip counts: ``Cost`` holds one
``Counts`` per monomial and renders it as text (``bytes_formula``,
``flops_formula``: ``"2048 + 8192*cdiv(K, 32)"``) that ``evaluate`` computes
for given argument values.  ``intensity`` is flops / bytes as the unknown trip
counts grow (the ratio of the highest-degree terms: a matmul's inner loop),
and exactly flops / bytes when every trip count is known.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Optional

from tilec.ir import ops
from tilec.ir.core import Block, Function, Op, Value
from tilec.ir.types import ScalarType, elem_type, shape_of

Monomial = tuple[str, ...]  # sorted trip-count expressions; () is the constant term


@dataclass
class Counts:
    """Bytes moved and flops done by one term of a ``Cost``."""

    bytes: int = 0
    flops: int = 0


class Cost:
    """Bytes and flops as a polynomial in loop trip counts: monomial -> ``Counts``."""

    def __init__(self, terms: Optional[dict[Monomial, Counts]] = None):
        self.terms: dict[Monomial, Counts] = terms if terms is not None else {}

    def add(self, bytes: int = 0, flops: int = 0, monomial: Monomial = ()) -> None:
        counts = self.terms.setdefault(monomial, Counts())
        counts.bytes += bytes
        counts.flops += flops

    def add_cost(self, other: "Cost", times: "int | str" = 1) -> None:
        """Add ``other`` run ``times`` times (a count, or a trip-count expression)."""
        for monomial, c in other.terms.items():
            if isinstance(times, int):
                self.add(c.bytes * times, c.flops * times, monomial)
            else:
                self.add(c.bytes, c.flops, tuple(sorted(monomial + (times,))))

    @property
    def is_exact(self) -> bool:
        """True when no term depends on an unknown trip count."""
        return all(not m for m, c in self.terms.items() if c.bytes or c.flops)

    @property
    def bytes(self) -> Optional[int]:
        """Bytes moved, or None when they depend on a trip count (see ``bytes_formula``)."""
        return self.terms.get((), Counts()).bytes if self.is_exact else None

    @property
    def flops(self) -> Optional[int]:
        """Flops done, or None when they depend on a trip count (see ``flops_formula``)."""
        return self.terms.get((), Counts()).flops if self.is_exact else None

    @property
    def bytes_formula(self) -> str:
        return self._formula(lambda c: c.bytes)

    @property
    def flops_formula(self) -> str:
        return self._formula(lambda c: c.flops)

    @property
    def intensity(self) -> Optional[float]:
        """flops / byte of the highest-degree terms (all of them when exact); None without bytes."""
        live = [(len(m), c) for m, c in self.terms.items() if c.bytes or c.flops]
        degree = max((d for d, _ in live), default=0)
        moved = sum(c.bytes for d, c in live if d == degree)
        done = sum(c.flops for d, c in live if d == degree)
        return done / moved if moved else None

    def _formula(self, count: Callable[[Counts], int]) -> str:
        parts = []
        for monomial in sorted(self.terms, key=len):  # constant first, then in program order
            n = count(self.terms[monomial])
            if n:
                factors = [_factor(t) for t in monomial]
                parts.append("*".join(factors if n == 1 and factors else [str(n)] + factors))
        return " + ".join(parts) or "0"


def evaluate(formula: str, **values: int) -> int:
    """The value of a ``Cost`` formula for given argument values (``K=4096``)."""
    names = {"cdiv": lambda a, b: -(-a // b), "max": max, "min": min, "__builtins__": {}}
    return eval(formula, names, dict(values))  # our own formula text: numbers, names, + - * //, cdiv


def estimate_cost(fn: Function) -> Cost:
    """The per-program bytes and flops of ``fn`` (see the module doc)."""
    return _block_cost(fn.body, dict(zip(fn.args, fn.arg_names)))


# --------------------------------------------------------------------------- #
# the walk
# --------------------------------------------------------------------------- #

Rule = Callable[[Op, Cost, dict[Value, str]], None]  # (op, cost to add to, argument names)


def _block_cost(block: Block, names: dict[Value, str]) -> Cost:
    cost = Cost()
    for op in block.ops:
        rule = _rule_for(type(op))
        if rule is not None:
            rule(op, cost, names)
    return cost


@functools.cache
def _rule_for(op_type: type) -> Optional[Rule]:
    """The rule of ``op_type``: its own, else every elementwise op's, else none (free)."""
    if op_type in _RULES:
        return _RULES[op_type]
    return _elementwise if issubclass(op_type, (ops.UnaryOp, ops.BinaryOp)) else None


def _numel(v: Value) -> int:
    return math.prod(shape_of(v.type))


def _elem_bytes(v: Value) -> int:
    e = elem_type(v.type)
    return e.bytes if isinstance(e, ScalarType) else 8  # a tile of pointers: 8-byte addresses


def _is_float(v: Value) -> bool:
    e = elem_type(v.type)
    return isinstance(e, ScalarType) and e.is_float


def _memory(value_of: Callable[[Op], Value]) -> Rule:
    def rule(op: Op, cost: Cost, names: dict[Value, str]) -> None:
        v = value_of(op)
        cost.add(bytes=_numel(v) * _elem_bytes(v))
    return rule


def _elementwise(op: Op, cost: Cost, names: dict[Value, str]) -> None:
    src = op.src if isinstance(op, ops.UnaryOp) else op.lhs
    if _is_float(src):
        cost.add(flops=_numel(src))


def _fma(op: ops.Fma, cost: Cost, names: dict[Value, str]) -> None:
    if _is_float(op.a):
        cost.add(flops=2 * _numel(op.a))


def _dot(op: ops.Dot, cost: Cost, names: dict[Value, str]) -> None:
    cost.add(flops=2 * _numel(op.acc) * shape_of(op.a.type)[-1])


def _combining(op: "ops.Reduce | ops.Scan", cost: Cost, names: dict[Value, str]) -> None:
    """A reduce or scan along an axis of n combines n - 1 pairs per line."""
    n = _numel(op.srcs[0])
    shape = shape_of(op.srcs[0].type)
    lines = 1 if op.axis is None else n // shape[op.axis]
    cost.add_cost(_block_cost(op.combine, names), n - lines)


def _for(op: ops.For, cost: Cost, names: dict[Value, str]) -> None:
    cost.add_cost(_block_cost(op.body, names), _trip_count(op, names))


def _while(op: ops.While, cost: Cost, names: dict[Value, str]) -> None:
    body = _block_cost(op.before, names)
    body.add_cost(_block_cost(op.after, names))
    cost.add_cost(body, f"trips_line{op.loc.line}")


def _if(op: ops.If, cost: Cost, names: dict[Value, str]) -> None:
    then, other = _block_cost(op.then_body, names), _block_cost(op.else_body, names)
    for monomial in then.terms.keys() | other.terms.keys():
        a, b = then.terms.get(monomial, Counts()), other.terms.get(monomial, Counts())
        cost.add(max(a.bytes, b.bytes), max(a.flops, b.flops), monomial)


_RULES: dict[type, Rule] = {
    ops.Load: _memory(lambda op: op.result),
    ops.Store: _memory(lambda op: op.value),
    ops.AtomicRMW: _memory(lambda op: op.result),
    ops.AtomicCAS: _memory(lambda op: op.result),
    ops.Fma: _fma,
    ops.Dot: _dot,
    ops.Reduce: _combining,
    ops.Scan: _combining,
    ops.For: _for,
    ops.While: _while,
    ops.If: _if,
}


# --------------------------------------------------------------------------- #
# trip counts
# --------------------------------------------------------------------------- #

def _trip_count(op: ops.For, names: dict[Value, str]) -> "int | str":
    """``len(range(lower, upper, step))``: a number, a formula in the arguments, or ``trips_line<N>``."""
    lower, upper, step = (_constant(v) for v in (op.lower, op.upper, op.step))
    if lower is not None and upper is not None and step:
        return len(range(lower, upper, step))
    lo, hi = _expr(op.lower, names), _expr(op.upper, names)
    if step is None or step <= 0 or lo is None or hi is None:
        return f"trips_line{op.loc.line}"
    span = _strip(hi) if lo == "0" else f"{hi} - {lo}"
    return span if step == 1 else f"cdiv({span}, {step})"


def _constant(v: Value) -> Optional[int]:
    owner = v.owner
    if isinstance(owner, ops.Constant) and isinstance(owner.value, int):
        return int(owner.value)
    return None


_INFIX = {ops.Mul: "*", ops.Div: "//"}
_CALLS = {ops.Maximum: "max", ops.Minimum: "min"}


def _expr(v: Value, names: dict[Value, str]) -> Optional[str]:
    """``v`` as a formula in the arguments (ints only; compound parts in parentheses), or None."""
    if v in names:
        return names[v]
    owner = v.owner
    if _constant(v) is not None:
        return str(_constant(v))
    if isinstance(owner, ops.Cast):
        return _expr(owner.src, names)
    if isinstance(owner, (ops.Add, ops.Sub)):
        base, offset = _offset(v, names)
        return base if base is None or offset == 0 else f"({base} {'-' if offset < 0 else '+'} {abs(offset)})"
    if type(owner) not in _INFIX and type(owner) not in _CALLS:
        return None
    lhs, rhs = _expr(owner.lhs, names), _expr(owner.rhs, names)
    if lhs is None or rhs is None:
        return None
    if type(owner) in _INFIX:
        return f"({lhs} {_INFIX[type(owner)]} {rhs})"
    return f"{_CALLS[type(owner)]}({_strip(lhs)}, {_strip(rhs)})"


def _offset(v: Value, names: dict[Value, str]) -> tuple[Optional[str], int]:
    """``v`` as ``base + offset``, constants of chained adds and subtracts summed (``tl.cdiv``'s ``K + 16 - 1``)."""
    owner = v.owner
    if not isinstance(owner, (ops.Add, ops.Sub)):
        return _expr(v, names), 0
    sign = -1 if isinstance(owner, ops.Sub) else 1
    lhs, rhs = _constant(owner.lhs), _constant(owner.rhs)
    if rhs is not None:
        base, offset = _offset(owner.lhs, names)
        return base, offset + sign * rhs
    if lhs is not None and sign == 1:
        base, offset = _offset(owner.rhs, names)
        return base, offset + lhs
    a, b = _expr(owner.lhs, names), _expr(owner.rhs, names)
    return (None if a is None or b is None else f"({a} {'-' if sign < 0 else '+'} {b})"), 0


def _closing(text: str, start: int) -> int:
    """The index of the parenthesis that closes the one at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


def _is_atom(text: str) -> bool:
    """True for a name, a number, ``(...)`` or ``name(...)``: text a product may hold bare."""
    if text.isidentifier() or text.isdigit():
        return True
    head = text.split("(", 1)[0]
    return "(" in text and (head == "" or head.isidentifier()) and _closing(text, len(head)) == len(text) - 1


def _strip(text: str) -> str:
    """``text`` without outer parentheses that enclose all of it."""
    return text[1:-1] if text.startswith("(") and _closing(text, 0) == len(text) - 1 else text


def _factor(trips: str) -> str:
    """A trip-count expression as a factor of a product."""
    return trips if _is_atom(trips) else f"({trips})"
