"""``tl.extra.cuda``'s helpers besides libdevice (Triton 3.6's
``triton.language.extra.cuda.utils``): the launch's warp and thread counts
as constexprs, the processor's id and the device's nanosecond clock.  The
counts run on every target (on the host interpreter: the launch's
``num_warps`` and warps of 32 threads); ``smid`` and ``globaltimer`` on
NVIDIA GPUs and the host interpreter."""
from __future__ import annotations

from tilec.language.core import builtin


@builtin
def num_warps():
    """The launch's ``num_warps`` (a constexpr int)."""


@builtin
def num_threads():
    """Threads of one program: the launch's ``num_warps`` times the target's
    warp size (a constexpr int; 128 for ``num_warps=4`` on NVIDIA)."""


@builtin
def smid():
    """The index of the streaming multiprocessor running this program
    (``int32``; 0 on the host interpreter, which has one)."""


@builtin
def globaltimer():
    """The GPU's global nanosecond clock (``int64``); every call is a read of
    its own, where it stands.  On the host interpreter: nanoseconds since the
    epoch."""
