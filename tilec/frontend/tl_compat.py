"""``tl.*`` functions kept for Triton compatibility: ``assume``, a hint tilec
checks and does not use yet, and ``dot_scaled``, refused with a clear error
until the tensor-core work of the Hopper/Blackwell issues gives it a meaning.
Registered on the stubs of ``tilec.language`` with ``tl_ops.implements``.
"""
from __future__ import annotations

from tilec import ir
from tilec import language as tl
from tilec.frontend.semantic import Tensor, TypingError, describe
from tilec.frontend.tl_ops import implements


@implements(tl.assume)
def _assume(ctx, cond):
    """Check that ``cond`` is a boolean or integer value; build nothing (dropping
    a promise is always correct; no tilec pass reads one yet)."""
    if not (ir.is_int(cond.type) if isinstance(cond, Tensor) else isinstance(cond, int)):
        raise TypingError(f"`tl.assume` needs a boolean condition, got {describe(cond)}")


@implements(tl.dot_scaled)
def _dot_scaled(ctx, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc, fast_math, lhs_k_pack,
                rhs_k_pack, out_dtype):
    raise TypingError("`tl.dot_scaled` (microscaled fp4/fp8 matmul) needs Hopper/Blackwell tensor-core support, "
                      "which tilec does not have yet; scale the operands up to tl.bfloat16 or tl.float16 and use "
                      "tl.dot")
