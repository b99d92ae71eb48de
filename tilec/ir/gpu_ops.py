"""GPU-level ops: shared-memory buffers and asynchronous global -> shared copies.

A backend's target lowering makes them (the NVIDIA one pipelines loops with
them); the front end never does.  A *buffer* is a tile held in shared
memory (its layout is ``layouts.Shared``): its leading dim counts *slots*
(one per pipeline stage), the rest is the shape of the tile each slot holds.
A buffer is filled by ``async_copy`` (from global memory, on targets with
asynchronous copies) or by ``local_store`` (from registers: what a target
without them, AMD's, pipelines with), and read by ``local_load``.
A buffer is only ever named by the ``local_alloc`` that made it (never
carried through a loop or yielded), so every use of a buffer is a use of its
alloc's result: the shared-memory plan (``tilec/opt/shared_memory.py``)
relies on it.

The copy protocol is the one GPUs with asynchronous copies share (a target
says whether it has them: ``Target.async_copies``): ``async_copy`` starts a
copy, ``async_commit`` closes the group of copies started since the last
commit, ``async_wait {pending = N}`` waits until at most ``N`` groups are
still in flight (for this thread's copies: a ``barrier`` after it makes
every thread's copies visible).  The interpreter copies at once, which is
one valid execution.

``dot_wait {pending = N}`` is a ``dot``'s result once at most ``N`` groups
of the asynchronous matrix instructions this thread issued still run (a
target whose matrix unit runs behind the threads): a ``dot`` whose one user
is a ``dot_wait`` may leave its instructions running past it.  The interpreter's dots are done at once.

None is ``PURE``: they read or write memory, or order what does, so they are
never merged, moved or deleted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tilec.ir.core import Op, Value, attr, operand, optional
from tilec.ir.layouts import Shared
from tilec.ir.ops import EffectOp, _require
from tilec.ir.types import PointerType, ScalarType, TileType, elem_type, i1, i32, shape_of, with_elem


@dataclass(eq=False, kw_only=True)
class LocalAlloc(Op):
    """A shared-memory buffer of ``shape`` ``elem``s held in ``layout``
    (``slots x tile shape``; its contents start undefined)."""

    NAME = "local_alloc"
    PURE = False
    shape: tuple = attr()
    elem: Any = attr()
    layout: Any = attr()

    def infer_types(self):
        return [TileType(tuple(self.shape), self.elem, self.layout)]

    def verify(self):
        _require(self, isinstance(self.elem, ScalarType), f"element type must be a scalar, got {self.elem}")
        _require(self, isinstance(self.layout, Shared), f"layout must be shared<...>, got {self.layout}")
        _require(self, self.layout.rank == len(self.shape), f"layout {self.layout} does not fit shape {self.shape}")


def _check_buffer_slot(op: Op, buf: Value, slot: Value) -> None:
    """``buf`` is a ``local_alloc``'s own result with a slot dim; ``slot`` a scalar ``i32``."""
    _require(op, isinstance(buf.owner, LocalAlloc), "the buffer must be a local_alloc's result")
    _require(op, len(shape_of(buf.type)) >= 3, f"the buffer needs a slot dim and a matrix, got {buf.type}")
    _require(op, slot.type == i32, f"slot must be a scalar i32, got {slot.type}")


@dataclass(eq=False, kw_only=True)
class AsyncCopy(EffectOp):
    """Start copying the tile at ``ptr`` (``buf``'s shape without the slot
    dim) into slot ``slot`` of ``buf``: elements where ``mask`` (default all)
    is false get ``other`` (default 0) and their addresses are never read."""

    NAME = "async_copy"
    buf: Value = operand()
    slot: Value = operand()
    ptr: Value = operand()
    mask: Optional[Value] = optional()
    other: Optional[Value] = optional()

    def verify(self):
        _check_buffer_slot(self, self.buf, self.slot)
        t, buf = self.ptr.type, self.buf.type
        _require(self, isinstance(elem_type(t), PointerType) and isinstance(t, TileType),
                 f"needs a tile of pointers, got {t}")
        _require(self, t.shape == buf.shape[1:], f"pointers {t.shape} do not fit a slot of {buf}")
        _require(self, elem_type(t).elem == buf.elem, f"pointers to {elem_type(t).elem} copied into {buf.elem}")
        if self.mask is not None:
            _require(self, self.mask.type == with_elem(t, i1), f"mask type {self.mask.type} does not match {t}")
        if self.other is not None:
            want = with_elem(t, buf.elem)
            _require(self, self.other.type == want, f"other has type {self.other.type}, expected {want}")


@dataclass(eq=False, kw_only=True)
class AsyncCommit(EffectOp):
    """Close the group of ``async_copy``s this thread started since the last commit."""

    NAME = "async_commit"


@dataclass(eq=False, kw_only=True)
class AsyncWait(EffectOp):
    """Wait until at most ``pending`` of this thread's committed groups are in flight."""

    NAME = "async_wait"
    pending: int = attr()

    def verify(self):
        _require(self, isinstance(self.pending, int) and self.pending >= 0,
                 f"pending must be a non-negative int, got {self.pending!r}")


@dataclass(eq=False, kw_only=True)
class LocalLoad(Op):
    """The tile in slot ``slot`` of ``buf``, in registers (its layout is the
    result type's: whoever builds the op picks it)."""

    NAME = "local_load"
    PURE = False
    buf: Value = operand()
    slot: Value = operand()

    def infer_types(self):
        t = self.buf.type
        return [TileType(t.shape[1:], t.elem)]

    def verify(self):
        _check_buffer_slot(self, self.buf, self.slot)


@dataclass(eq=False, kw_only=True)
class LocalStore(EffectOp):
    """Write ``value`` (a tile in registers, ``buf``'s shape without the slot
    dim) into slot ``slot`` of ``buf``."""

    NAME = "local_store"
    buf: Value = operand()
    slot: Value = operand()
    value: Value = operand()

    def verify(self):
        _check_buffer_slot(self, self.buf, self.slot)
        t, buf = self.value.type, self.buf.type
        _require(self, isinstance(t, TileType) and t.shape == buf.shape[1:] and t.elem == buf.elem,
                 f"stores {t} into a slot of {buf}")


__all__ = ["LocalAlloc", "AsyncCopy", "AsyncCommit", "AsyncWait", "LocalLoad", "LocalStore", "DotWait"]


@dataclass(eq=False, kw_only=True)
class DotWait(Op):
    """``value`` (a ``dot``'s accumulator, or a loop's result carrying one)
    once at most ``pending`` groups of this thread's asynchronous matrix
    instructions are still in flight (the module docstring)."""

    NAME = "dot_wait"
    PURE = False
    value: Value = operand()
    pending: int = attr()

    def infer_types(self):
        return [self.value.type]

    def verify(self):
        _require(self, isinstance(self.pending, int) and self.pending >= 0,
                 f"pending must be a non-negative int, got {self.pending!r}")
        _require(self, isinstance(self.value.type, TileType), f"waits for a tile, got {self.value.type}")
