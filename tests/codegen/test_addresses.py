"""Addresses of pointer tiles (codegen_llvm/addresses.py): one per-thread base
pointer plus a constant byte offset per register, so LLVM's NVPTX backend
does not spend time quadratic in the registers on them; and the same
addresses as ``ptr + offset`` wherever the offset's arithmetic does not wrap."""
from __future__ import annotations

import ctypes
import itertools
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from llvmlite import ir as llir

import tilec
import tilec.language as tl
from tilec.codegen_llvm.addresses import addresses
from tilec.codegen_llvm.scalar_base import ScalarContext, memory_type, resize_int
from tilec.ir.types import SCALAR_TYPES

from codegen.host_jit import native_function

GEP = re.compile(r"getelementptr (?:inbounds )?(\S+), ptr addrspace\(1\) %[\w.]+, i64 (%[\w.]+|-?\d+)")


def address_geps(llir_text: str) -> tuple[list[str], list[str]]:
    """The global-memory ``getelementptr``s: the element types of those with a
    variable index, and of those with a constant one."""
    geps = GEP.findall(llir_text)
    return [t for t, i in geps if i.startswith("%")], [t for t, i in geps if not i.startswith("%")]


@tilec.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tilec.jit
def copy_rows(x_ptr, y_ptr, n, STRIDE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    offs = rows[:, None] * STRIDE + tl.arange(0, BN)[None, :] - 5
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@tilec.jit
def shifted_pointers(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """Pointer tiles moved again by constants: their bytes add up on one base."""
    offs = tl.arange(0, BLOCK) + 3
    p = x_ptr + offs
    q = y_ptr + (offs - 3)
    tl.store(q + 1, tl.load(p - 2, mask=offs < n), mask=offs < n)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.float64])
def test_a_ragged_vector_add_addresses_one_base_per_pointer_and_constants(dtype):
    x = np.zeros(16, dtype)
    llvm = add_kernel.compile(x, x, x, 4093, BLOCK=4096, num_warps=4, target="sm_90").asm["llir"]
    variable, constant = address_geps(llvm)
    assert len(variable) == 3, llvm  # x, y and z: one base each, whatever the 32 registers a thread holds
    assert len(constant) == 3 * 31 and set(constant) == {"i8"}, llvm


def test_a_2d_tile_with_a_constant_stride_addresses_one_base_per_pointer():
    x = np.zeros(16, np.float32)
    llvm = copy_rows.compile(x, x, 100, STRIDE=96, BM=32, BN=64, num_warps=4, target="sm_90").asm["llir"]
    variable, constant = address_geps(llvm)
    assert len(variable) == 2, llvm
    assert len(constant) >= 2 * 15 and set(constant) == {"i8"}, llvm


def test_pointer_tiles_moved_by_constants_share_their_base():
    x = np.zeros(16, np.float32)
    llvm = shifted_pointers.compile(x, x, 100, BLOCK=1024, num_warps=4, target="sm_90").asm["llir"]
    variable, constant = address_geps(llvm)
    assert len(variable) == 2, llvm
    assert set(constant) == {"i8"}, llvm
    # p - 2 and q + 1 are x + arange + 1 and y + arange + 1: 8 registers a
    # thread, 4 bytes past its base, then every 128 elements
    offsets = [int(i) for _, i in GEP.findall(llvm) if not i.startswith("%")]
    assert sorted(offsets) == sorted(2 * [4 + 512 * j for j in range(8)]), llvm


@tilec.jit
def long_offset_chain(x_ptr, n, DEPTH: tl.constexpr):
    offs = tl.arange(0, 128)
    for _ in tl.static_range(DEPTH):
        offs = offs + 1
    tl.store(x_ptr + offs - DEPTH, 1.0, mask=offs - DEPTH < n)


def test_a_long_chain_of_offset_arithmetic_compiles():
    """Reading an offset's arithmetic back stops at a depth (``MAX_SPLIT_DEPTH``), not at Python's recursion limit."""
    x = np.zeros(128, np.float32)
    llvm = long_offset_chain.compile(x, 100, DEPTH=1500, num_warps=4, target="sm_90").asm["llir"]
    assert len(address_geps(llvm)[0]) == 1, llvm


# --------------------------------------------------------------------------- #
# The addresses on the host: the same as ``ptr + ext(offset)`` unless it wraps
# --------------------------------------------------------------------------- #

OFFSET_TYPES = ["i8", "i16", "i32", "i64", "u16", "u32"]
POINTEES = ["i8", "f16", "f32", "f64"]
STEPS = ["add", "sub", "rsub", "mul", "rmul"]
_names = itertools.count()


