"""``dot`` on the FMA units: every backend's ``dot``, and the fallback of a
backend with matrix units (its own ``dot`` rule) for what they do not take.

Both operands go to shared memory row-major; then a loop over ``k`` loads,
for each accumulator register at ``(batch, m, n)``, ``a[batch, m, k]`` and
``b[batch, k, n]`` and accumulates their product in the accumulator's type
(inputs are widened first, fp8 decoded exactly; ``tf32`` rounds f32
inputs to 10 mantissa bits, nearest even, as the interpreter does;
``tf32x3`` and ``ieee`` multiply
them as they are, as it does too -- at least as accurate as Triton's three
tf32 passes).  An f16/bf16 accumulator is carried
in f32 and rounded once at the end, as the interpreter (and the tensor
cores) do.
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.types import ScalarType, bf16, elem_type, f16, f32
from tilec.codegen_llvm.kernel import I32, Ctx, coordinates, element_address, linear_index, lowers
from tilec.codegen_llvm.scalar_base import llvm_type, memory_type, resize_int
from tilec.codegen_llvm.scalar_casts import convert
from tilec.codegen_llvm.shuffle import stage_in_smem


@lowers(ir.Dot)
def fma_dot(ctx: Ctx, op: ir.Dot) -> None:
    """``acc + a @ b``, one fma per accumulator register and ``k`` (module docstring)."""
    a_t, b_t, c_t = op.a.type, op.b.type, op.result.type
    in_elem, out_elem = elem_type(a_t), elem_type(c_t)
    acc_elem = f32 if out_elem in (f16, bf16) else out_elem  # as the interpreter: one final rounding
    a_base, b_base = stage_in_smem(ctx, [(ctx[op.a], a_t), (ctx[op.b], b_t)])
    size = max(1, in_elem.bits // 8)
    K, N = a_t.shape[-1], b_t.shape[-1]
    b = ctx.b
    rows, cols = [], []
    for coords in coordinates(ctx, op.result):
        *batch, m, n = coords
        rows.append(linear_index(ctx, tuple(batch) + (m, I32(0)), a_t.shape))
        cols.append(linear_index(ctx, tuple(batch) + (I32(0), n), b_t.shape))
    inits = [_widen(ctx, v, out_elem, acc_elem) for v in ctx[op.acc]]
    start = b.block
    loop = b.append_basic_block("dot.k")
    done = b.append_basic_block("dot.done")
    b.branch(loop)
    b.position_at_end(loop)
    k = b.phi(I32)
    k.add_incoming(I32(0), start)
    accs = []
    for init in inits:
        phi = b.phi(init.type)
        phi.add_incoming(init, start)
        accs.append(phi)
    new = []
    for acc, row, col in zip(accs, rows, cols):
        x = _operand(ctx, _smem_load(ctx, a_base, b.add(row, k), size, in_elem), in_elem, acc_elem, op)
        y = _operand(ctx, _smem_load(ctx, b_base, b.add(col, b.mul(k, I32(N))), size, in_elem), in_elem, acc_elem, op)
        new.append(_multiply_add(ctx, x, y, acc, acc_elem))
    k_next = b.add(k, I32(1))
    k.add_incoming(k_next, loop)
    for phi, v in zip(accs, new):
        phi.add_incoming(v, loop)
    b.cbranch(b.icmp_unsigned("<", k_next, I32(K)), loop, done)
    b.position_at_end(done)
    if acc_elem != out_elem:
        new = [b.fptrunc(v, llvm_type(out_elem)) for v in new]
    ctx.bind(op.results, [new])


def _smem_load(ctx: Ctx, base, index, size: int, elem: ScalarType):
    return ctx.b.load(element_address(ctx.b, base, index, size), typ=memory_type(elem), align=size)


def _operand(ctx: Ctx, x, src: ScalarType, dst: ScalarType, op: ir.Dot):
    """An input element as the accumulation multiplies it."""
    if src.name == "f32" and op.input_precision == "tf32":
        x = round_tf32(ctx, x)
    return _widen(ctx, x, src, dst)


def round_tf32(ctx: Ctx, x):
    """f32 ``x`` rounded to 10 mantissa bits, nearest even (NaN and inf kept)."""
    b = ctx.b
    bits = b.bitcast(x, I32)
    lsb = b.and_(b.lshr(bits, I32(13)), I32(1))
    rounded = b.and_(b.add(bits, b.add(I32(0xFFF), lsb)), I32(~0x1FFF))
    finite = b.icmp_unsigned("!=", b.and_(bits, I32(0x7F800000)), I32(0x7F800000))
    return b.bitcast(b.select(finite, rounded, bits), llir.FloatType())


def _widen(ctx: Ctx, x, src: ScalarType, dst: ScalarType):
    if src.is_fp8:  # its bits: decoded exactly
        return convert(ctx.scalar, x, src, dst, "rtne")
    if src.is_float:
        return ctx.b.fpext(x, llvm_type(dst)) if src.bits < dst.bits else x
    return resize_int(ctx.scalar, x, src, dst.bits)


def _multiply_add(ctx: Ctx, x, y, acc, t: ScalarType):
    if t.is_float:
        return ctx.call(f"llvm.fma.{llvm_type(t).intrinsic_name}", [x, y, acc])
    return ctx.b.add(ctx.b.mul(x, y), acc)
