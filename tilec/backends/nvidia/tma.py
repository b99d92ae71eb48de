"""The tensor memory accelerator (sm_90 on): ``tma_copy`` and ``tma_wait``,
the mbarriers of the buffers they fill, and the tensor maps they read.

A *tensor map* (``CUtensorMap``, 128 bytes) describes a global tensor for
the copy engine: element size, sizes and byte strides of each dim, the box
one copy moves, the swizzle it writes shared memory in.  tilec makes one per
(host descriptor parameter, box, swizzle) a kernel copies with
(``tensor_maps``): the host encodes it at launch from the descriptor's base,
shape and strides (``cuda.py``, ``cuda_driver.encode_tensor_map``) and
passes it as a 64-byte-aligned by-value ``__grid_constant__`` parameter
after the kernel's own (``NvidiaLowering.extra_parameters``); the copy names
it by its address in the parameter space (``cvta.param``).

*Boxes.*  A slot holds a ``rows x cols`` matrix stored as ``Shared`` says
(``rows`` along its slow dim, ``cols`` its fast one, which is the tensor's
last: a transposed copy's slot is the block's transpose):
rows of 16-byte chunks XOR-swizzled in atoms of 32/64/128 bytes, one
``rows x atom`` matrix per atom (``ir.layouts.Shared``).  That is the
copy engine's own 32/64/128-byte swizzle of a ``(atom, rows)`` box
(innermost first), so a slot is ``cols / atom`` copies, atom ``j`` from
column ``x + j * atom`` to byte ``j * rows * atom_bytes`` of the slot.
Elements outside the tensor (either side) are written as zeros.

*Completion.*  Every slot of a buffer filled this way has an mbarrier
(arrival count 1) after the slots (``LocalAlloc.mbarrier_offset``),
initialized by thread 0 where the buffer is allocated (the pipeliner puts a
``barrier`` right after).  A ``tma_copy`` is thread 0 announcing the bytes
the slot will receive (``mbarrier.arrive.expect_tx``) and starting the
copies; the barrier's phase completes when they have all landed.
``tma_wait`` spins on ``mbarrier.try_wait.parity`` in every thread.

*Stores.*  A ``tma_store`` is thread 0 writing a slot (filled by
``local_store``, fenced for the async proxy, then a ``barrier``) to the
tensor with one bulk copy an atom, then waiting until the copies have read
the slot (``cp.async.bulk.wait_group.read``); the ``barrier`` after it lets
the block reuse the bytes.  Elements outside the tensor are not written.

``RULES`` holds this file's rules, laid over the generic ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.core import Function, walk
from tilec.ir.layouts import Shared
from tilec.ir.types import TileType
from tilec.rules import registry
from tilec.codegen_llvm.kernel import I32, I64, Ctx, byte_offset
from tilec.codegen_llvm.shared_buffers import local_alloc, matrix_bytes, slot_base

RULES, lowers = registry("Register the decorated ``rule(ctx, op)`` as the NVIDIA backend's for the given op classes.")

# The box of one copy is at most 256 elements along each dim.
MAX_BOX = 256
# cuTensorMapEncodeTiled's swizzle (CU_TENSOR_MAP_SWIZZLE_*) by atom row bytes; 0: none.
SWIZZLES = (0, 32, 64, 128)


@dataclass(frozen=True)
class TensorMap:
    """A tensor map parameter: host descriptor parameter ``descriptor`` read in
    boxes of ``box`` elements (innermost dim first), written to shared memory
    with the ``swizzle``-byte pattern (0: none)."""

    descriptor: str
    box: tuple[int, int]
    swizzle: int

    @property
    def parameter(self) -> str:
        """The kernel parameter's name."""
        return f"{self.descriptor}_tensor_map_{self.box[0]}x{self.box[1]}_sw{self.swizzle}"

    def to_json(self) -> list:
        return [self.descriptor, list(self.box), self.swizzle]


def tensor_map_for(buf: TileType, descriptor: str, transpose: bool = False) -> Optional[TensorMap]:
    """The tensor map that fills slots of buffer type ``buf`` from ``descriptor``
    (module docstring; ``transpose``: a block lands transposed, as
    ``tma_copy`` says), or None when no box writes its layout: the matrix's
    fast dim is not the tensor's last, its swizzle is not the copy engine's,
    or a box would exceed 256 elements or 16-byte multiples."""
    layout, shape, nbytes = buf.layout, buf.shape, buf.elem.bytes
    if not isinstance(layout, Shared) or len(shape) != 3 or layout.matrix_dims != ((1, 0) if transpose else (0, 1)):
        return None
    rows, cols = _slow_fast(buf)
    atom = layout.atom_width(cols)
    if layout.max_phase == 1:
        swizzle = 0
    elif layout.per_phase * layout.max_phase == 8 and layout.vec * nbytes == 16:
        swizzle = atom * nbytes
    else:
        return None
    if swizzle not in SWIZZLES or cols % atom or (atom * nbytes) % 16 or max(rows, atom) > MAX_BOX:
        return None
    return TensorMap(descriptor, (atom, rows), swizzle)


def _slow_fast(buf: TileType) -> tuple[int, int]:
    """The sizes of a slot's slow and fast dims."""
    slow, fast = buf.layout.matrix_dims
    return buf.shape[1:][slow], buf.shape[1:][fast]


def tensor_maps(fn: Function) -> list[TensorMap]:
    """The tensor maps ``fn``'s ``tma_copy``s read, each once, in program order."""
    found: dict[TensorMap, None] = {}
    for op in walk(fn.body):
        if isinstance(op, (ir.TmaCopy, ir.TmaStore)):
            found[_map_of(op)] = None
    return list(found)


