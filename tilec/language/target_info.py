"""``tl.target_info``: what the kernel is compiled for, as compile-time values
(Triton 3.6's ``triton.language.target_info``), to pick code per target:
``if tl.target_info.cuda_capability_geq(9, 0): ...`` keeps one branch.

Inside a kernel each answers for the target of the variant being compiled,
the launch's or ``kernel.compile(..., target=...)``'s (Triton's asks its
active driver, which is the same thing for a launch).  The host interpreter
is no GPU backend: every test is False there.  They are builtins: calling
one outside a kernel raises (tilec's host code asks
``tilec.runtime.driver.active.get_current_target()``).
"""
from __future__ import annotations

from tilec.language.core import builtin


@builtin
def current_target():
    """The target compiled for, as Triton's ``GPUTarget``: ``.backend``
    (``"cuda"``, ``"hip"`` for AMD GPUs, ``"host"`` for the interpreter,
    ``"cpu"``), ``.arch`` (the compute capability as an int on CUDA: 90 for
    capability 9.0; the ``gfx`` name on AMD) and ``.warp_size`` (64 on CDNA,
    32 on RDNA)."""


@builtin
def is_cuda():
    """True when compiling for an NVIDIA GPU."""


@builtin
def cuda_capability_geq(major, minor=0):
    """True when compiling for an NVIDIA GPU of compute capability at least
    ``major.minor`` (``cuda_capability_geq(8, 0)``: Ampere and later)."""


@builtin
def is_hip():
    """True when compiling for an AMD GPU (``gfx90a`` ... ``gfx1201``)."""


@builtin
def is_hip_cdna3():
    """True when compiling for AMD's CDNA3, gfx942 (MI300)."""


@builtin
def is_hip_cdna4():
    """True when compiling for AMD's CDNA4, gfx950 (MI350)."""
