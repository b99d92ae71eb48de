"""What the AMD backend's tests share: compile a kernel for an arch and read its code object."""
from __future__ import annotations

import pytest

from tilec.backends.amd import lld
from tilec.backends.amd.elf import read_code_object

ARCHS_CHECKED = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201")  # CDNA2-4 (64-lane waves), RDNA3-4 (32)
needs_lld = pytest.mark.skipif(lld.find_lld() is None, reason="no ld.lld (pip install ziglang, or set TILEC_LLD)")


def compile_amd(kernel, *args, target, **options):
    """``kernel.compile`` for AMD arch ``target``, with its code object read: (compiled, code object, kernel metadata)."""
    compiled = kernel.compile(*args, target=target, **options)
    code = read_code_object(compiled.asm["hsaco"])
    return compiled, code, code.kernel(compiled.metadata.name)


def scratch_instructions(asm: str) -> list[str]:
    """The instructions of ``asm`` that touch scratch (private) memory: spills
    (``scratch_*`` on gfx942 and RDNA, ``buffer_*`` through the private
    segment descriptor on gfx90a)."""
    import re

    return re.findall(r"^\s+((?:scratch|buffer)_(?:load|store)\w*)", asm, re.M)


def compile_tile_ir(text: str, arch: str, num_warps: int = 4):
    """The AMD stages run on tile IR ``text`` (one function) for ``arch``:
    (compiled, kernel metadata of its code object)."""
    from tilec.backends.amd.stages import compile_for_amd
    from tilec.ir.parser import parse_function
    from tilec.launch.compiler import CompiledKernel, KernelMetadata, Options

    fn = parse_function(text)
    options = Options(num_warps=num_warps)
    compiled = CompiledKernel(fn.name, fn, (), options, arch, {},
                              KernelMetadata(fn.name, arch, num_warps, options.num_stages))
    compile_for_amd(compiled)
    return compiled, read_code_object(compiled.asm["hsaco"]).kernel(fn.name)
