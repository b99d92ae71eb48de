"""Tile IR with layouts -> llvmlite modules (``kernel.lower``), one file per op family.

``lower(fn, target, num_warps)`` gives an ``LLVMKernel`` (the module's text
and the shared memory it needs); ``libdevice.link_libdevice`` links the math
library and optimizes; the target turns the result into PTX.
"""
from tilec.codegen_llvm.kernel import LLVMKernel, lower  # noqa: F401

__all__ = ["LLVMKernel", "lower"]
