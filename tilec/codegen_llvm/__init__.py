"""Tile IR with layouts -> llvmlite modules (``kernel.lower``), one file per op family.

``lower(fn, target, lowering, analyses, num_warps)`` gives an ``LLVMKernel``
(the module's text and the shared memory it needs).  The rules here are
every backend's; ``lowering`` is the backend's ``TargetLowering``: its
hooks (thread ids, barriers, shuffles, math library, printing) and its own
rules, and ``analyses`` what the passes found (``Analyses``).  The backend
then links, optimizes and emits the module.
"""
from tilec.codegen_llvm.kernel import Analyses, LLVMKernel, lower  # noqa: F401
from tilec.codegen_llvm.target_lowering import TargetLowering  # noqa: F401

__all__ = ["Analyses", "LLVMKernel", "TargetLowering", "lower"]
