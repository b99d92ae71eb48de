"""``tl.extra.cuda``'s helpers besides libdevice (Triton 3.6's
``triton.language.extra.cuda.utils``): the launch's warp and thread counts
as constexprs.  They run on every target; on the host interpreter the counts
are the launch's ``num_warps`` and warps of 32 threads."""
from __future__ import annotations

from tilec.language.core import builtin


@builtin
def num_warps():
    """The launch's ``num_warps`` (a constexpr int)."""


@builtin
def num_threads():
    """Threads of one program: the launch's ``num_warps`` times the target's
    warp size (a constexpr int; 128 for ``num_warps=4`` on NVIDIA)."""
