"""How codegen's rules run on AMD GPUs: ``AmdLowering``, the backend's
``TargetLowering``.

The thread's index in its workgroup is ``llvm.amdgcn.workitem.id.x``, the
program's ``llvm.amdgcn.workgroup.id.{x,y,z}``; the grid's size in
workgroups is the code object v5 implicit kernel argument
``hidden_block_count_{x,y,z}`` (the first three i32 after the explicit
arguments, which the HIP runtime fills at every launch).  The workgroup
barrier is ``s_barrier`` between a workgroup-scope release and acquire fence,
so LDS writes before it are seen after it.  Lanes of a wave swap words with
``ds_bpermute`` (any lane of the wave, 64 or 32, by byte address).  LDS is
address space 3; atomics keep LLVM's ``atomicrmw``/``cmpxchg`` with AMDGPU's
syncscopes: ``gpu`` is ``agent``, ``cta`` is ``workgroup``, ``sys`` the
whole system.  The math library is tilec's own (``codegen_llvm.portable_math``,
as the host's: no ROCm device libraries needed), but for f32 ``exp``,
``exp2``, ``log`` and ``log2``, which go to the hardware's instructions as
Triton's do (``AmdMath``): ``exp`` is ``llvm.exp2.f32(x * log2 e)``, ``log``
and ``log2`` LLVM's intrinsics, which the AMDGPU target lowers to
``v_exp_f32``/``v_log_f32`` with denormal scaling; ``exp2`` is
``llvm.amdgcn.exp2.f32``, the bare ``v_exp_f32``, which reads subnormal
inputs as 0 and returns 0 for results under 2^-126 (Triton's AMD ``exp2``
with its default ``__HIP_FTZ``; f16 and bf16 through f32, as on NVIDIA).
C's exact functions the portable library leaves to a C library and the
AMDGPU target selects itself (``rint``, ``nearbyint``, ``trunc``,
``round``, ``copysign``, ``ldexp``, ``scalbn``: ``v_rndne``, ``v_trunc``,
``v_bfi``, ``v_ldexp``...) are LLVM's intrinsics (``SELECTED_FUNCTIONS``):
exact, so the same bits as the host's C library and NVIDIA's libdevice.
Any other function the library lacks is a
CompilationError at the op's line (and the link stage refuses a code object
calling an external symbol, ``stages.check_code_object``, should one get
past).

Not yet: ``device_print`` (HIP's printf goes through the host-call buffer
that ROCm's device libraries implement) is a CompilationError at its line;
a failed ``device_assert`` traps (``s_trap``), which ends the kernel with an
error the host sees but without the message; inline assembly
(``tl.inline_asm_elementwise``: text written for another GPU) is refused by the base
hook.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from llvmlite import ir as llir

from tilec.errors import TilecError
from tilec.codegen_llvm import TargetLowering
from tilec.codegen_llvm.kernel import I32, Ctx
from tilec.codegen_llvm.portable_math import PortableMath
from tilec.codegen_llvm.scalar_base import MathFn, call, declare, overloaded
from tilec.codegen_llvm.scalar_math import MATH, library
from tilec import ir
from tilec.backends.amd import matrix
from tilec.backends.amd.target import kernel_attributes

LDS_SPACE = 3  # AMDGPU's address space of the workgroup's LDS
CONSTANT_SPACE = 4  # where the kernel arguments live
_SYNCSCOPE = {"gpu": "agent", "cta": "workgroup", "sys": None}
_AXES = "xyz"
# C's exact functions (by C's name) as the LLVM intrinsics the AMDGPU target
# selects on every arch, f32 and f64 (checked for all five archs)
SELECTED_FUNCTIONS = {"rint": "llvm.rint", "nearbyint": "llvm.nearbyint", "trunc": "llvm.trunc",
                      "round": "llvm.round", "copysign": "llvm.copysign", "ldexp": "llvm.ldexp",
                      "scalbn": "llvm.ldexp"}


def _selected(name: str):
    """``x -> llvm.<name>.f32(x)``: an intrinsic the AMDGPU target selects itself, no library call."""
    return lambda ctx, x: call(ctx, overloaded(f"llvm.{name}", x.type), [x])


class AmdMath(PortableMath):
    """The portable library, with f32 ``exp``/``exp2``/``log``/``log2`` as the hardware's (module docstring)."""

    recipes = {ir.Exp: MathFn(MATH[ir.Exp].f32, library("exp")), ir.Exp2: MathFn(_selected("amdgcn.exp2"), library("exp2")),
               ir.Log: MathFn(_selected("log"), library("log")), ir.Log2: MathFn(_selected("log2"), library("log2"))}

    def callee(self, ctx, name: str, t: llir.Type, signature: llir.FunctionType) -> llir.Function:
        """The portable library's ``name``, or its intrinsic of ``SELECTED_FUNCTIONS``;
        a TilecError (at the op's line: a CompilationError) for one it leaves
        to a C library, which no AMD GPU has."""
        intrinsic = SELECTED_FUNCTIONS.get(name)
        if intrinsic is not None:  # overloaded on the float type and ldexp's exponent type
            types = [t, *(a for a in signature.args if a != t)]
            return declare(ctx, overloaded(intrinsic, *types), signature.return_type, list(signature.args))
        fn = super().callee(ctx, name, t, signature)
        if fn.is_declaration:
            raise TilecError(f"the AMD backend cannot compute `{fn.name}` (C's {name} on {t}) yet: tilec's portable "
                             "math library does not have it and no AMD device library is linked; run the kernel on "
                             "the host, or on an NVIDIA GPU")
        return fn


