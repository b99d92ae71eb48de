"""``map_elementwise`` and ``inline_asm``: what the kernel's author wrote,
applied to each thread's registers ``pack`` at a time.

``map_elementwise``'s body is lowered inline once per group of registers,
as a reduction's combine region is (``control.run_region``); its control
flow branches per thread.  ``inline_asm`` follows Triton's convention for
operands: elements narrower than 32 bits travel as vectors filling 32-bit
registers (``pack=4`` of ``i8`` is one ``<4 x i8>``), pointers as 64-bit
integers, several outputs as one struct.  Whether a target can run the asm
text is the backend's to say (``TargetLowering.inline_asm``).

A thread holding fewer registers than a multiple of ``pack`` (a small tile
over many threads) fills its last group by repeating its last register and
drops the extra results: which elements share a group is unspecified.
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.types import PointerType, elem_type
from tilec.codegen_llvm.control import run_region
from tilec.codegen_llvm.kernel import I32, I64, Ctx, lowers
from tilec.codegen_llvm.scalar_base import llvm_type


def _groups(count: int, pack: int) -> list[tuple[list[int], int]]:
    """The register indices of each group of ``pack`` (the last padded with
    repeats of register ``count - 1``) and how many of them are real."""
    out = []
    for start in range(0, count, pack):
        real = min(pack, count - start)
        out.append(([start + min(j, real - 1) for j in range(pack)], real))
    return out


@lowers(ir.MapElementwise)
def _map_elementwise(ctx: Ctx, op: ir.MapElementwise) -> None:
    srcs, pack = [ctx[v] for v in op.srcs], op.pack
    outs: list[list] = [[] for _ in op.results]
    for regs, real in _groups(len(srcs[0]), pack):
        yielded = run_region(ctx, op.body, [[src[i]] for src in srcs for i in regs])
        for r, out in enumerate(outs):
            out.extend(v[0] for v in yielded[r * pack:r * pack + real])
    ctx.bind(op.results, outs)


# --------------------------------------------------------------------------- #
# inline_asm
# --------------------------------------------------------------------------- #

def _per_register(t, pack: int) -> int:
    """How many elements of type ``t`` share one asm operand (Triton's rule)."""
    bits = 64 if isinstance(t, PointerType) else t.bits
    return min(32 // bits, pack) if bits < 32 else 1


def _operands(ctx: Ctx, values: list, t, pack: int) -> list[llir.Value]:
    """One group's ``values`` of type ``t`` as asm operands: vectors filling 32 bits, pointers as i64."""
    if isinstance(t, PointerType):
        return [ctx.b.ptrtoint(v, I64) for v in values]
    n = _per_register(t, pack)
    if n == 1:
        return list(values)
    out = []
    for j in range(0, len(values), n):
        vec = llir.Constant(llir.VectorType(llvm_type(t), n), llir.Undefined)
        for k, v in enumerate(values[j:j + n]):
            vec = ctx.b.insert_element(vec, v, I32(k))
        out.append(vec)
    return out


def _result_registers(t, pack: int) -> list[llir.Type]:
    """The asm outputs holding ``pack`` results of type ``t``."""
    n = _per_register(t, pack)
    one = llvm_type(t) if n == 1 else llir.VectorType(llvm_type(t), n)
    return [one] * (pack // n)


def _elements(ctx: Ctx, words: list[llir.Value]) -> list[llir.Value]:
    """The elements held by asm outputs ``words`` (vectors opened up)."""
    out = []
    for w in words:
        if isinstance(w.type, llir.VectorType):
            out.extend(ctx.b.extract_element(w, I32(k)) for k in range(w.type.count))
        else:
            out.append(w)
    return out


@lowers(ir.InlineAsm)
def _inline_asm(ctx: Ctx, op: ir.InlineAsm) -> None:
    srcs, pack = [ctx[v] for v in op.srcs], op.pack
    kinds = [_result_registers(t, pack) for t in op.dtypes]
    flat = [w for k in kinds for w in k]
    ret = flat[0] if len(flat) == 1 else llir.LiteralStructType(flat)
    outs: list[list] = [[] for _ in op.results]
    for regs, real in _groups(len(srcs[0]) if srcs else 1, pack):
        operands = [x for src, v in zip(srcs, op.srcs)
                    for x in _operands(ctx, [src[i] for i in regs], elem_type(v.type), pack)]
        got = ctx.lowering.inline_asm(ctx, op.asm, op.constraints, operands, ret, side_effects=not op.pure)
        words = [got] if len(flat) == 1 else [ctx.b.extract_value(got, k) for k in range(len(flat))]
        start = 0
        for out, k in zip(outs, kinds):
            out.extend(_elements(ctx, words[start:start + len(k)])[:real])
            start += len(k)
    ctx.bind(op.results, outs)


def _llvm_string(text: str) -> str:
    """``text`` inside an LLVM string literal: quotes, backslashes and
    control characters as ``\\XX`` escapes."""
    return "".join(c if " " <= c <= "~" and c not in '"\\' else "".join(f"\\{b:02X}" for b in c.encode())
                   for c in text)


def emit_inline_asm(ctx: Ctx, asm: str, constraints: str, operands: list[llir.Value], result: llir.Type,
                    side_effects: bool) -> llir.Value:
    """LLVM's inline-assembly call of ``asm`` (the target's text, ``$n`` naming
    operand ``n``) with LLVM ``constraints`` (blanks ignored), for a backend
    whose target runs it (``TargetLowering.inline_asm``)."""
    fnty = llir.FunctionType(result, [v.type for v in operands])
    return ctx.b.asm(fnty, _llvm_string(asm), _llvm_string("".join(constraints.split())), operands, side_effects)
