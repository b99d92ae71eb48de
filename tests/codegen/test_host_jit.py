"""``host_jit``: the code it runs is built for the baseline x86-64 CPU, whatever
CPU runs the tests, so the codegen tests give the same results on every x86-64
machine (a CPU with AVX512-BF16 used to flush bf16 subnormals)."""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from llvmlite import ir as llir

from codegen import host_jit
from helpers import PROPERTY

from tilec.codegen_llvm.scalar_base import BFloatType, counted_loop
from tilec.ir.interp_dtypes import bf16_bits

F32, I16, I64 = llir.FloatType(), llir.IntType(16), llir.IntType(64)
PTR = llir.PointerType()


def bf16_module() -> llir.Module:
    """``to_bf16(n, src, dst)``: dst[i] = the bits of src[i] (f32) rounded to bf16."""
    module = llir.Module()
    fn = llir.Function(module, llir.FunctionType(llir.VoidType(), [I64, PTR, PTR]), "to_bf16")
    n, src, dst = fn.args
    b = llir.IRBuilder(fn.append_basic_block("entry"))

    def convert(i: llir.Value) -> None:
        x = b.load(b.gep(src, [i], source_etype=F32), typ=F32)
        b.store(b.bitcast(b.fptrunc(x, BFloatType()), I16), b.gep(dst, [i], source_etype=I16))
    counted_loop(b, n, convert)
    b.ret_void()
    return module


_TO_BF16 = []


def to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 ``x`` rounded to bf16 by JIT-compiled code; the uint16 bits."""
    if not _TO_BF16:
        fnty = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
        _TO_BF16.append(host_jit.native_function(bf16_module(), "to_bf16", fnty))
    src = np.ascontiguousarray(x, np.float32)
    out = np.zeros(len(src), np.uint16)
    _TO_BF16[0](len(src), src.ctypes.data, out.ctypes.data)
    return out


def test_target_machine_never_asks_for_the_host_cpu(monkeypatch):
    def host_query(*_):
        raise AssertionError("host_jit asked for the host CPU")

    monkeypatch.setattr(llvm, "get_host_cpu_name", host_query)
    monkeypatch.setattr(llvm, "get_host_cpu_features", host_query)
    assert host_jit.BASELINE_CPU == "x86-64" and host_jit.BASELINE_FEATURES == ""
    assert host_jit.target_machine().triple == llvm.get_process_triple()


def test_bf16_rounding_uses_no_instruction_beyond_the_baseline():
    """No AVX (``v...`` mnemonics), so no ``vcvtneps2bf16``: the libcall rounds."""
    parsed = llvm.parse_assembly(str(bf16_module()))
    asm = host_jit.target_machine().emit_assembly(parsed)
    mnemonics = {line.split()[0] for line in asm.splitlines() if line.startswith("\t") and line.split()}
    assert "callq" in mnemonics or "call" in mnemonics
    assert not [m for m in mnemonics if m.startswith("v")], sorted(mnemonics)


def test_bf16_subnormals_survive():
    x = np.array([1e-40, -1e-40, 1e-39, 9.2e-41, 1.1754942e-38], np.float32)
    np.testing.assert_array_equal(to_bf16(x), bf16_bits(x))
    assert (to_bf16(x) & 0x7FFF).all(), "a subnormal was flushed to zero"


@PROPERTY
@given(hnp.arrays(np.float32, st.integers(1, 67), elements=st.floats(width=32, allow_subnormal=True)))
def test_bf16_rounding_matches_the_interpreter(x):
    np.testing.assert_array_equal(to_bf16(x), bf16_bits(x))
