"""The module optimizer of every NVIDIA kernel: link libdevice when the module
calls it, keep only the kernels visible, run LLVM's O3 pipeline.

libdevice (``libdevice.10.bc``) is NVIDIA's bitcode math library: the
``__nv_sinf`` ... that codegen's ``scalar_math`` calls (``lowering.NvidiaMath``).  Its functions branch on
``__nvvm_reflect("__CUDA_FTZ")`` and ``("__CUDA_ARCH")``; LLVM 22's
NVVMReflect pass folds those (the arch from the target machine, FTZ from the
module flag ``nvvm-reflect-ftz``, which we set to 0: subnormals are kept, as
in the interpreter).  The NVPTX target machine adds NVVMReflect at the start
of the pipeline the pass builder makes, so O3 sees the folded branches.
Internalizing every function but the kernels lets O3 inline what is used and
delete the rest of the library (hundreds of functions).

Checked with llvmlite 0.50 (LLVM 22.1): ``ModuleRef.link_in`` destroys the
module linked in, so the parsed library is kept and a clone is linked.

O3 runs with LLVM's ``-keep-loops=true`` (``_keep_loops_canonical``): the
SimplifyCFG that O3 runs after its loop passes otherwise threads a branch
whose condition a predecessor already decided straight into a loop's body.
Our kernels branch many times on one condition (the thread that owns a
replicated value stores it and does its atomics), so a loop whose header
branches on it gets a second entry: irreducible control flow, where ptxas
does not reconverge the warp before the loop's barriers (the layer-norm
backward at N = 1 hung the H100).  ``ptx_cfg`` checks every kernel's PTX.
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm

from tilec.errors import TilecError
from tilec.targets.base import Target, optimize
from tilec.backends.nvidia.ptxas import INSTALL_CUDA_TOOLS, find_libdevice

LIBDEVICE_PREFIX = "__nv_"  # of every libdevice function's name

# Override (4): our setting wins over any the module carries.
_REFLECT_FLAGS = """
!llvm.module.flags = !{!0}
!0 = !{i32 4, !"nvvm-reflect-ftz", i32 0}
"""


def link_libdevice(llvm_ir: str, target: Target) -> str:
    """``llvm_ir`` with libdevice linked in (when it calls ``__nv_*``), every
    non-kernel function internal, optimized at O3 for ``target``; as text.

    Raises TilecError when a ``__nv_*`` call needs libdevice and none is found.
    """
    module = _parse_for(llvm_ir, target)
    kernels = _kernel_names(module)
    module.link_in(_parse_for(_REFLECT_FLAGS, target))
    if _calls_libdevice(module):
        module.link_in(_libdevice(target.triple, target.data_layout), preserve=True)
    _internalize_all_but(module, kernels)
    _optimize(module, target)
    module.verify()
    return str(module)


def _parse_for(text: str, target: Target):
    """``text`` parsed and verified, with ``target``'s triple and data layout."""
    module = llvm.parse_assembly(text)
    module.triple, module.data_layout = target.triple, target.data_layout
    module.verify()
    return module


def _calls_libdevice(module) -> bool:
    return any(fn.is_declaration and fn.name.startswith(LIBDEVICE_PREFIX) for fn in module.functions)


def _kernel_names(module) -> set[str]:
    """Names of the module's kernels: definitions with the ``ptx_kernel``
    calling convention (llvmlite has no accessor for it; the ``define`` line says it)."""
    names = set()
    for fn in module.functions:
        if not fn.is_declaration and "ptx_kernel" in str(fn).split("{", 1)[0]:
            names.add(fn.name)
    return names


def _internalize_all_but(module, keep: set[str]) -> None:
    for fn in module.functions:
        if not fn.is_declaration and fn.name not in keep:
            fn.linkage = "internal"


def _optimize(module, target: Target) -> None:
    _keep_loops_canonical()
    optimize(module, target)


@functools.cache
def _keep_loops_canonical() -> None:
    """Every SimplifyCFG keeps loops single-entry (LLVM's ``-keep-loops``, an
    option of the whole process; the early SimplifyCFGs already do)."""
    llvm.set_option("", "-keep-loops=true")


@functools.cache
def _libdevice(triple: str, data_layout: str):
    """libdevice parsed once per process, retargeted so linking does not warn."""
    path = find_libdevice()
    if path is None:
        raise TilecError(
            "this kernel calls libdevice math functions (__nv_*) but libdevice.10.bc was not found: "
            f"{INSTALL_CUDA_TOOLS}, or set TILEC_LIBDEVICE to the file"
        )
    module = llvm.parse_bitcode(path.read_bytes())
    module.triple, module.data_layout = triple, data_layout
    return module