def wrap(value: int, t) -> int:
    """``value`` as a value of integer type ``t`` (two's complement)."""
    value %= 1 << t.bits
    return value - (1 << t.bits) if t.kind == "int" and value >> (t.bits - 1) else value


def apply(step: str, v, c, emit):
    """``v <step> c`` with ``emit(name, a, b)`` doing the arithmetic."""
    if step.startswith("r"):
        return emit(step[1:], c, v)
    return emit(step, v, c)


def host_addresses(t, source, pointee, register_offsets: list[int], steps: list):
    """A host function ``f(p, x, out)``: per register ``v = ext(x + offset) <steps>``
    (``x + offset`` in signed ``source``, sign-extended to ``t`` where narrower),
    its address by ``addresses`` and ``ptr + ext(v)``, both stored to ``out``."""
    module, name = llir.Module(), f"addresses{next(_names)}"
    i64, it, source_t = llir.IntType(64), llir.IntType(t.bits), llir.IntType(source.bits)
    fn = llir.Function(module, llir.FunctionType(llir.VoidType(), [i64, i64, llir.PointerType()]), name)
    b = llir.IRBuilder(fn.append_basic_block())
    sc = ScalarContext(b, module)
    p, x, out = b.inttoptr(fn.args[0], llir.PointerType()), b.trunc(fn.args[1], source_t), fn.args[2]
    regs = []
    for k in register_offsets:
        v = b.add(x, source_t(wrap(k, source)))
        v = b.sext(v, it) if source.bits < t.bits else v
        for step, c in steps:
            v = apply(step, v, it(wrap(c, t)), lambda op, a, c: getattr(b, op)(a, c))
        regs.append(v)
    old = [b.gep(p, [resize_int(sc, v, t, 64)], source_etype=memory_type(pointee)) for v in regs]
    for i, a in enumerate(addresses(sc, [p] * len(regs), regs, t, pointee) + old):
        b.store(b.ptrtoint(a, i64), b.gep(out, [i64(i)], source_etype=i64))
    b.ret_void()
    return native_function(module, name, ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_int64, ctypes.c_void_p))


def fits(v: int, t) -> bool:
    return wrap(v, t) == v


def exact(t, source, x: int, k: int, steps: list) -> tuple[int, bool]:
    """Register ``ext(x + k) <steps>`` without wrapping, and whether every step stayed in its type's range."""
    v = wrap(x, source) + wrap(k, source)
    ok = fits(v, source)
    for step, c in steps:
        v = apply(step, v, wrap(c, t), lambda op, a, c: {"add": a + c, "sub": a - c, "mul": a * c}[op])
        ok = ok and fits(v, t)
    return v, ok


NEAR_LIMITS = st.one_of(st.integers(-2**31 - 40, -2**31 + 40), st.integers(2**31 - 40, 2**31 + 40),
                        st.integers(-300, 300), st.integers(-2**63, 2**63 - 1))


@given(t=st.sampled_from(OFFSET_TYPES), narrow=st.sampled_from([None, "i8", "i16", "i32"]),
       pointee=st.sampled_from(POINTEES), x=NEAR_LIMITS,
       register_offsets=st.lists(st.integers(0, 4095), min_size=1, max_size=8),
       steps=st.lists(st.tuples(st.sampled_from(STEPS), NEAR_LIMITS), max_size=3),
       base=st.integers(2**20, 2**40))
def test_addresses_are_ptr_plus_offset_unless_the_offset_wraps(t, narrow, pointee, x, register_offsets, steps,
                                                                base):
    """Where the offset's arithmetic stays in its types (the interpreter's offset
    is the exact one), the address is ``ptr + offset`` as before; where it
    wraps, the address is off by a multiple of ``2**bits`` elements, ``bits``
    the narrowest type's (the unwrapped offset's address).  ``narrow``: the register offsets are added
    in that signed type first, then sign-extended (``offs.to(tl.int64)``)."""
    t, pointee = SCALAR_TYPES[t], SCALAR_TYPES[pointee]
    source = SCALAR_TYPES[narrow] if narrow and t.kind == "int" and SCALAR_TYPES[narrow].bits < t.bits else t
    out = np.zeros(2 * len(register_offsets), np.uint64)
    host_addresses(t, source, pointee, register_offsets, steps)(base, wrap(x, SCALAR_TYPES["i64"]),
                                                                out.ctypes.data)
    size, n = pointee.bits // 8, len(register_offsets)
    for i, k in enumerate(register_offsets):
        new, old = int(out[i]), int(out[n + i])
        offset, no_overflow = exact(t, source, x, k, steps)
        if no_overflow:
            assert new == old == (base + offset * size) % 2**64, (i, offset)
        assert (new - old) % 2**64 % min(2**64, size << source.bits) == 0, (i, offset)
