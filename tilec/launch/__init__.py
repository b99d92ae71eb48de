"""Launching kernels: ``JITFunction`` (``tilec.jit``), argument classification,
the variant cache, the disk cache, dumps and autotuning.  Compiling past the
optimized IR and running on a device are the backends' (``tilec/backends/``),
reached only through ``tilec.targets.registry``."""
from tilec.launch.compiler import CompiledKernel, KernelMetadata, Options  # noqa: F401
from tilec.launch.grid import cdiv, next_power_of_2  # noqa: F401
from tilec.launch.jit import JITFunction, KernelInterface, jit  # noqa: F401
