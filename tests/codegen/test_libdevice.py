"""``link_libdevice``: libdevice linked only when called, reflect folded, only the
kernels left visible, O3 run on every module; the result compiles to PTX that
ptxas accepts."""
from __future__ import annotations

import re

import llvmlite.binding as llvm
import pytest

from tilec.backends.nvidia import libdevice
from tilec.backends.nvidia.libdevice import link_libdevice
from tilec.errors import TilecError
from tilec.backends.nvidia.target import emit_ptx, nvptx_target
from tilec.backends.nvidia.ptxas import assemble, find_libdevice, find_ptxas

SM80 = nvptx_target("sm_80")

# A kernel calling libdevice through a helper of ours (as the tile codegen
# might), with a quoted name, as llvmlite writes them.
SIN_KERNEL = """
declare float @__nv_sinf(float)

define float @helper(float %x) {
  %y = call float @__nv_sinf(float %x)
  ret float %y
}

define ptx_kernel void @"sin_kernel"(ptr addrspace(1) %p) {
  %x = load float, ptr addrspace(1) %p
  %y = call float @helper(float %x)
  store float %y, ptr addrspace(1) %p
  ret void
}
"""

# No libdevice call: O3 must still fold the helper and the redundant arithmetic.
PLAIN_KERNEL = """
define i32 @twice(i32 %x) {
  %a = add i32 %x, 0
  %b = mul i32 %a, 2
  ret i32 %b
}

define ptx_kernel void @k(ptr addrspace(1) %p) {
  %x = load i32, ptr addrspace(1) %p
  %y = call i32 @twice(i32 %x)
  store i32 %y, ptr addrspace(1) %p
  ret void
}
"""


def needs_libdevice():
    if find_libdevice() is None:
        pytest.skip("no libdevice.10.bc: `pip install 'tilec[cuda]'`")


def defined_functions(ir_text: str) -> dict[str, str]:
    """Name -> linkage ('' for external) of every function the module defines."""
    module = llvm.parse_assembly(ir_text)
    return {f.name: f.linkage.name for f in module.functions if not f.is_declaration}


def test_libdevice_is_linked_reflect_folded_and_the_rest_dropped():
    needs_libdevice()
    out = link_libdevice(SIN_KERNEL, SM80)
    assert "__nvvm_reflect" not in out
    assert not re.search(r"declare .*@__nv_", out), "a libdevice call was left unresolved"
    functions = defined_functions(out)
    assert functions["sin_kernel"] == "external"
    assert len(functions) < 10, f"unused libdevice functions survived: {sorted(functions)[:20]}"
    assert all(linkage == "internal" for name, linkage in functions.items() if name != "sin_kernel")
    assert '!"nvvm-reflect-ftz", i32 0' in out


def test_linking_twice_reuses_the_parsed_library():
    """``link_in`` destroys what it links: the cached library must survive the first link."""
    needs_libdevice()
    first, second = link_libdevice(SIN_KERNEL, SM80), link_libdevice(SIN_KERNEL, SM80)
    assert first == second and "call float @__nv_sinf" not in second


def test_a_module_without_libdevice_calls_is_still_optimized():
    out = link_libdevice(PLAIN_KERNEL, SM80)
    assert set(defined_functions(out)) == {"k"}, "the helper was neither inlined nor deleted"
    body = out[out.index("@k("):]
    assert "add i32" not in body and ("shl i32" in body or "mul i32" in body)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_linked_module_compiles_and_assembles(arch):
    needs_libdevice()
    ptx = emit_ptx(link_libdevice(SIN_KERNEL, nvptx_target(arch)), arch)
    assert ".entry" in ptx and ".extern" not in ptx
    if find_ptxas() is None:
        pytest.skip("no ptxas: `pip install 'tilec[cuda]'`")
    assemble(ptx, arch)


def test_missing_libdevice_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(libdevice, "find_libdevice", lambda: None)
    libdevice._libdevice.cache_clear()
    try:
        with pytest.raises(TilecError, match=r"pip install 'tilec\[cuda\]'.*TILEC_LIBDEVICE"):
            link_libdevice(SIN_KERNEL, SM80)
        link_libdevice(PLAIN_KERNEL, SM80)  # no libdevice call: no libdevice needed
    finally:
        libdevice._libdevice.cache_clear()


def test_bad_ir_is_a_runtime_error_not_a_crash():
    with pytest.raises(RuntimeError):
        link_libdevice("define ptx_kernel void @k() { ret i32 0 }", SM80)
