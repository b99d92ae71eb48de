"""The runtime surface under tilec's own names, shaped like Triton's ``triton.runtime``.

``tilec.runtime.driver.active`` answers questions about the device kernels run
on (see ``driver.py``); existing Triton code reaches it as
``triton.runtime.driver.active`` under ``tilec.triton_compat``.
"""
from tilec.runtime import driver  # noqa: F401
from tilec.launch import KernelInterface  # noqa: F401 (Triton's triton.runtime.KernelInterface)
