"""The copies that fill shared-memory buffers: ``async_copy`` (``cp.async``),
``async_commit``/``async_wait``, and ``local_load`` by ``ldmatrix`` (what the
pipeliner, ``tilec.backends.nvidia.pipeline``, builds).  Buffers themselves
(``local_alloc``, slots, the swizzled ``Shared`` matrices) are every GPU's:
``tilec/codegen_llvm/shared_buffers.py``.

``async_copy`` moves each thread's vectors of its pointer tile (the widths
``memory.access_width`` proves: contiguous, aligned, mask constant) with one
``cp.async`` each: 16 bytes bypass L1 (``.cg``), 4 or 8 go through it
(``.ca``), and a masked-off vector reads nothing and writes zeros (source
size 0).  Narrower vectors, or an ``other`` that is not zero, are copied by
ordinary loads and stores, finished when the op is: a later
``async_wait`` + barrier orders them like the asynchronous ones.

``RULES`` holds this file's rules, which the NVIDIA backend's
``TargetLowering`` lays over the generic ones.
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.layouts_nvidia import DotOperand
from tilec.rules import registry
from tilec.codegen_llvm.elementwise import constant
from tilec.codegen_llvm.kernel import I32, I64, Ctx, byte_offset, coordinates
from tilec.codegen_llvm.memory import _guarded, access_width
from tilec.codegen_llvm.scalar_base import llvm_type
from tilec.codegen_llvm.shared_buffers import local_store, slot_base, swizzled_offset
from tilec.backends.nvidia.mma import OperandReader, ldmatrix_fits, load_shared_tile

CP_ASYNC_BYTES = (4, 8, 16)

RULES, lowers = registry("Register the decorated ``rule(ctx, op)`` as the NVIDIA backend's for the given op classes.")


@lowers(ir.LocalLoad)
def _local_load(ctx: Ctx, op: ir.LocalLoad) -> None:
    """Registers from a slot; an operand whose one user is a ``dot`` of the
    same block is left to the dot, which reads it a ``k`` step at a time."""
    buf, dst = op.buf.type, op.result.type
    base = slot_base(ctx, op.buf, op.slot)
    users = ctx.users.get(op.result, [])
    if (isinstance(dst.layout, DotOperand) and ldmatrix_fits(dst.layout, buf.layout, buf.elem)
            and len(users) == 1 and isinstance(users[0][0], ir.Dot) and op in users[0][1].ops):
        ctx.defer(op.result, OperandReader(ctx, base, buf.layout, buf.shape, buf.elem, dst))
        return
    ctx.bind(op.results, [load_shared_tile(ctx, base, buf.layout, buf.shape, buf.elem, dst)])


@lowers(ir.LocalStore)
def _local_store(ctx: Ctx, op: ir.LocalStore) -> None:
    """Registers into a slot; where the tensor cores may read it through the
    async proxy (``shared_operands.py``, ``wgmma.py``), made visible to it."""
    local_store(ctx, op)
    if ctx.target.group_matrix_instructions:
        _asm(ctx, "fence.proxy.async.shared::cta;")


@lowers(ir.AsyncCopy)
def _async_copy(ctx: Ctx, op: ir.AsyncCopy) -> None:
    b, buf = ctx.b, op.buf.type
    elem = buf.elem
    base = slot_base(ctx, op.buf, op.slot)
    ptrs, coords = ctx[op.ptr], coordinates(ctx, op.ptr)
    masks = ctx[op.mask] if op.mask is not None else None
    width = access_width(ctx, op)
    asynchronous = width * elem.bytes in CP_ASYNC_BYTES and _zero_other(op)
    for start in range(0, len(ptrs), width if asynchronous else 1):
        at = coords[start][::-1] if op.transpose else coords[start]
        dst = byte_offset(b, base, swizzled_offset(ctx, buf.layout, buf.shape, at, elem.bytes))
        mask = masks[start] if masks is not None else None
        if asynchronous:
            _cp_async(ctx, dst, ptrs[start], width * elem.bytes, mask)
        else:
            other = ctx[op.other][start] if op.other is not None else constant(elem, 0)
            value = _guarded(ctx, mask, lambda p=ptrs[start]: b.load(p, typ=llvm_type(elem), align=elem.bytes), other)
            b.store(value, dst, align=elem.bytes)


def _zero_other(op: ir.AsyncCopy) -> bool:
    """True when masked-off elements become 0 (what ``cp.async`` writes)."""
    other = op.other
    if other is None:
        return True
    owner = other.owner
    return isinstance(owner, ir.Constant) and owner.value == 0 and str(owner.value) != "-0.0"


def _cp_async(ctx: Ctx, dst, src, nbytes: int, mask) -> None:
    b = ctx.b
    size = I32(nbytes) if mask is None else b.select(mask, I32(nbytes), I32(0))
    level = "cg" if nbytes == 16 else "ca"
    fn = llir.InlineAsm(llir.FunctionType(llir.VoidType(), [I64, I64, I32]),
                        f"cp.async.{level}.shared.global [$0], [$1], {nbytes}, $2;", "l,l,r", side_effect=True)
    b.call(fn, [b.ptrtoint(dst, I64), b.ptrtoint(src, I64), size])


@lowers(ir.AsyncCommit)
def _async_commit(ctx: Ctx, op: ir.AsyncCommit) -> None:
    _asm(ctx, "cp.async.commit_group;")


@lowers(ir.AsyncWait)
def _async_wait(ctx: Ctx, op: ir.AsyncWait) -> None:
    """Wait for this thread's copies; where the tensor cores may read them
    through the async proxy (``wgmma.py``), make them visible to it too."""
    _asm(ctx, f"cp.async.wait_group {op.pending};")
    if ctx.target.group_matrix_instructions:
        _asm(ctx, "fence.proxy.async.shared::cta;")


def _asm(ctx: Ctx, text: str) -> None:
    ctx.b.call(llir.InlineAsm(llir.FunctionType(llir.VoidType(), []), text, "~{memory}", side_effect=True), [])
