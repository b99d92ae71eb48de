"""Launching kernels: ``JITFunction`` (``tilec.jit``), argument classification,
the variant cache, the NVIDIA compile pipeline and the launchers (the host
interpreter, NVIDIA GPUs through cuda-python)."""
from tilec.launch.compiler import CompiledKernel, KernelMetadata, Options  # noqa: F401
from tilec.launch.grid import cdiv, next_power_of_2  # noqa: F401
from tilec.launch.jit import JITFunction, KernelInterface, jit  # noqa: F401
