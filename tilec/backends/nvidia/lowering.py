"""How codegen's rules run on NVIDIA GPUs: ``NvidiaLowering``, the backend's
``TargetLowering``.

Thread and program ids are PTX special registers (``%tid.x``, ``%ctaid.y``,
``%nctaid.z``), read through ``llvm.nvvm.read.ptx.sreg.*``; the block barrier
is ``bar.sync 0``; lanes swap words with ``shfl.sync.bfly``; ``printf`` is
CUDA's ``vprintf`` (its arguments packed in a buffer) and a failed assertion
calls ``__assertfail``; ``tl.inline_asm_elementwise``'s text is PTX,
pasted inline; atomics are single ``atom`` instructions carrying their
ordering and scope (``atomics.py``); loads and stores with cache hints are
inline ``ld``/``st`` (``cache_hints.py``).  The kernel is a ``ptx_kernel`` with ``.maxntid``
(and ``.maxnreg`` when the launch asks for it).  Atomic scopes: ``gpu`` is
PTX's ``.gpu`` (LLVM's ``device`` syncscope, for the atomics left to LLVM),
``cta`` is ``.cta`` (``block``); ``sys`` is the whole system, which also
orders against the host and other GPUs, on every try of every spinning
program.

The math library is libdevice (``NvidiaMath``); the tensor-core,
asynchronous-copy, tensor-memory-accelerator and other special-register
rules come from ``mma.py``, ``async_copy.py``, ``tma.py`` and
``special_registers.py``.  The tensor maps the kernel's ``tma_copy``s read
are parameters after its own (``extra_parameters``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from llvmlite import ir as llir

from tilec import ir
from tilec.codegen_llvm import TargetLowering
from tilec.codegen_llvm.debug import GENERIC, string_constant
from tilec.codegen_llvm.kernel import I32, I64, Ctx
from tilec.codegen_llvm.maps import emit_inline_asm
from tilec.codegen_llvm.scalar_base import MathFn, MathLibrary, call
from tilec.codegen_llvm.scalar_math import MATH, library
from tilec.backends.nvidia import async_copy, atomics, cache_hints, mma, special_registers, tma
from tilec.backends.nvidia.libdevice import LIBDEVICE_PREFIX
from tilec.backends.nvidia.target import launch_bounds_attrs

SHARED_SPACE = 3  # NVPTX's address space of shared memory
TENSOR_MAP_ATTRIBUTES = 'byval([128 x i8]) align 64 "nvvm.grid_constant"'
_SYNCSCOPE = {"gpu": "device", "cta": "block", "sys": None}


def _exp2_ftz(ctx, x: llir.Value) -> llir.Value:
    return call(ctx, "llvm.nvvm.ex2.approx.ftz.f", [x])


class NvidiaMath(MathLibrary):
    """libdevice's ``__nv_sinf``/``__nv_sin``... (``libdevice.py`` links them
    in), and Triton's fast f32 ``rsqrt`` (``rsqrt.approx``), ``exp2``
    (``ex2.approx.ftz``) and ``/`` (``div.full.f32``: within 2 ulp over the
    whole range; ``tl.div_rn`` stays ``div.rn``); f32 ``exp`` stays
    ``ex2.approx`` of ``x * log2(e)``, subnormal results kept, as Triton's.

    ``ex2.approx.ftz`` returns 0 for results below 2^-126, where the
    subnormal-keeping ``ex2.approx`` costs three more instructions an
    element (a compare and two scalings around the hardware's ftz unit):
    attention's key loop spent a quarter of its time there (H100, 4096/128:
    320 -> 428 TFLOP/s).  Such results are subnormal in float32 and bfloat16
    (float16 rounds them to 0 anyway): only those two types see the flush.
    The generic formulas land on the hardware's fast paths: ``sqrt`` is the
    correctly rounded ``sqrt.rn``.  ``log`` and
    ``log2`` call libdevice, not ``lg2.approx``: its error is absolute
    (2^-22.6), so near ``x = 1`` the relative error of ``log2`` reaches
    several ulps (seen on the H100: 7 ulps at 1.125); libdevice keeps ``log``
    within an ulp.  NVPTX cannot select ``llvm.log2.f32`` (it aborts: no
    libcall)."""

    recipes = {ir.Rsqrt: MathFn(lambda ctx, x: call(ctx, "llvm.nvvm.rsqrt.approx.f", [x]), library("rsqrt")),
               ir.Exp2: MathFn(_exp2_ftz, MATH[ir.Exp2].f64),
               ir.Div: MathFn(lambda ctx, a, b: call(ctx, "llvm.nvvm.div.full", [a, b]),
                              lambda ctx, a, b: ctx.builder.fdiv(a, b))}

    def symbol(self, name: str, t: llir.Type) -> str:
        return LIBDEVICE_PREFIX + super().symbol(name, t)


@dataclass(frozen=True)
class NvidiaLowering(TargetLowering):
    """The NVIDIA backend's hooks (module docstring); ``maxnreg`` caps the
    registers of a thread (``Options.maxnreg``), None leaves it to ptxas."""

    maxnreg: Optional[int] = None

    name = "NVIDIA"
    rules = {**mma.RULES, **async_copy.RULES, **tma.RULES, **special_registers.RULES}
    math = NvidiaMath()
    calling_convention = "ptx_kernel"
    shared_address_space = SHARED_SPACE

    def thread_id(self, ctx: Ctx) -> llir.Value:
        return _special_register(ctx, "tid.x")

    def extra_parameters(self, fn) -> list[tuple[str, llir.Type, str]]:
        """A ``CUtensorMap`` a tensor map: 128 bytes by value, 64-byte aligned,
        read in place (``nvvm.grid_constant``: its address is the parameter's own)."""
        return [(m.parameter, GENERIC, TENSOR_MAP_ATTRIBUTES) for m in tma.tensor_maps(fn)]

    def program_id(self, ctx: Ctx, axis: int) -> llir.Value:
        return _special_register(ctx, "ctaid." + "xyz"[axis])

    def num_programs(self, ctx: Ctx, axis: int) -> llir.Value:
        return _special_register(ctx, "nctaid." + "xyz"[axis])

    def barrier(self, ctx: Ctx) -> None:
        ctx.call("llvm.nvvm.barrier.cta.sync.aligned.all", [I32(0)], llir.VoidType())

    def shuffle_xor(self, ctx: Ctx, word: llir.Value, lane_mask: int) -> llir.Value:
        return ctx.call("llvm.nvvm.shfl.sync.bfly.i32", [I32(-1), word, I32(lane_mask), I32(0x1F)], I32)

    def syncscope(self, scope: str) -> Optional[str]:
        return _SYNCSCOPE[scope]

    def load(self, ctx: Ctx, ptr: llir.Value, vtype: llir.Type, cache: str, eviction: str,
             volatile: bool) -> Optional[llir.Value]:
        return cache_hints.load(ctx, ptr, vtype, cache, eviction, volatile)

    def store(self, ctx: Ctx, ptr: llir.Value, value: llir.Value, cache: str, eviction: str) -> bool:
        return cache_hints.store(ctx, ptr, value, cache, eviction)

    def atomic_rmw(self, ctx: Ctx, name: str, ptr: llir.Value, value: llir.Value, sem: str,
                   scope: str) -> Optional[llir.Value]:
        return atomics.atomic_rmw(ctx, name, ptr, value, sem, scope)

    def atomic_cas(self, ctx: Ctx, ptr: llir.Value, cmp: llir.Value, val: llir.Value, sem: str,
                   scope: str) -> Optional[llir.Value]:
        return atomics.atomic_cas(ctx, ptr, cmp, val, sem, scope)

    def printf(self, ctx: Ctx, fmt: str, args: list[llir.Value]) -> None:
        """``vprintf(fmt, buffer)``, the arguments stored in a local struct."""
        b = ctx.b
        struct = llir.LiteralStructType([a.type for a in args])
        buf = b.alloca(struct)
        buf.type = GENERIC  # llvmlite types it with a typed pointer; LLVM 22 has opaque ones only
        for i, a in enumerate(args):
            b.store(a, b.gep(buf, [I32(0), I32(i)], inbounds=True, source_etype=struct))
        vprintf = ctx.declare("vprintf", I32, [GENERIC, GENERIC])
        b.call(vprintf, [string_constant(ctx, fmt), buf])

    def assert_fail(self, ctx: Ctx, message: str, file: str, line: int, function: str) -> None:
        fail = ctx.declare("__assertfail", llir.VoidType(), [GENERIC, GENERIC, I32, GENERIC, I64])
        texts = [string_constant(ctx, text) for text in (message, file, function)]
        ctx.b.call(fail, [texts[0], texts[1], I32(line), texts[2], I64(1)])

    def inline_asm(self, ctx: Ctx, asm: str, constraints: str, operands: list[llir.Value],
                   result: llir.Type, side_effects: bool) -> llir.Value:
        """The author's PTX, inline (LLVM's NVPTX backend pastes it into the kernel)."""
        return emit_inline_asm(ctx, asm, constraints, operands, result, side_effects)

    def kernel_attributes(self, num_warps: int) -> dict[str, str]:
        attrs = launch_bounds_attrs(num_warps)
        if self.maxnreg is not None:
            attrs["nvvm.maxnreg"] = str(self.maxnreg)
        return attrs


def _special_register(ctx: Ctx, name: str) -> llir.Value:
    """The PTX special register ``name`` (``tid.x``, ``ctaid.y``...)."""
    return ctx.call(f"llvm.nvvm.read.ptx.sreg.{name}", [], I32)
