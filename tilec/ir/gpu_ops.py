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
every thread's copies visible).  With the tensor memory accelerator
(``Target.bulk_tensor_copies``) one thread copies a host tensor descriptor's
whole block (``tma_copy``) and the copy completes on an mbarrier of the
slot, which every thread waits for (``tma_wait``): no commit, no group.
The interpreter copies at once, which is one valid execution.

``dot_wait {pending = N}`` is a ``dot``'s result once at most ``N`` groups
of the asynchronous matrix instructions this thread issued still run (a
target whose matrix unit runs behind the threads): a ``dot`` whose one user
is a ``dot_wait`` may leave its instructions running past it.  The interpreter's dots are done at once.

None is ``PURE``: they read or write memory, or order what does, so they are
never merged, moved or deleted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

from tilec.ir.core import Op, Value, attr, operand, optional, variadic
from tilec.ir.layouts import Shared
from tilec.ir.ops import EffectOp, _require, check_block_coords
from tilec.ir.types import PointerType, ScalarType, TileType, elem_type, i1, i32, shape_of, with_elem


@dataclass(eq=False, kw_only=True)
class LocalAlloc(Op):
    """A shared-memory buffer of ``shape`` ``elem``s held in ``layout``
    (``slots x tile shape``; its contents start undefined).  With
    ``mbarriers``, each slot also has a barrier the ``tma_copy``s into it
    arrive on (``tma_wait`` waits for it)."""

    NAME = "local_alloc"
    PURE = False
    shape: tuple = attr()
    elem: Any = attr()
    layout: Any = attr()
    mbarriers: bool = attr(False)

    MBARRIER_BYTES: ClassVar[int] = 8

    @property
    def mbarrier_offset(self) -> int:
        """Where the mbarriers start in the buffer: right after its slots (8-byte aligned)."""
        return -(-math.prod(self.shape) * self.elem.bytes // self.MBARRIER_BYTES) * self.MBARRIER_BYTES

    @property
    def nbytes(self) -> int:
        """Bytes of the buffer: its slots, then an 8-byte mbarrier a slot when it has them."""
        return self.mbarrier_offset + (self.MBARRIER_BYTES * self.shape[0] if self.mbarriers else 0)

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
    is false get ``other`` (default 0) and their addresses are never read.
    With ``transpose`` a matrix's element ``(r, c)`` goes to ``(c, r)`` of the
    slot (a ``b`` loaded as ``N x K`` and used as ``K x N``)."""

    NAME = "async_copy"
    buf: Value = operand()
    slot: Value = operand()
    ptr: Value = operand()
    mask: Optional[Value] = optional()
    other: Optional[Value] = optional()
    transpose: bool = attr(False)

    def verify(self):
        _check_copy(self, self.buf, self.slot, self.ptr, self.mask, self.other, self.transpose)


def _check_copy(op: Op, buf: Value, slot: Value, ptr: Value, mask: Optional[Value], other: Optional[Value],
                transpose: bool) -> None:
    """A copy of the tile at ``ptr`` (``mask``, ``other`` as a load's) into slot
    ``slot`` of ``buf``, a matrix ``transpose``d on the way."""
    _check_buffer_slot(op, buf, slot)
    t, bt = ptr.type, buf.type
    _require(op, isinstance(elem_type(t), PointerType) and isinstance(t, TileType), f"needs a tile of pointers, got {t}")
    slot_shape = bt.shape[1:][::-1] if transpose else bt.shape[1:]
    _require(op, not transpose or len(t.shape) == 2, f"only a matrix is copied transposed, got {t.shape}")
    _require(op, t.shape == slot_shape, f"pointers {t.shape} do not fit a slot of {bt}"
             + (" transposed" if transpose else ""))
    _require(op, elem_type(t).elem == bt.elem, f"pointers to {elem_type(t).elem} copied into {bt.elem}")
    if mask is not None:
        _require(op, mask.type == with_elem(t, i1), f"mask type {mask.type} does not match {t}")
    if other is not None:
        want = with_elem(t, bt.elem)
        _require(op, other.type == want, f"other has type {other.type}, expected {want}")


@dataclass(eq=False, kw_only=True)
class TmaCopy(EffectOp):
    """Where ``pred`` (an ``i1`` scalar) holds, start copying the block at
    ``coords`` of the host tensor descriptor parameter ``descriptor`` into
    slot ``slot`` of ``buf`` with the tensor memory accelerator (``transpose``d
    as ``async_copy``'s: the tensor's last dim is the slot's fast one either
    way); the copy arrives on the slot's mbarrier (``buf`` has ``mbarriers``), which
    ``tma_wait`` waits for.  ``ptr`` and ``mask`` are the block's elements and
    where they lie inside the tensor (its load's, ``ir.Load``): what the
    interpreter copies, elements outside it 0.  Where ``pred`` is false the
    slot keeps what it held."""

    NAME = "tma_copy"
    buf: Value = operand()
    slot: Value = operand()
    ptr: Value = operand()
    mask: Optional[Value] = optional()
    pred: Value = operand()
    coords: list = variadic()
    descriptor: str = attr()
    transpose: bool = attr(False)

    def verify(self):
        _check_copy(self, self.buf, self.slot, self.ptr, self.mask, None, self.transpose)
        _require(self, isinstance(self.buf.owner, LocalAlloc) and self.buf.owner.mbarriers,
                 "the buffer has no mbarriers (local_alloc {mbarriers = true})")
        _require(self, self.pred.type == i1, f"pred must be an i1 scalar, got {self.pred.type}")
        check_block_coords(self, self.ptr, self.coords, self.descriptor)

    @property
    def other(self) -> None:
        """Elements outside the tensor become 0 (what a load's ``other`` says)."""
        return None


@dataclass(eq=False, kw_only=True)
class TmaStore(EffectOp):
    """Write slot ``slot`` of ``buf`` to the block at ``coords`` of the host
    tensor descriptor parameter ``descriptor`` with the tensor memory
    accelerator (elements outside the tensor are not written), and wait until
    the slot has been read (thread 0 copies; a ``barrier`` after it lets the
    others reuse the slot).  ``ptr`` and ``mask`` are the block's elements and
    where they lie inside the tensor (its store's, ``ir.Store``): what the
    interpreter writes."""

    NAME = "tma_store"
    buf: Value = operand()
    slot: Value = operand()
    ptr: Value = operand()
    mask: Optional[Value] = optional()
    coords: list = variadic()
    descriptor: str = attr()

    transpose: ClassVar[bool] = False  # a slot holds the block as it is stored

    def verify(self):
        _check_copy(self, self.buf, self.slot, self.ptr, self.mask, None, False)
        check_block_coords(self, self.ptr, self.coords, self.descriptor)


@dataclass(eq=False, kw_only=True)
class TmaWait(EffectOp):
    """Wait until the ``tma_copy``s into slot ``slot`` of ``buf`` have landed:
    its mbarrier has completed phase ``phase`` (an ``i32``, 0 or 1: the
    parity of how many times the slot was filled before, as the pipeliner
    counts)."""

    NAME = "tma_wait"
    buf: Value = operand()
    slot: Value = operand()
    phase: Value = operand()

    def verify(self):
        _check_buffer_slot(self, self.buf, self.slot)
        _require(self, isinstance(self.buf.owner, LocalAlloc) and self.buf.owner.mbarriers,
                 "the buffer has no mbarriers (local_alloc {mbarriers = true})")
        _require(self, self.phase.type == i32, f"phase must be a scalar i32, got {self.phase.type}")


@dataclass(eq=False, kw_only=True)
class TmaRelease(EffectOp):
    """Invalidate the mbarriers of ``buf`` (``mbarrier.inval``, thread 0), so
    that their bytes may hold other data: every copy into the buffer has
    landed and been waited for, and the threads passed a barrier since.  The
    pipeliner ends a loop's buffers with it, between two barriers."""

    NAME = "tma_release"
    buf: Value = operand()

    def verify(self):
        _require(self, isinstance(self.buf.owner, LocalAlloc) and self.buf.owner.mbarriers,
                 "the buffer has no mbarriers (local_alloc {mbarriers = true})")


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


__all__ = ["LocalAlloc", "AsyncCopy", "TmaCopy", "TmaStore", "TmaWait", "TmaRelease", "AsyncCommit", "AsyncWait", "LocalLoad", "LocalStore",
           "DotWait"]


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
