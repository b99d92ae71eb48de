"""NVIDIA's rules for the ops that read a special register besides the
thread and program ids (those are ``NvidiaLowering`` hooks):
``processor_id`` is ``%smid``, ``global_timer`` ``%globaltimer`` (the
nanosecond clock), as Triton's ``tl.extra.cuda.smid``/``globaltimer`` read
them.  ``RULES`` holds them for ``NvidiaLowering.rules``."""
from __future__ import annotations

from tilec import ir
from tilec.rules import registry
from tilec.codegen_llvm.kernel import I32, I64, Ctx

RULES, lowers = registry("Register the decorated ``rule(ctx, op)`` as the NVIDIA backend's for the given op classes.")


@lowers(ir.ProcessorId)
def _processor_id(ctx: Ctx, op: ir.ProcessorId) -> None:
    ctx.bind(op.results, [[ctx.call("llvm.nvvm.read.ptx.sreg.smid", [], I32)]])


@lowers(ir.GlobalTimer)
def _global_timer(ctx: Ctx, op: ir.GlobalTimer) -> None:
    ctx.bind(op.results, [[ctx.call("llvm.nvvm.read.ptx.sreg.globaltimer", [], I64)]])
