"""One object per target: triple, data layout, warp size, shared-memory limits,
and how to turn LLVM IR into the binary text. Importing this package does not
load llvmlite; emitting does."""
from tilec.targets.base import Target
from tilec.targets.nvptx import emit_ptx, launch_bounds_attrs, nvptx_target

__all__ = ["Target", "emit_ptx", "launch_bounds_attrs", "nvptx_target"]
