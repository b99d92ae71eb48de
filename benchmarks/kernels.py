"""The kernels the GPU benchmarks time, each written once, and how they are launched.

The kernels are tilec's tutorial kernels (``tests/kernels/``, which CI checks
against numpy on the host) plus an empty kernel for launch overhead.  Triton
runs the very same Python functions: ``for_language(kernel, "triton")``
re-binds the function's global ``tl`` to ``triton.language`` and hands it to
``triton.jit``, which, like tilec, reads the source with ``inspect`` and
resolves names through ``fn.__globals__``.  No kernel is written twice.

The launch helpers take the compiled kernel of either language and arrays of
any library (numpy on the host, torch on a GPU): they only read ``.shape``, so
the configuration the benchmarks time is the one the host tests check.
"""
from __future__ import annotations

import functools
import importlib.util
import math
import sys
import types
from pathlib import Path

import tilec
import tilec.language as tl

TUTORIALS = Path(__file__).resolve().parent.parent / "tests" / "kernels"
LANGUAGES = ("tilec", "triton")

VECTOR_ADD_BLOCK = 1024
VECTOR_ADD_WARPS = 4


@tilec.jit
def empty_kernel(x_ptr, y_ptr, n, m):
    """Does nothing: its launch cost is all there is to time."""
    pass


def load_tutorial(name: str) -> types.ModuleType:
    """``tests/kernels/<name>.py`` by file path: no ``tests`` package to find on
    ``sys.path`` (an installed package of that name would shadow it)."""
    module_name = f"tilec_tutorial_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, TUTORIALS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # before exec: inspect.getsource looks modules up by name
        spec.loader.exec_module(module)
    return sys.modules[module_name]


def tilec_kernel(name: str) -> tilec.JITFunction:
    """The tilec kernel a benchmark times, by benchmark name."""
    if name == "empty":
        return empty_kernel
    tutorial, attr = {"vector_add": ("vector_add", "add_kernel"),
                      "softmax": ("softmax", "softmax_kernel"),
                      "layer_norm": ("layer_norm", "_layer_norm_fwd_fused"),
                      "matmul": ("matmul", "matmul_kernel"),
                      "matmul_descriptors": ("matmul", "matmul_descriptor_kernel")}[name]
    return getattr(load_tutorial(tutorial), attr)


@functools.lru_cache(maxsize=None)
def kernel_for(name: str, language: str):
    """Benchmark ``name``'s kernel, compiled by ``language`` (one object per pair,
    so each compiler's cache of variants lives as long as the process)."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    kernel = tilec_kernel(name)
    return kernel if language == "tilec" else for_triton(kernel)


@functools.lru_cache(maxsize=None)
def for_triton(kernel: tilec.JITFunction):
    """The Python function behind tilec ``kernel``, jitted by Triton instead.

    A copy of the function gets a copy of its globals in which ``tl`` is
    ``triton.language`` and every tilec function it calls (the matmul
    tutorial's ``leaky_relu``) is that function's Triton twin, and Triton's
    ``constexpr`` in its annotations.  The code object is shared, so Triton
    reads the same source lines (it drops the ``@tilec.jit`` decorator as it
    drops its own).  Twins are cached, so a helper is jitted once.
    """
    import triton
    import triton.language as ttl

    fn = kernel.fn
    if fn.__globals__.get("tl") is not tl:
        raise ValueError(f"kernel `{fn.__name__}` must name tilec's language `tl` to be retargeted")
    helpers = {name: for_triton(value) for name in fn.__code__.co_names
               if isinstance(value := fn.__globals__.get(name), tilec.JITFunction) and value is not kernel}
    scope = dict(fn.__globals__, tl=ttl, **helpers)
    clone = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__qualname__, clone.__doc__ = fn.__qualname__, fn.__doc__
    clone.__annotations__ = {name: ttl.constexpr if ann is tl.constexpr else ann
                             for name, ann in fn.__annotations__.items()}
    return triton.jit(clone)


def tensor_descriptor_class(language: str) -> type:
    """``language``'s host ``TensorDescriptor`` (a kernel takes its own compiler's)."""
    if language == "triton":
        from triton.tools.tensor_descriptor import TensorDescriptor
        return TensorDescriptor
    from tilec.tools.tensor_descriptor import TensorDescriptor
    return TensorDescriptor


def launch_vector_add(kernel, x, y, out) -> None:
    """``out = x + y`` over flat arrays, 1024 elements (4 warps) a program, as Triton's tutorial."""
    n = math.prod(x.shape)
    grid = (tilec.cdiv(n, VECTOR_ADD_BLOCK),)
    kernel[grid](x, y, out, n, BLOCK_SIZE=VECTOR_ADD_BLOCK, num_warps=VECTOR_ADD_WARPS)


def softmax_config(n_cols: int) -> tuple[int, int]:
    """(BLOCK_SIZE, num_warps) for one row a program: the whole row in one
    block, and Triton's tutorial heuristic for warps (more warps for longer
    rows, so each thread keeps at most 32 fp32 values in registers at 16384)."""
    block = tilec.next_power_of_2(n_cols)
    num_warps = 16 if block >= 4096 else 8 if block >= 2048 else 4
    return block, num_warps


def launch_softmax(kernel, x, out) -> None:
    """Row-wise softmax of a contiguous (M, N) array, one row a program."""
    n_rows, n_cols = x.shape
    block, num_warps = softmax_config(n_cols)
    kernel[(n_rows,)](out, x, n_cols, n_cols, n_cols, BLOCK_SIZE=block, num_warps=num_warps)


def layer_norm_config(n_cols: int, elem_size: int) -> tuple[int, int]:
    """(BLOCK_SIZE, num_warps) of Triton's layer-norm tutorial: a block of at
    most 64 KB, the whole row when it fits; one warp per 256 elements, 1 to 8."""
    block = min(65536 // elem_size, tilec.next_power_of_2(n_cols))
    return block, min(max(block // 256, 1), 8)


def launch_layer_norm(kernel, x, weight, bias, y, mean, rstd, eps: float, elem_size: int) -> None:
    """Fused layer-norm forward of a contiguous (M, N) array, one row a program."""
    n_rows, n_cols = x.shape
    block, num_warps = layer_norm_config(n_cols, elem_size)
    kernel[(n_rows,)](x, y, weight, bias, mean, rstd, n_cols, n_cols, eps,
                      BLOCK_SIZE=block, num_warps=num_warps)


def launch_empty(kernel, x, y) -> None:
    """One program of the empty kernel; the ints are neither 1 nor multiples
    of 16, so neither compiler specializes them away."""
    kernel[(1,)](x, y, 1003, 7)