@dataclass(frozen=True)
class AmdLowering(TargetLowering):
    """The AMD backend's hooks (module docstring) for waves of ``wave_size``
    lanes, ``waves_per_eu`` of them a SIMD when asked (0: no request)."""

    wave_size: int = 64
    waves_per_eu: int = 0

    name = "AMD"
    rules = matrix.RULES
    math = AmdMath()
    calling_convention = "amdgpu_kernel"
    shared_address_space = LDS_SPACE

    def thread_id(self, ctx: Ctx) -> llir.Value:
        return ctx.call("llvm.amdgcn.workitem.id.x", [], I32)

    def program_id(self, ctx: Ctx, axis: int) -> llir.Value:
        return ctx.call(f"llvm.amdgcn.workgroup.id.{_AXES[axis]}", [], I32)

    def num_programs(self, ctx: Ctx, axis: int) -> llir.Value:
        """``hidden_block_count_<axis>``: offset 4*axis of the implicit arguments."""
        b = ctx.b
        implicit = ctx.call("llvm.amdgcn.implicitarg.ptr", [], llir.PointerType(addrspace=CONSTANT_SPACE))
        count = b.gep(implicit, [I32(4 * axis)], inbounds=True, source_etype=llir.IntType(8)) if axis else implicit
        value = b.load(count, typ=I32)
        value.align = 4
        return value

    def barrier(self, ctx: Ctx) -> None:
        b = ctx.b
        b.fence("release", "workgroup")
        ctx.call("llvm.amdgcn.s.barrier", [], llir.VoidType())
        b.fence("acquire", "workgroup")

    def shuffle_xor(self, ctx: Ctx, word: llir.Value, lane_mask: int) -> llir.Value:
        """``ds_bpermute`` from lane ``lane ^ lane_mask`` (its address is the lane times 4)."""
        b = ctx.b
        source = b.shl(b.xor(ctx.lane, I32(lane_mask)), I32(2))
        return ctx.call("llvm.amdgcn.ds.bpermute", [source, word], I32)

    def syncscope(self, scope: str) -> Optional[str]:
        return _SYNCSCOPE[scope]

    def printf(self, ctx: Ctx, fmt: str, args: list[llir.Value]) -> None:
        raise TilecError("the AMD backend cannot compile `device_print` yet: printing from an AMD GPU needs "
                         "the host-call buffer of ROCm's device libraries, which tilec does not link; "
                         "run the kernel on numpy arrays (the interpreter) to print")

    def assert_fail(self, ctx: Ctx, message: str, file: str, line: int, function: str) -> None:
        """``s_trap``: the kernel stops and the launch reports an error (without the message)."""
        ctx.call("llvm.trap", [], llir.VoidType())
        ctx.b.unreachable()

    def kernel_attributes(self, num_warps: int) -> dict[str, str]:
        return kernel_attributes(num_warps, self.wave_size, self.waves_per_eu)