def _map_of(op) -> TensorMap:
    """The tensor map a ``tma_copy`` or ``tma_store`` goes through."""
    tmap = tensor_map_for(op.buf.type, op.descriptor, op.transpose)
    if tmap is None:
        raise AssertionError(f"tma_copy into {op.buf.type}: no tensor map writes that layout")
    return tmap


# --------------------------------------------------------------------------- #
# Rules
# --------------------------------------------------------------------------- #

@lowers(ir.LocalAlloc)
def _local_alloc(ctx: Ctx, op: ir.LocalAlloc) -> None:
    """The buffer; with ``mbarriers``, thread 0 initializes one a slot."""
    local_alloc(ctx, op)
    if not op.mbarriers:
        return
    b = ctx.b
    with b.if_then(b.icmp_unsigned("==", ctx.tid, I32(0))):
        for slot in range(op.shape[0]):
            _asm(ctx, "mbarrier.init.shared::cta.b64 [$0], 1;", [_mbarrier(ctx, op.result, I32(slot))])
        _asm(ctx, "fence.mbarrier_init.release.cluster;", [])


@lowers(ir.TmaRelease)
def _tma_release(ctx: Ctx, op: ir.TmaRelease) -> None:
    """Thread 0 invalidates the buffer's mbarriers, one a slot."""
    b = ctx.b
    with b.if_then(b.icmp_unsigned("==", ctx.tid, I32(0))):
        for slot in range(op.buf.type.shape[0]):
            _asm(ctx, "mbarrier.inval.shared::cta.b64 [$0];", [_mbarrier(ctx, op.buf, I32(slot))])


@lowers(ir.TmaCopy)
def _tma_copy(ctx: Ctx, op: ir.TmaCopy) -> None:
    """Thread 0, where ``pred``: expect the slot's bytes on its mbarrier, start one copy an atom."""
    b, buf = ctx.b, op.buf.type
    barrier = _mbarrier(ctx, op.buf, ctx[op.slot][0])
    first = b.and_(b.icmp_unsigned("==", ctx.tid, I32(0)), ctx[op.pred][0])
    with b.if_then(first):
        _asm(ctx, f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], {matrix_bytes(buf.shape, buf.elem)};",
             [barrier])
        for params, x, row, smem in _boxes(ctx, op):
            _asm(ctx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                      "[$0], [$1, {$2, $3}], [$4];", [smem, params, x, row, barrier])


@lowers(ir.TmaStore)
def _tma_store(ctx: Ctx, op: ir.TmaStore) -> None:
    """Thread 0: one bulk store an atom, then wait until the slot has been read."""
    b = ctx.b
    with b.if_then(b.icmp_unsigned("==", ctx.tid, I32(0))):
        for params, x, row, smem in _boxes(ctx, op):
            _asm(ctx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];",
                 [params, x, row, smem])
        _asm(ctx, "cp.async.bulk.commit_group;", [])
        _asm(ctx, "cp.async.bulk.wait_group.read 0;", [])


def _boxes(ctx: Ctx, op) -> list[tuple]:
    """The boxes a ``tma_copy`` or ``tma_store`` moves, one a swizzle atom of its
    slot: (tensor map parameter, column, row, the atom's shared-memory address)."""
    b, buf = ctx.b, op.buf.type
    tmap = _map_of(op)
    atom, rows = tmap.box
    params = ctx.extra_params[tmap.parameter]
    base = slot_base(ctx, op.buf, op.slot)
    row, col = (ctx[c][0] for c in op.coords)
    return [(params, b.add(col, I32(j * atom)) if j else col, row,
             byte_offset(b, base, I32(j * rows * atom * buf.elem.bytes)))
            for j in range(_slow_fast(buf)[1] // atom)]


@lowers(ir.TmaWait)
def _tma_wait(ctx: Ctx, op: ir.TmaWait) -> None:
    """Every thread spins until the slot's mbarrier completes phase ``phase``."""
    b = ctx.b
    barrier, phase = _mbarrier(ctx, op.buf, ctx[op.slot][0]), ctx[op.phase][0]
    test = llir.InlineAsm(llir.FunctionType(I32, [I64, I32]),
                          "{ .reg .pred %p; mbarrier.try_wait.parity.shared::cta.b64 %p, [$1], $2; "
                          "selp.u32 $0, 1, 0, %p; }", "=r,l,r,~{memory}", side_effect=True)
    spin = b.append_basic_block("tma_wait")
    done = b.append_basic_block("tma_landed")
    b.branch(spin)
    b.position_at_end(spin)
    landed = b.call(test, [b.ptrtoint(barrier, I64), phase])
    b.cbranch(b.icmp_unsigned("!=", landed, I32(0)), done, spin)
    b.position_at_end(done)


def _mbarrier(ctx: Ctx, buf: ir.Value, slot):
    """The mbarrier of slot ``slot`` (an i32 register) of ``buf``."""
    alloc = buf.owner
    start = byte_offset(ctx.b, ctx[buf][0], I32(alloc.mbarrier_offset))
    return byte_offset(ctx.b, start, ctx.b.mul(slot, I32(alloc.MBARRIER_BYTES)))


def _asm(ctx: Ctx, text: str, operands: list) -> None:
    """Side-effecting inline PTX: pointers as 64-bit addresses (``l``), integers as ``r``."""
    b = ctx.b
    values = [v if isinstance(v.type, llir.IntType) else b.ptrtoint(v, I64) for v in operands]
    kinds = ",".join("r" if v.type == I32 else "l" for v in values)
    constraints = ",".join(filter(None, [kinds, "~{memory}"]))
    fn = llir.InlineAsm(llir.FunctionType(llir.VoidType(), [v.type for v in values]), text, constraints,
                        side_effect=True)
    b.call(fn, values)

