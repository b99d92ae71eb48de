"""A builder appends new ops at an insertion point, stamping the current location."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

from tilec.ir.core import UNKNOWN_LOC, Block, Loc, Op, Value


class Builder:
    """Appends ops to ``block``; ``loc`` is stamped on every op created."""

    def __init__(self, block: Optional[Block] = None, loc: Loc = UNKNOWN_LOC):
        self.block = block if block is not None else Block()
        self.loc = loc

    def create(self, cls: type, *, name: Optional[str] = None, **fields) -> Op:
        """Build ``cls(**fields)``, infer its result types and append it."""
        op = cls(loc=self.loc, **fields)
        op.make_results([name] if name else None)
        self.block.ops.append(op)
        return op

    def value(self, cls: type, *, name: Optional[str] = None, **fields) -> Value:
        """``create`` for a one-result op, returning the result."""
        return self.create(cls, name=name, **fields).result

    @contextmanager
    def at(self, block: Block) -> Iterator["Builder"]:
        """Temporarily append to ``block`` instead."""
        saved, self.block = self.block, block
        try:
            yield self
        finally:
            self.block = saved

    @contextmanager
    def located(self, loc: Loc) -> Iterator["Builder"]:
        """Temporarily stamp ``loc`` on new ops."""
        saved, self.loc = self.loc, loc
        try:
            yield self
        finally:
            self.loc = saved
