"""What a kernel may ask about where it runs: ``tl.target_info`` and
``tl.extra.cuda.num_warps``/``num_threads`` answer at compile time from
``ctx.target`` (``ast_parse.CompileTarget``: the variant's target and
``num_warps``), so ``if tl.target_info.is_cuda():`` keeps one branch;
``tl.extra.cuda.smid``/``globaltimer`` read the processor's id and the
clock when the kernel runs (``ir.ProcessorId``, ``ir.GlobalTimer``)."""
from __future__ import annotations

from collections import namedtuple

from tilec import ir
from tilec.frontend.semantic import emit
from tilec.frontend.tl_ops import const_int, implements
from tilec.language import target_info
# Not ``tl.extra.cuda``: a drop-in alias of Triton may have put its own module at ``tl.extra``.
from tilec.language.extra.cuda import utils as cuda

#: ``tl.target_info.current_target()``: Triton's ``GPUTarget`` fields.
GPUTarget = namedtuple("GPUTarget", "backend arch warp_size")


@implements(target_info.current_target)
def _current_target(ctx):
    return GPUTarget(ctx.target.backend, ctx.target.arch, ctx.target.warp_size)


@implements(target_info.is_cuda)
def _is_cuda(ctx):
    return ctx.target.backend == "cuda"


@implements(target_info.cuda_capability_geq)
def _cuda_capability_geq(ctx, major, minor):
    wanted = 10 * const_int(major, "the major of `tl.target_info.cuda_capability_geq`") + const_int(
        minor, "the minor of `tl.target_info.cuda_capability_geq`")
    return ctx.target.backend == "cuda" and ctx.target.arch >= wanted


@implements(target_info.is_hip)
def _is_hip(ctx):
    return ctx.target.backend == "hip"


@implements(target_info.is_hip_cdna3)
def _is_hip_cdna3(ctx):
    return ctx.target.backend == "hip" and ctx.target.arch == "gfx942"


@implements(target_info.is_hip_cdna4)
def _is_hip_cdna4(ctx):
    return ctx.target.backend == "hip" and ctx.target.arch == "gfx950"


@implements(cuda.num_warps)
def _num_warps(ctx):
    return ctx.target.num_warps


@implements(cuda.num_threads)
def _num_threads(ctx):
    return ctx.target.num_warps * ctx.target.warp_size


@implements(cuda.smid)
def _smid(ctx):
    return emit(ctx, ir.ProcessorId)


@implements(cuda.globaltimer)
def _globaltimer(ctx):
    return emit(ctx, ir.GlobalTimer)
