"""``dot`` on Hopper's warpgroup instructions: ``wgmma.mma_async`` (sm_90a).

Four consecutive warps (a *warpgroup*, starting at a warp index divisible
by 4) issue one ``wgmma.mma_async.m64nNkK`` together (K = 16 for f16/bf16,
32 for int8 and fp8, always 32 bytes of operand): a 64 x N block of the
accumulator, ``a`` and ``b`` read by the tensor cores straight from shared
memory through 64-bit *matrix descriptors* (``a`` may come from registers
instead).  The instruction runs asynchronously: ``wgmma.commit_group``
closes a group of them and ``wgmma.wait_group`` waits for it.

*Where it runs.*  The layout pass gives such a dot the accumulator layout
``Mma((num_warps, 1))`` (``layouts.fits_warpgroups``): warp ``w`` holds rows
``16 w`` (plus multiples of ``16 num_warps``), so warpgroup ``g``'s four
warps hold 64 consecutive rows, and inside those each warp's registers are
the instruction's: for every 8 columns, ``c0..c3`` as ``mma.sync``'s 16x8
tile.  The accumulator registers of ``Mma`` are therefore the instruction's
unchanged.  A dot whose ``b`` is a pipelined operand (a ``local_load`` left
to the dot, ``Ctx.deferred``) of a swizzled matrix the descriptors can
describe runs here; any other stays on ``mma.sync`` (``mma.py``) with the
same layouts.

*Descriptors* (``Descriptor``): start address, leading- and stride-dimension
byte offsets (each ``>> 4``) and the swizzle mode.  A ``Shared`` matrix
whose rows are cut into atoms of ``16 * max_phase`` bytes with the XOR
pattern ``per_phase * max_phase == 8`` rows deep is what the hardware calls
the 128/64/32-byte swizzle (the buffers are 1024-byte aligned,
``opt/shared_memory.py``).  Stored along ``k`` (*K-major*) the stride
offset steps 8 rows; stored along ``m`` or ``n`` (*MN-major*, the
instruction's transpose bit, 16-bit types only) the leading offset steps
from one atom to the next and the stride offset 8 rows along ``k``.

*Ordering.*  ``wgmma.fence`` before the first instruction (the accumulator
registers were written by ordinary instructions), ``commit_group``, then
``wait_group 0`` before the result is used -- or, for a dot whose one user
is a ``dot_wait`` (``dot_overlap.py``), that op's ``wait_group pending``, and
for one whose one user is a ``yield`` into a loop whose carried value and
result only ``dot_wait``s read (deferred), those waits.  The wait is inline assembly
that takes every accumulator register and gives it back (tied operands),
so LLVM cannot move a use of the result above it.  The shared memory was
written by ``cp.async`` (the generic proxy) and is read by the tensor cores
through the async proxy: ``async_wait`` adds ``fence.proxy.async`` on
targets with these instructions (``async_copy.py``).
"""
from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Optional

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.layouts import Shared, exact_log2
from tilec.ir.layouts_nvidia import TILE_M, TILE_N, Mma, mma_grid
from tilec.ir.types import ScalarType, bf16, elem_type, f8e4nv, f8e5, f16, i8
from tilec.codegen_llvm.kernel import I32, I64, Ctx, registers_of

# The instruction's rows; its k is 32 bytes of operand (16 halves, 32 int8s).
GROUP_M, K_BYTES = 64, 32
WARPS_PER_GROUP = 4
# The widest n tilec gives one instruction: the hardware's 256, so a
# warpgroup covers its columns with one instruction per 64 rows and k step.
# Against 64-wide ones, benchmarks/matmul.py on the H100 (2026-11-25,
# benchmarks/results/hopper_2026-11-25/): 0.82-0.87x -> 0.89-0.98x cuBLAS at
# 4096^3/8192^3 fp16/bf16 (docs/internals.md).
MAX_N = 256
# The descriptor's swizzle-mode field by atom row bytes.
SWIZZLE_MODES = {128: 1, 64: 2, 32: 3}
# Operand type -> the instruction's type suffix (accumulator first).
PTX_TYPES = {f16: "f32.f16.f16", bf16: "f32.bf16.bf16", i8: "s32.s8.s8", f8e4nv: "f32.e4m3.e4m3",
             f8e5: "f32.e5m2.e5m2"}


