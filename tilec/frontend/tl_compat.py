"""``tl.*`` functions kept for Triton compatibility: ``assume``, a hint tilec
checks and does not use yet.  Registered on the stubs of ``tilec.language``
with ``tl_ops.implements``.
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

