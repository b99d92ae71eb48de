"""Launching kernels: ``JITFunction`` (``tilec.jit``), argument classification,
the variant cache and the launchers (host interpreter today; GPUs next)."""
from .compiler import CompiledKernel, Options  # noqa: F401
from .grid import cdiv, next_power_of_2  # noqa: F401
from .jit import JITFunction, jit  # noqa: F401
