"""Atomics as single PTX instructions that carry their ordering and scope.

``atom.global.gpu.acq_rel.add.f32`` is one instruction where LLVM's NVPTX
backend emits a relaxed ``atom`` between two ``fence.acq_rel.gpu`` for
several read-modify-writes (it drops the ordering of some, so codegen's
generic path fences them itself).  The instruction is the cheaper form, and
the one Triton emits, so tools that read a kernel's PTX for its atomics find
what they look for: read-modify-writes spell scope before ordering
(``atom.global.gpu.acq_rel.max.s32``), compare-and-swaps ordering before
scope (``atom.global.acq_rel.gpu.cas.b32``), as Triton's do; ptxas takes
either order.

What PTX has no instruction for (8- and 16-bit integers, ``max``/``min`` of
16-bit floats, a bf16 add before sm_90) stays on codegen's generic path.
Float ``max``/``min`` are a compare-and-swap loop here, each try one ``cas``
with the op's ordering: ``maxnum``/``minnum`` of the value read and the
operand, as LLVM's own expansion (a NaN operand leaves memory alone, a NaN
in memory is replaced), so the GPU agrees with the interpreter's ``fmax``.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir as llir

from tilec.codegen_llvm.kernel import Ctx
from tilec.codegen_llvm.maps import emit_inline_asm
from tilec.codegen_llvm.memory import scoped
from tilec.codegen_llvm.scalar_base import bit_width, overloaded
from tilec.backends.nvidia.target import REGISTER_CONSTRAINTS, capability

# LLVM's read-modify-write names (``memory._rmw_name``) -> PTX's op, per
# operand kind: "b" bits, "u" unsigned, "s" signed, "f" float.
_INTEGER_OPS = {
    "add": ("add", "u"), "max": ("max", "s"), "min": ("min", "s"), "umax": ("max", "u"),
    "umin": ("min", "u"), "and": ("and", "b"), "or": ("or", "b"), "xor": ("xor", "b"), "xchg": ("exch", "b"),
}
_FLOAT_LOOPS = {"fmax": "llvm.maxnum", "fmin": "llvm.minnum"}


def _float_name(t: llir.Type) -> str:
    """PTX's name of float type ``t`` (``f32``, ``bf16``...)."""
    return "bf16" if str(t) == "bfloat" else f"f{bit_width(t)}"


def _ptx_op(ctx: Ctx, name: str, t: llir.Type) -> Optional[str]:
    """``add.f32``, ``max.s64``... : the PTX op and type of read-modify-write
    ``name`` on ``t``, None where PTX has no single instruction for it."""
    bits = bit_width(t)
    if isinstance(t, llir.IntType):
        if bits not in (32, 64) or name not in _INTEGER_OPS:
            return None
        op, kind = _INTEGER_OPS[name]
        return f"{op}.{kind}{bits}"
    if name == "xchg" and bits in (32, 64):
        return f"exch.b{bits}"
    if name != "fadd":
        return None
    if bits == 16:  # f16 from sm_70, bf16 from sm_90 (earlier: generic path)
        return None if str(t) == "bfloat" and capability(ctx.target.cpu) < 90 else f"add.noftz.{_float_name(t)}"
    return f"add.{_float_name(t)}"


def _as_bits(ctx: Ctx, v: llir.Value) -> llir.Value:
    return v if isinstance(v.type, llir.IntType) else ctx.b.bitcast(v, llir.IntType(bit_width(v.type)))


def _asm(ctx: Ctx, text: str, ptr: llir.Value, operands: list[llir.Value]) -> llir.Value:
    """``text`` (``$0`` the old value, ``$1`` the address, then ``operands``)
    on the integer bits of ``operands``; the old value as the operands' type."""
    t = operands[0].type
    reg = REGISTER_CONSTRAINTS[bit_width(t)]
    constraints = f"={reg},l," + ",".join(reg for _ in operands) + ",~{memory}"
    old = emit_inline_asm(ctx, text, constraints, [ptr] + [_as_bits(ctx, v) for v in operands],
                          llir.IntType(bit_width(t)), side_effects=True)
    return old if old.type == t else ctx.b.bitcast(old, t)


def atomic_rmw(ctx: Ctx, name: str, ptr: llir.Value, value: llir.Value, sem: str,
               scope: str) -> Optional[llir.Value]:
    """The old value of read-modify-write ``name`` (LLVM's: ``add``, ``fadd``,
    ``umax``...) of ``value`` at ``ptr``, one ``atom`` with tile-IR ``sem``
    and ``scope``; None where PTX has no instruction for it (module docstring)."""
    if name in _FLOAT_LOOPS and bit_width(value.type) in (32, 64):
        return _float_loop(ctx, _FLOAT_LOOPS[name], ptr, value, sem, scope)
    op = _ptx_op(ctx, name, value.type)
    if op is None:
        return None
    return _asm(ctx, f"atom.global.{scope}.{sem}.{op} $0, [$1], $2;", ptr, [value])


def atomic_cas(ctx: Ctx, ptr: llir.Value, cmp: llir.Value, val: llir.Value, sem: str,
               scope: str) -> Optional[llir.Value]:
    """The old value at ``ptr`` of a compare-and-swap of ``cmp`` for ``val``
    (compared bit by bit), one ``atom.cas``; None for a width PTX lacks."""
    return _cas(ctx, ptr, cmp, val, f"{sem}.{scope}")


def _cas(ctx: Ctx, ptr: llir.Value, cmp: llir.Value, val: llir.Value, qualifiers: str) -> Optional[llir.Value]:
    """``atom.global.<qualifiers>.cas`` of ``cmp`` for ``val`` at ``ptr`` (its
    old value), None for a width PTX lacks."""
    bits = bit_width(cmp.type)
    if bits not in REGISTER_CONSTRAINTS:
        return None
    return _asm(ctx, f"atom.global.{qualifiers}.cas.b{bits} $0, [$1], $2, $3;", ptr, [cmp, val])


def _float_loop(ctx: Ctx, combine: str, ptr: llir.Value, value: llir.Value, sem: str, scope: str) -> llir.Value:
    """A float ``max``/``min``: read, ``combine`` (``llvm.maxnum``...), and
    compare-and-swap until no other thread wrote in between; the old value."""
    b, t = ctx.b, value.type
    start = b.block
    first = b.load_atomic(ptr, scoped("monotonic", ctx.lowering.syncscope(scope)), align=bit_width(t) // 8, typ=t)
    retry = b.append_basic_block("atomic_retry")
    done = b.append_basic_block("atomic_done")
    b.branch(retry)
    b.position_at_end(retry)
    seen = b.phi(t)
    seen.add_incoming(first, start)
    wanted = ctx.call(overloaded(combine, t), [seen, value], t)
    got = _cas(ctx, ptr, seen, wanted, f"{scope}.{sem}")  # spelled as a read-modify-write
    seen.add_incoming(got, retry)
    b.cbranch(b.icmp_unsigned("==", _as_bits(ctx, got), _as_bits(ctx, seen)), done, retry)
    b.position_at_end(done)
    return got
