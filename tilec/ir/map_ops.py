"""Elementwise maps the kernel's author writes: ``inline_asm`` (target
assembly) and ``map_elementwise`` (a scalar function as a region).

Both apply something the author wrote to every element of same-shape
operands, ``pack`` elements at a time (which elements share one
application is unspecified, as in Triton), and give one tile per result.
Neither is a fixed function of the IR, so neither folds: ``inline_asm`` is
opaque text only a target can run; ``map_elementwise``'s body is scalar IR
the interpreter and codegen run element by element.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from tilec.ir.core import Block, Op, attr, region, variadic, walk
from tilec.ir.ops import AtomicCAS, AtomicRMW, Condition, EffectOp, For, If, While, Yield, _require
from tilec.ir.types import ScalarType, TileType, elem_type, shape_of, with_shape

__all__ = ["InlineAsm", "MapElementwise"]

# Control flow and terminators inside a body: not effects of their own.
_STRUCTURE = (For, If, While, Yield, Condition)


def _require_packable(op: Op, srcs: list) -> None:
    """The operands have one shape, whose elements split into groups of ``op.pack``."""
    shapes = {shape_of(s.type) for s in srcs}
    _require(op, len(shapes) <= 1, f"operands must have one shape, got {sorted(shapes)}")
    numel = math.prod(shapes.pop()) if shapes else 1
    _require(op, isinstance(op.pack, int) and op.pack >= 1, f"pack must be a positive int, got {op.pack!r}")
    _require(op, numel % op.pack == 0, f"pack {op.pack} does not divide the {numel} elements")


@dataclass(eq=False, kw_only=True)
class InlineAsm(Op):
    """The target's assembly ``asm`` run on ``srcs`` (same shape), ``pack``
    elements per run, giving one tile of each of ``dtypes`` (Triton's
    ``inline_asm_elementwise``).

    ``constraints`` are LLVM's inline-assembly constraints: the outputs
    (``pack`` per result, fewer when narrower than 32 bits: those share
    32-bit registers), then the inputs in the same way.  With no operands
    the results are scalars.  ``pure`` asm may be merged or deleted when
    unused; other asm runs exactly where it is.
    """

    NAME = "inline_asm"
    srcs: list = variadic()
    asm: str = attr()
    constraints: str = attr()
    dtypes: tuple = attr()
    pure: bool = attr(True)
    pack: int = attr(1)

    @property
    def PURE(self) -> bool:  # noqa: N802 (overrides the class-wide flag per op)
        return self.pure

    def infer_types(self):
        shape = shape_of(self.srcs[0].type) if self.srcs else ()
        return [with_shape(t, shape) for t in self.dtypes]

    def verify(self):
        _require_packable(self, self.srcs)
        _require(self, len(self.dtypes) >= 1, "needs at least one result type")
        _require(self, all(isinstance(t, ScalarType) and not t.is_bool for t in self.dtypes),
                 f"result types must be non-bool scalar types, got {self.dtypes}")


@dataclass(eq=False, kw_only=True)
class MapElementwise(Op):
    """``body`` applied to ``srcs`` (same shape) element by element, ``pack``
    elements per application (Triton's ``map_elementwise``).

    ``body`` takes ``pack`` scalars of each operand (operand-major: operand
    ``i``'s ``j``-th element is argument ``i * pack + j``) and yields
    ``pack`` scalars of each result in the same order; the results are
    tiles of the operands' shape.  The body is scalar code (its control
    flow may differ element by element); of the values defined outside it,
    it may read scalars (the passes share constants with it).  It computes
    values only: no store, atomic, print, assert or barrier (``effects``),
    whose scalar forms mean "once per program" on a GPU.  It is pure unless
    it loads or runs impure asm.
    """

    NAME = "map_elementwise"
    srcs: list = variadic()
    pack: int = attr(1)
    body: Block = region()

    @property
    def PURE(self) -> bool:  # noqa: N802 (overrides the class-wide flag per op)
        return all(op.PURE or isinstance(op, _STRUCTURE) for op in walk(self.body))

    @staticmethod
    def effects(body: Block) -> list[Op]:
        """The ops of ``body`` a map may not hold: those with a side effect
        (control flow and terminators aside) and the atomics."""
        return [op for op in walk(body) if isinstance(op, (AtomicRMW, AtomicCAS))
                or isinstance(op, EffectOp) and not isinstance(op, _STRUCTURE)]

    def infer_types(self):
        shape = shape_of(self.srcs[0].type)
        return [with_shape(v.type, shape) for v in self.body.terminator.values[::self.pack]]

    def verify(self):
        _require(self, len(self.srcs) >= 1, "needs at least one operand")
        _require_packable(self, self.srcs)
        elems = [elem_type(s.type) for s in self.srcs]
        want = [t for t in elems for _ in range(self.pack)]
        _require(self, [a.type for a in self.body.args] == want,
                 f"body must take {self.pack} scalar(s) of each operand type, {want}")
        yielded = [v.type for v in self.body.terminator.values]
        _require(self, len(yielded) % self.pack == 0 and all(
            yielded[k] == yielded[k - k % self.pack] for k in range(len(yielded))),
            f"body must yield {self.pack} scalar(s) of each result type, got {yielded}")
        effects = [op.NAME for op in self.effects(self.body)]
        _require(self, not effects, f"body must only compute values, not `{effects[0] if effects else ''}`")
        for op in walk(self.body):
            _require(self, not any(isinstance(v.type, TileType) for v in op.results + op.operands),
                     f"body must be scalar code; `{op.NAME}` uses or makes a tile")