def group_k(elem: ScalarType) -> int:
    """The ``k`` one instruction covers for operands of ``elem``."""
    return K_BYTES // elem.bytes


def n_fits(elem: ScalarType, n: int) -> bool:
    """Whether ``n`` columns split into instruction widths: multiples of 8
    for floats; for int8, 8 to 32, then multiples of 16."""
    return n % TILE_N == 0 and (elem.is_float or all(w <= 32 or w % 16 == 0 for _, w in _n_chunks(n)))


@dataclass(frozen=True)
class Descriptor:
    """How the tensor cores read one operand matrix from shared memory:
    ``leading``/``stride`` byte offsets and the swizzle ``mode`` (module
    docstring), ``transposed`` for an MN-major matrix, and ``offset(outer,
    k)``, the byte offset of the 8-aligned element ``(outer, k)``."""

    layout: Shared
    shape: tuple  # the matrix's [rows, cols] as stored in the tile ([M, K] for a, [K, N] for b)
    elem_bytes: int
    is_a: bool

    @property
    def transposed(self) -> bool:
        """Stored along ``m``/``n`` (MN-major) rather than along ``k``."""
        return self.layout.matrix_dims[1] != (1 if self.is_a else 0)

    @property
    def fast_size(self) -> int:
        return self.shape[self.layout.matrix_dims[1]]

    @property
    def slow_size(self) -> int:
        return self.shape[self.layout.matrix_dims[0]]

    @property
    def atom_bytes(self) -> int:
        return 16 * self.layout.max_phase

    @property
    def atom(self) -> int:
        """Elements of one atom's row."""
        return self.atom_bytes // self.elem_bytes

    def bits(self) -> int:
        """The constant fields of the descriptor (all but the start address)."""
        leading = self.slow_size * self.atom_bytes if self.transposed else 16
        stride = 8 * self.atom_bytes
        return ((leading >> 4) << 16) | ((stride >> 4) << 32) | (SWIZZLE_MODES[self.atom_bytes] << 62)

    def offset(self, outer: int, k: int) -> int:
        """Byte offset of element ``(outer, k)`` (outer: a row of ``a``, a
        column of ``b``), both on an 8-element, atom-aligned boundary, so the
        swizzle leaves it in place."""
        coords = (outer, k) if self.is_a else (k, outer)
        return self.layout.unswizzled_offset(self.shape, coords) * self.elem_bytes


def descriptor_for(layout: Shared, shape: tuple, elem: ScalarType, is_a: bool) -> Optional[Descriptor]:
    """The ``Descriptor`` of a shared matrix, or None when the tensor cores
    cannot read it: not a 128/64/32-byte swizzle of 16-byte vectors, a row
    narrower than its atom, or MN-major with other than 16-bit elements."""
    if elem not in PTX_TYPES:
        return None
    if elem.bits != 16 and layout.order[0] - (layout.rank - 2) != (1 if is_a else 0):
        return None  # only 16-bit operands have the transpose bits
    sw = layout.per_phase * layout.max_phase == 8 and layout.vec * elem.bytes == 16
    if not sw or 16 * layout.max_phase not in SWIZZLE_MODES:
        return None
    desc = Descriptor(layout, tuple(shape[-2:]), elem.bytes, is_a)
    if desc.fast_size % desc.atom:
        return None
    return desc


