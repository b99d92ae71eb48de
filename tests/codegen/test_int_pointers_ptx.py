"""Golden facts about the LLVM IR and PTX of pointers made from integers and
integers made from pointers: an ``inttoptr`` into the global space (1), the
table's address loaded whole, and no vector access across lanes whose
pointers came from integers or from pointers to another element size
(their lanes are bytes, or whole elements, apart: only the axis analysis of
a cast decides, so these are checked on the emitted code).  Compiled ahead
of time: no GPU needed; ``tests/gpu/test_int_pointers_gpu.py`` runs them."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tilec
import tilec.language as tl

ARCHS = ("sm_80", "sm_90")
BLOCK = 1024  # 8 elements a thread over 4 warps: room for vectors


@tilec.jit
def table_gather_kernel(table, out_ptr, BLOCK: tl.constexpr):
    """Program ``g`` copies ``BLOCK`` floats from the address ``table[g]``."""
    g = tl.program_id(0)
    src = tl.load(table + g).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + g * BLOCK + offs, tl.load(src + offs))


@tilec.jit
def every_fourth_byte_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """``out[i]`` = the first byte of the int32 ``x[i]``: pointers to int32 as int64s, as byte pointers."""
    offs = tl.arange(0, BLOCK)
    bytes_ = (x_ptr + offs).to(tl.int64).to(tl.pointer_type(tl.int8))
    tl.store(out_ptr + offs, tl.load(bytes_))


@tilec.jit
def reinterpret_pointer_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """The same, through a pointer-to-pointer cast."""
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load((x_ptr + offs).to(tl.pointer_type(tl.int8))))


def count(text: str, pattern: str) -> int:
    return len(re.findall(pattern, text))


@pytest.mark.parametrize("arch", ARCHS)
def test_a_pointer_from_a_table_is_a_global_inttoptr_of_the_loaded_address(arch):
    table, out = np.zeros(4, np.int64), np.zeros(4 * BLOCK, np.float32)
    asm = table_gather_kernel.compile(table, out, BLOCK=BLOCK, target=arch).asm
    assert count(asm["llir"], r"load i64, ptr addrspace\(1\)") >= 1
    assert count(asm["llir"], r"inttoptr i64 %[\w.]+ to ptr addrspace\(1\)") >= 1
    # unknown alignment: the loads from the table's pointer are single floats; the stores stay vectors
    assert count(asm["ptx"], r"ld\.global(\.\w+)*\.v\d") == 0
    assert count(asm["ptx"], r"st\.global(\.\w+)*\.v4\.b32") == 2


@pytest.mark.parametrize("kernel", [every_fourth_byte_kernel, reinterpret_pointer_kernel])
@pytest.mark.parametrize("arch", ARCHS)
def test_no_vector_access_across_pointers_cast_from_another_element_size(kernel, arch):
    x, out = np.zeros(BLOCK, np.int32), np.zeros(BLOCK, np.int8)
    ptx = kernel.compile(x, out, BLOCK=BLOCK, target=arch).asm["ptx"]
    assert count(ptx, r"ld\.global(\.\w+)*\.v\d") == 0
    assert count(ptx, r"ld\.global(\.\w+)*\.b8\s") == 8  # one byte at a time, 8 per thread
