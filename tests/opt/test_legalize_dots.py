"""Golden tests of ``widen_fp8_dots``: an fp8 dot stays where the target has
a matrix instruction for its operand and accumulator types, and is widened to
f16 (both operands cast, the dot unchanged otherwise) everywhere else; the
rewritten dot computes what the fp8 one does (the interpreter runs both)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from opt.golden import apply_pass

import tilec
import tilec.language as tl
from tilec.ir import fp8
from tilec.ir.interpret import interpret
from tilec.ir.printer import print_function
from tilec.opt.legalize_dots import widen_fp8_dots
from tilec.backends.host.target import host_target
from tilec.backends.nvidia.target import nvptx_target

DOT = """func @k(%a: tile<16x32x{elem}>, %b: tile<32x16x{elem}>, %c: tile<16x16x{acc}>) {{
  %d = dot %a, %b, %c : tile<16x16x{acc}>
  print [%d] {{prefix = ""}}
}}
"""

WIDENED = """func @k(%a: tile<16x32x{elem}>, %b: tile<32x16x{elem}>, %c: tile<16x16x{acc}>) {{
  %0 = cast %a {{to = f16}} : tile<16x32xf16>
  %1 = cast %b {{to = f16}} : tile<32x16xf16>
  %d = dot %0, %1, %c : tile<16x16x{acc}>
  print [%d] {{prefix = ""}}
}}
"""


@pytest.mark.parametrize("target,elem,acc,kept", [
    ("sm_90a", "f8e4nv", "f32", True),  # wgmma and mma.sync e4m3
    ("sm_89", "f8e5", "f32", True),  # Ada's mma.sync e5m2
    ("sm_90a", "f8e4nv", "f16", False),  # no fp8 form accumulates in f16
    ("sm_90a", "f8e4b15", "f32", False),  # a format no tensor core reads
    ("sm_80", "f8e4nv", "f32", False),  # Ampere has no fp8 instruction
    ("host", "f8e5", "f32", False),  # nor does the CPU
    ("sm_80", "f16", "f32", True),  # not fp8: left alone
])
def test_fp8_dots_stay_where_the_target_multiplies_them(target, elem, acc, kept):
    where = host_target() if target == "host" else nvptx_target(target)
    text = DOT.format(elem=elem, acc=acc)
    got = apply_pass(lambda fn: widen_fp8_dots(fn, where.every_matrix_instruction), text)
    assert got == (text if kept else WIDENED.format(elem=elem, acc=acc))


@tilec.jit
def fp8_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    c_ptrs = c_ptr + m[:, None] * N + n[None, :]
    tl.store(c_ptrs, tl.dot(a, b, tl.load(c_ptrs)))


@settings(max_examples=20, deadline=None)
@given(elem=st.sampled_from(sorted(fp8.FP8_FORMATS)), acc=st.sampled_from([np.float32, np.float16]),
       seed=st.integers(0, 2**32 - 1))
def test_the_widened_dot_computes_what_the_fp8_one_does(elem, acc, seed):
    """Random bit patterns of every fp8 format (NaNs and infinities included),
    both accumulators: the interpreter gives the same bits for the fp8 dot and
    the widened one."""
    rng = np.random.default_rng(seed)
    fmt = getattr(tl, "float" + elem.removeprefix("f"))
    a, b = (rng.integers(0, 256, shape, dtype=np.uint8) for shape in ((16, 32), (32, 16)))
    c = rng.standard_normal((16, 16)).astype(acc)
    fn = fp8_dot.compile(tilec.reinterpret(a, fmt), tilec.reinterpret(b, fmt), c, M=16, N=16, K=32,
                         target="host").fn
    assert "dot %" in print_function(fn) and f"tile<16x32x{elem}>" in print_function(fn)
    results = []
    for version in (fn, widen_fp8_dots(fn, host_target().every_matrix_instruction)):
        out = c.copy()
        interpret(version, (1,), [a, b, out])
        results.append(out)
    np.testing.assert_array_equal(results[1], results[0])