def warpgroup_dot_fits(ctx: Ctx, op: ir.Dot) -> bool:
    """True when ``op`` runs here (module docstring): the target has the
    instructions, the accumulator is ``Mma((num_warps, 1))`` over whole
    warpgroups, and ``b`` is a deferred read of a matrix a descriptor
    describes (``a`` too, or ``a`` in registers)."""
    layout = op.result.type.layout
    if not ctx.target.group_matrix_instructions or not isinstance(layout, Mma):
        return False
    if layout.wpc != (ctx.num_warps, 1) or ctx.num_warps % WARPS_PER_GROUP:
        return False
    (m, k), n = op.a.type.shape, op.b.type.shape[1]
    elem = elem_type(op.a.type)
    if elem not in PTX_TYPES or m % (TILE_M * ctx.num_warps) or k % group_k(elem) or not n_fits(elem, n):
        return False
    b_reader = ctx.deferred.get(op.b)
    return b_reader is not None and _reader_descriptor(b_reader, is_a=False) is not None


def _reader_descriptor(reader, is_a: bool) -> Optional[Descriptor]:
    return descriptor_for(reader.layout, reader.shape, reader.elem, is_a)


def lower_warpgroup_dot(ctx: Ctx, op: ir.Dot, step_words) -> None:
    """``acc + a @ b`` on ``wgmma`` (module docstring).  When no descriptor
    reads ``a``, ``step_words(ctx, a, elem)(ks)`` gives its registers per row
    tile (``mma._step_words``)."""
    b = ctx.b
    elem = elem_type(op.a.type)
    k, n = op.a.type.shape[1], op.b.type.shape[1]
    a_reader = ctx.deferred.get(op.a)
    a_desc = _reader_descriptor(a_reader, is_a=True) if a_reader is not None else None
    if a_desc is not None:
        ctx.deferred.pop(op.a)
    b_reader = ctx.deferred.pop(op.b)
    b_desc = _reader_descriptor(b_reader, is_a=False)
    reps_m, reps_n = mma_grid(op.result.type.layout, op.result.type.shape)
    group = b.lshr(ctx.warp, I32(exact_log2(WARPS_PER_GROUP)))
    # warpgroup g's rows start at 64 g (then every 16 * num_warps)
    b_base = _descriptor_base(ctx, b_reader.base, b_desc, None)
    a_base = _descriptor_base(ctx, a_reader.base, a_desc, group) if a_desc is not None else None
    acc = list(ctx[op.acc])
    a_regs = None if a_desc is not None else step_words(ctx, op.a, elem)
    _fence(ctx)
    k_step = group_k(elem)
    for ks in range(k // k_step):
        a_step = a_regs(ks) if a_regs is not None else None
        for rm in range(reps_m):
            row0 = rm * TILE_M * ctx.num_warps
            for n0, width in _n_chunks(n):
                b_d = _add(ctx, b_base, b_desc.offset(n0, ks * k_step))
                first = (rm * reps_n + n0 // TILE_N) * 4
                count = width // TILE_N * 4
                if a_desc is not None:
                    a_op = [_add(ctx, a_base, a_desc.offset(row0, ks * k_step))]
                else:
                    a_op = a_step[rm]
                acc[first:first + count] = _issue(ctx, elem, width, a_desc, b_desc, a_op, b_d,
                                                  acc[first:first + count])
    _commit(ctx)
    ctx.bind(op.results, [acc if _waited_later(ctx, op) else _wait(ctx, acc, 0)])


def _waited_later(ctx: Ctx, op: ir.Dot) -> bool:
    """Whether every read of ``op``'s result passes a ``dot_wait`` first: its
    one user is one, or a ``for``'s ``yield`` whose carried value and result
    only ``dot_wait``s read (the module doc's ordering)."""
    users = ctx.users.get(op.result, [])
    if len(users) != 1:
        return False
    user, block = users[0]
    if isinstance(user, ir.DotWait):
        return True
    loop = _loop_of(ctx.fn.body, block) if isinstance(user, ir.Yield) else None
    if loop is None or user.values.count(op.result) != 1:
        return False
    place = user.values.index(op.result)
    return all(isinstance(reader, ir.DotWait) for v in (block.args[1 + place], loop.results[place])
               for reader, _ in ctx.users.get(v, []))


def _loop_of(outer: "ir.Block", body: "ir.Block") -> Optional[ir.For]:
    """The ``for`` whose body is ``body``, anywhere inside ``outer``."""
    for op in outer.ops:
        for region in op.regions:
            if region is body:
                return op if isinstance(op, ir.For) else None
            found = _loop_of(region, body)
            if found is not None:
                return found
    return None


def lower_dot_wait(ctx: Ctx, op: ir.DotWait) -> None:
    """``wgmma.wait_group`` with the accumulator's registers tied through it."""
    ctx.bind(op.results, [_wait(ctx, list(ctx[op.value]), op.pending)])


def _n_chunks(n: int) -> list[tuple[int, int]]:
    """``(start, width)`` of each instruction's columns: ``MAX_N`` wide, the rest last."""
    return [(n0, min(MAX_N, n - n0)) for n0 in range(0, n, MAX_N)]


def _descriptor_base(ctx: Ctx, base, desc: Descriptor, group) -> llir.Value:
    """The descriptor of the matrix at ``base`` (plus warpgroup ``group``'s
    64-row offset for ``a``) as an i64: start address and constant fields."""
    b = ctx.b
    address = b.ptrtoint(base, I32)
    if group is not None:
        address = b.add(address, b.mul(group, I32(desc.offset(GROUP_M, 0))))
    start = b.zext(b.and_(b.lshr(address, I32(4)), I32(0x3FFF)), I64)
    return b.or_(start, I64(desc.bits()))


def _add(ctx: Ctx, desc, offset: int):
    """``desc`` moved ``offset`` bytes on (the start address field, which never carries)."""
    return ctx.b.add(desc, I64(offset >> 4)) if offset else desc


def _issue(ctx: Ctx, elem: ScalarType, n: int, a_desc: Optional[Descriptor], b_desc: Descriptor,
           a_op: list, b_d, acc: list) -> list:
    fn = _wgmma_asm(PTX_TYPES[elem], n, a_desc is None, a_desc is not None and a_desc.transposed,
                    b_desc.transposed)
    out = ctx.b.call(fn, a_op + [b_d] + acc)
    return [ctx.b.extract_value(out, i) for i in range(len(acc))]


@functools.cache
def _wgmma_asm(types: str, n: int, a_in_registers: bool, trans_a: bool, trans_b: bool) -> llir.InlineAsm:
    """``wgmma.mma_async.sync.aligned.m64n{n}k{k}.{types}`` with ``n / 2``
    accumulators in and out (tied), accumulating (scale-d 1); floating-point
    forms also take the operand scales (1), and 16-bit ones the transpose
    bits, which 8-bit forms do not have."""
    count = n // 2
    elem = next(e for e, t in PTX_TYPES.items() if t == types)
    outs = ", ".join(f"${i}" for i in range(count))
    floating = types.startswith("f32")
    transposes = [trans_b] if a_in_registers else [trans_a, trans_b]
    bits = "".join(f", {int(x)}" for x in ([1, 1] if floating else []) + (transposes if elem.bits == 16 else []))
    if a_in_registers:
        a_text, a_types, a_cons = "{" + ", ".join(f"${count + i}" for i in range(4)) + "}", [I32] * 4, ["r"] * 4
    else:
        a_text, a_types, a_cons = f"${count}", [I64], ["l"]
    b_at = count + len(a_types)
    instruction = f"wgmma.mma_async.sync.aligned.m64n{n}k{group_k(elem)}.{types}"
    text = ("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, 1, 0;\n\t"
            f"{instruction} {{{outs}}}, {a_text}, ${b_at}, p{bits};\n\t}}")
    acc, reg = _accumulator(floating)
    constraints = ",".join([f"={reg}"] * count + a_cons + ["l"] + [str(i) for i in range(count)])
    ftype = llir.FunctionType(llir.LiteralStructType([acc] * count), a_types + [I64] + [acc] * count)
    return llir.InlineAsm(ftype, text, constraints, side_effect=True)


def _accumulator(floating: bool) -> tuple:
    """The LLVM type and inline-asm register class of an accumulator register."""
    return (llir.FloatType(), "f") if floating else (I32, "r")


def _fence(ctx: Ctx) -> None:
    _void_asm(ctx, "wgmma.fence.sync.aligned;")


def _commit(ctx: Ctx) -> None:
    _void_asm(ctx, "wgmma.commit_group.sync.aligned;")


def _void_asm(ctx: Ctx, text: str) -> None:
    ctx.b.call(llir.InlineAsm(llir.FunctionType(llir.VoidType(), []), text, "~{memory}", side_effect=True), [])


def _wait(ctx: Ctx, acc: list, pending: int) -> list:
    """``wgmma.wait_group pending``, every accumulator register through it."""
    fn = _wait_asm(len(acc), pending, isinstance(acc[0].type, llir.FloatType))
    out = ctx.b.call(fn, acc)
    return [ctx.b.extract_value(out, i) for i in range(len(acc))]


@functools.cache
def _wait_asm(count: int, pending: int, floating: bool) -> llir.InlineAsm:
    acc, reg = _accumulator(floating)
    constraints = ",".join([f"={reg}"] * count + [str(i) for i in range(count)] + ["~{memory}"])
    ftype = llir.FunctionType(llir.LiteralStructType([acc] * count), [acc] * count)
    return llir.InlineAsm(ftype, f"wgmma.wait_group.sync.aligned {pending};", constraints, side_effect=True)


def starts_loop_accumulator(ctx: Ctx, op: ir.Constant) -> bool:
    """Whether ``op`` is a 32-bit tile in the warpgroup accumulator layout
    that a ``for`` carries in (the K loop's ``tl.zeros``), on a target with
    the warpgroup instructions."""
    t = op.result.type
    return ctx.target.group_matrix_instructions and isinstance(t, ir.TileType) and \
        t.layout == Mma((ctx.num_warps, 1)) and t.elem.bits == 32 and \
        any(isinstance(user, ir.For) for user, _ in ctx.users.get(op.result, []))


def lower_loop_accumulator(ctx: Ctx, op: ir.Constant) -> None:
    """The accumulator's starting registers from one inline asm (``mov.b32``
    each), not LLVM constants.

    LLVM gives the loop's result its starting value on the path that skips
    the loop (zero iterations) with moves of its own, which it may put in a
    block of their own just before the final ``wgmma.wait_group 0``; ``ptxas``
    then sees non-wgmma instructions define accumulator registers within
    the loop's wgmma pipeline stage and serializes every wgmma (C7515: a
    wait after each).  The asm's results are values defined before the loop
    and its guard, which the register coalescer merges with the loop's
    accumulators: the path that skips the loop sets nothing, as in Triton's
    PTX.  Measured on the H100: docs/internals.md, "Hopper's warpgroup
    instructions"."""
    t = op.result.type
    count = registers_of(op.result)
    floating = t.elem.is_float
    bits = struct.unpack("<I", struct.pack("<f", float(op.value)))[0] if floating else int(op.value) & 0xFFFFFFFF
    text = "\n\t".join(f"mov.b32 ${i}, 0x{bits:08X};" for i in range(count))
    acc, reg = _accumulator(floating)
    fn = llir.InlineAsm(llir.FunctionType(llir.LiteralStructType([acc] * count), []), text,
                        ",".join([f"={reg}"] * count))
    out = ctx.b.call(fn, [])
    ctx.bind(op.results, [[ctx.b.extract_value(out, i) for i in range(count)]])
