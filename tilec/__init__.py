"""tilec: a pure-Python compiler for GPU tile kernels written in Triton's language.

    import tilec
    import tilec.language as tl

    @tilec.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n), mask=offs < n)

    add[(tilec.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)   # numpy arrays: the host; torch CUDA tensors: the GPU
    add.compile(x, y, out, n, BLOCK=1024, target=arch).asm   # ahead of time, no GPU needed: every stage's text

Importing tilec is cheap: the front end, the interpreter and LLVM load on first use.
"""
from tilec import language  # noqa: F401
from tilec.errors import CompilationError, InterpreterError, OutOfResources, TilecError  # noqa: F401
from tilec.launch import CompiledKernel, JITFunction, KernelInterface, cdiv, jit, next_power_of_2  # noqa: F401
from tilec.launch.reinterpret import TensorWrapper, reinterpret  # noqa: F401
from tilec.autotune import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: F401 (the module first: see its doc)

__version__ = "0.1.0"

__all__ = [
    "jit", "JITFunction", "KernelInterface", "CompiledKernel", "cdiv", "next_power_of_2", "autotune", "Config",
    "heuristics", "Autotuner", "Heuristics", "reinterpret", "TensorWrapper",
    "CompilationError", "InterpreterError", "OutOfResources", "TilecError", "language", "__version__",
]
