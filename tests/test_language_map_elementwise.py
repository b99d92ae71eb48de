"""``tl.map_elementwise`` and ``tl.inline_asm_elementwise`` (Triton 3.6).

``map_elementwise`` runs against numpy on the interpreter: bodies with
``if``/``elif``, early returns and loops that differ element by element,
several results, ``pack``, broadcasting, ragged (masked) sizes and every
numeric dtype; the suite's compile check builds each of those kernels for
sm_80 and sm_90 too (ptxas included).  ``inline_asm_elementwise`` holds PTX,
which only a GPU runs: here its IR, its purity in the passes, the
interpreter's refusal and its PTX (Triton's own examples, assembled by
ptxas) are checked; ``tests/gpu/test_map_inline_asm_vs_triton.py`` runs
both on the GPU against Triton.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec import ir
from tilec.errors import CompilationError, InterpreterError, TilecError
from tilec.ir.parser import parse_module
from tilec.ir.printer import print_module
from helpers import FEW, FLOATS, INTS, NUMBERS, PROPERTY, assert_close, empty, exact, require, to_host, values

ARCHS = ("sm_80", "sm_90")


# --------------------------------------------------------------------------- #
# map_elementwise: control flow per element
# --------------------------------------------------------------------------- #

@tilec.jit
def clamp_scalar(x, lo, hi):
    if x < lo:
        return lo
    elif x > hi:
        return hi
    return x


@tilec.jit
def clamp_kernel(x_ptr, lo_ptr, hi_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    z = tl.map_elementwise(clamp_scalar, x, tl.load(lo_ptr), tl.load(hi_ptr))
    tl.store(z_ptr + offs, z, mask=mask)


@pytest.mark.parametrize("dtype", NUMBERS)
@FEW
@given(data=st.data(), n=st.integers(1, 70))
def test_branches_and_early_returns_decide_per_element(dtype, data, n):
    require(dtype)
    x = data.draw(values(dtype, n))
    lo, hi = np.sort(data.draw(values(dtype, 2, finite=True)))
    z = empty(n, dtype)
    clamp_kernel[(n + 31) // 32,](to_host(x, dtype), to_host([lo], dtype), to_host([hi], dtype), z, n, BLOCK=32)
    x = exact(x, dtype)
    assert_close(z, np.where(x < lo, lo, np.where(x > hi, hi, x)), dtype)


@tilec.jit
def steps_scalar(x):
    """Collatz steps to reach 1 (a loop whose trip count is the element's own),
    and the largest value met on the way."""
    steps = 0
    peak = x
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        peak = tl.maximum(peak, x)
        steps += 1
    return steps, peak


@tilec.jit
def bits_below_scalar(x, k):
    """How many of the low ``K`` bits of ``x`` are set (a ``for`` with a per-element ``if``)."""
    count = x * 0
    for i in range(8):
        if i < k:
            count += (x >> i) & 1
    return count


@tilec.jit
def loops_kernel(x_ptr, s_ptr, p_ptr, c_ptr, n, K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    steps, peak = tl.map_elementwise(steps_scalar, x)
    tl.store(s_ptr + offs, steps, mask=mask)
    tl.store(p_ptr + offs, peak, mask=mask)
    tl.store(c_ptr + offs, tl.map_elementwise(bits_below_scalar, x, K), mask=mask)


def _collatz(v: int) -> tuple[int, int]:
    steps, peak = 0, v
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        peak, steps = max(peak, v), steps + 1
    return steps, peak


@PROPERTY
@given(data=st.data(), n=st.integers(1, 64), k=st.integers(0, 8))
def test_loops_run_each_elements_own_trip_count(data, n, k):
    x = data.draw(values("int32", n, lo=1, hi=3000))
    steps, peak, count = (empty(n, "int32") for _ in range(3))
    loops_kernel[(1,)](x, steps, peak, count, n, K=k, BLOCK=64)
    want = np.array([_collatz(int(v)) for v in x]).reshape(n, 2)
    np.testing.assert_array_equal(steps, want[:, 0])
    np.testing.assert_array_equal(peak, want[:, 1])
    np.testing.assert_array_equal(count, [bin(int(v) & ((1 << k) - 1)).count("1") for v in x])


# --------------------------------------------------------------------------- #
# several results, pack, broadcasting
# --------------------------------------------------------------------------- #

@tilec.jit
def sum_and_product_scalar(a0, a1, b0, b1):
    """Two elements of ``a`` and of ``b`` at a time (pack=2): two sums, then two products."""
    return a0 + b0, a1 + b1, a0 * b0, a1 * b1


@tilec.jit
def sum_and_product_1(a, b):
    return a + b, a * b


@tilec.jit
def sum_and_product_4(a0, a1, a2, a3, b0, b1, b2, b3):
    return a0 + b0, a1 + b1, a2 + b2, a3 + b3, a0 * b0, a1 * b1, a2 * b2, a3 * b3


@tilec.jit
def pairs_kernel(a_ptr, b_ptr, s_ptr, p_ptr, M: tl.constexpr, N: tl.constexpr, PACK: tl.constexpr):
    """``a`` is a column (M, 1), ``b`` a row (1, N): the map broadcasts them to (M, N)."""
    rm, rn = tl.arange(0, M)[:, None], tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rm)
    b = tl.load(b_ptr + rn)
    if PACK == 1:
        s, p = tl.map_elementwise(sum_and_product_1, a, b)
    elif PACK == 2:
        s, p = tl.map_elementwise(sum_and_product_scalar, a, b, pack=2)
    else:
        s, p = tl.map_elementwise(sum_and_product_4, a, b, pack=4)
    tl.store(s_ptr + rm * N + rn, s)
    tl.store(p_ptr + rm * N + rn, p)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "int64", "float16", "float32", "float64"])
@FEW
@given(data=st.data(), m=st.sampled_from([1, 2, 4, 16]), n=st.sampled_from([4, 8, 32]),
       pack=st.sampled_from([1, 2, 4]))
def test_several_results_packed_and_broadcast(dtype, data, m, n, pack):
    a = data.draw(values(dtype, (m, 1), finite=True, lo=-100, hi=100))
    b = data.draw(values(dtype, (1, n), finite=True, lo=-100, hi=100))
    if dtype.startswith("uint"):
        a, b = np.abs(a), np.abs(b)
    s, p = empty((m, n), dtype), empty((m, n), dtype)
    pairs_kernel[(1,)](to_host(a, dtype), to_host(b, dtype), s, p, M=m, N=n, PACK=pack)
    ea, eb = exact(a, dtype), exact(b, dtype)
    assert_close(s, ea + eb, dtype, ulps=0.5 if dtype in FLOATS else 0)
    assert_close(p, ea * eb, dtype, ulps=0.5 if dtype in FLOATS else 0)


@tilec.jit
def mixed_scalar(x, y):
    """Results of other types than the arguments: a bool, an int32 and a float."""
    return x > y, (x > 0).to(tl.int32) + 1, x.to(tl.float32) * 0.5


@tilec.jit
def mixed_kernel(x_ptr, y_ptr, g_ptr, i_ptr, f_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    g, i, f = tl.map_elementwise(mixed_scalar, tl.load(x_ptr + offs), tl.load(y_ptr + offs))
    tl.store(g_ptr + offs, g)
    tl.store(i_ptr + offs, i)
    tl.store(f_ptr + offs, f)


@pytest.mark.parametrize("dtype", INTS + ("float32", "float64"))
def test_results_may_have_their_own_types(dtype):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 100, 16).astype(dtype)
    y = rng.integers(0, 100, 16).astype(dtype)
    g, i, f = empty(16, "int1"), empty(16, "int32"), empty(16, "float32")
    mixed_kernel[(1,)](x, y, g, i, f, N=16)
    np.testing.assert_array_equal(g, x > y)
    np.testing.assert_array_equal(i, (x > 0).astype(np.int32) + 1)
    np.testing.assert_array_equal(f, x.astype(np.float32) * np.float32(0.5))


@tilec.jit
def lookup_scalar(table_ptr, i, n):
    """Read the table where the index is in range (a load only some elements make)."""
    if (i >= 0) & (i < n):
        return tl.load(table_ptr + i)
    return -1.0


@tilec.jit
def lookup_kernel(t_ptr, i_ptr, z_ptr, n, N: tl.constexpr):
    offs = tl.arange(0, N)
    z = tl.map_elementwise(lookup_scalar, t_ptr + offs * 0, tl.load(i_ptr + offs), n)
    tl.store(z_ptr + offs, z)


@PROPERTY
@given(data=st.data(), n=st.integers(1, 40))
def test_loads_through_per_element_pointers(data, n):
    table = data.draw(values("float32", n, finite=True))
    index = data.draw(values("int32", 32, lo=-5, hi=n + 5))
    z = empty(32, "float32")
    lookup_kernel[(1,)](table, index, z, n, N=32)
    inside = (index >= 0) & (index < n)
    np.testing.assert_array_equal(z, np.where(inside, table[np.clip(index, 0, n - 1)], np.float32(-1)))


# --------------------------------------------------------------------------- #
# map_elementwise: mistakes are compile errors at the call
# --------------------------------------------------------------------------- #

@tilec.jit
def add_scalar(x, y):
    return x + y


@tilec.jit
def tile_scalar(x):
    return tl.zeros([4], tl.float32) + x


@tilec.jit
def one_result_pack2(x0, x1):
    return x0 + x1


@tilec.jit
def mixed_pack2(x0, x1):
    return x0, x1.to(tl.float64)


@tilec.jit
def storing_scalar(p, x):
    tl.store(p, x)
    return x


def _plain_add(x, y):
    return x + y


@tilec.jit
def misuse_kernel(x_ptr, z_ptr, CASE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    if CASE == "shapes":
        z = tl.map_elementwise(add_scalar, x, tl.load(x_ptr + tl.arange(0, 4)))
    elif CASE == "arity":
        z = tl.map_elementwise(add_scalar, x)
    elif CASE == "pack":
        z = tl.map_elementwise(add_scalar, x, x, pack=3)
    elif CASE == "tile":
        z = tl.map_elementwise(tile_scalar, x)
    elif CASE == "results":
        z = tl.map_elementwise(one_result_pack2, x, pack=2)
    elif CASE == "types":
        z = tl.map_elementwise(mixed_pack2, x, pack=2)
    elif CASE == "store":
        z = tl.map_elementwise(storing_scalar, z_ptr + tl.arange(0, 8), x)
    elif CASE == "not_jit":
        z = tl.map_elementwise(_plain_add, x, x)
    else:
        z = tl.map_elementwise(add_scalar)
    tl.store(z_ptr + tl.arange(0, 8), z)


@pytest.mark.parametrize("case,message", [
    ("shapes", "cannot be broadcast"),
    ("arity", "calls `add_scalar(x, y)` with 1 scalar(s) (1 argument(s), pack=1 element(s) of each)"),
    ("pack", "pack=3 does not divide the 8 elements"),
    ("tile", "must return scalars"),
    ("results", "must return 2 value(s) per result (pack=2), got 1"),
    ("types", "for the 2 elements of one result"),
    ("store", "may only compute values; its `store` would run once per program"),
    ("not_jit", "must be a @jit function"),
    ("none", "needs at least one tensor"),
])
def test_misuse_is_a_compile_error_at_the_call(case, message):
    x = np.zeros(8, np.float32)
    with pytest.raises(CompilationError, match="`tl.map_elementwise`") as info:
        misuse_kernel[(1,)](x, x, CASE=case)
    assert message in str(info.value)
    assert "tl.map_elementwise(" in str(info.value).splitlines()[1]  # the caret is under the call


# --------------------------------------------------------------------------- #
# The IR: text form, verifier, purity
# --------------------------------------------------------------------------- #

def _tir(kernel, *args, stage="tir", **meta) -> ir.Function:
    text = kernel.compile(*args, target="host", **meta).asm[stage]
    return parse_module(text).functions[0]


def test_both_ops_print_and_parse_back():
    x = np.zeros(64, np.float32)
    for text in (clamp_kernel.compile(x, x, x, x, 5, BLOCK=32, target="host").asm["tir"],
                 asm_kernel.compile(x, x, CASE="multi", target="host").asm["tir"]):
        module = parse_module(text)
        assert print_module(module) == text


def test_the_body_is_scalar_code():
    fn = _tir(clamp_kernel, *[np.zeros(4, np.float32)] * 4, 4, BLOCK=32)
    op = next(o for o in ir.walk(fn.body) if isinstance(o, ir.MapElementwise))
    inner = next(o for o in ir.walk(op.body) if isinstance(o, ir.Compare))
    inner.lhs = op.srcs[0]  # the comparison now reads the whole tile
    with pytest.raises(ir.VerifyError, match="body must be scalar code"):
        op.verify()


# --------------------------------------------------------------------------- #
# inline_asm_elementwise (Triton's examples; PTX runs only on a GPU)
# --------------------------------------------------------------------------- #

@tilec.jit
def asm_kernel(x_ptr, z_ptr, CASE: tl.constexpr):
    offs = tl.arange(0, 128)
    if CASE == "shift":  # shf.l.wrap by a register (Triton's test_inline_asm)
        x = tl.load(x_ptr + offs).to(tl.int32, bitcast=True)
        y = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r, r, r", [x, x, 17], dtype=tl.int32,
                                      is_pure=True, pack=1)
        tl.store(z_ptr + offs, y.to(tl.float32, bitcast=True))
    elif CASE == "bytes":  # four int8 in one register (test_inline_asm_packed)
        x = tl.load(x_ptr + offs).to(tl.int8)
        y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; shl.b32 $0, $0, 3;", "=r,r", [x],
                                      dtype=tl.int8, is_pure=True, pack=4)
        tl.store(z_ptr + offs, y.to(tl.float32))
    elif CASE == "multi":  # two results (test_inline_asm_multiple_outputs)
        x = tl.load(x_ptr + offs).to(tl.uint32, bitcast=True)
        c, d = tl.inline_asm_elementwise("sub.u32 $0, $2, $3;\n sub.u32 $1, $3, $2;", "=r,=r,r,r", [x, x + 1],
                                         dtype=(tl.uint32, tl.uint32), is_pure=True, pack=1)
        tl.store(z_ptr + offs, (c + d).to(tl.float32))
    elif CASE == "halves":  # two f16 in one register, two results of two each
        x = tl.load(x_ptr + offs).to(tl.float16)
        a, b = tl.inline_asm_elementwise("add.f16x2 $0, $2, $2; mul.f16x2 $1, $2, $2;", "=r,=r,r", [x],
                                         dtype=(tl.float16, tl.float16), is_pure=True, pack=2)
        tl.store(z_ptr + offs, (a + b).to(tl.float32))
    elif CASE == "pointers":  # test_inline_asm_with_pointers: the asm stores
        tl.inline_asm_elementwise("ld.global.b32 $0, [$1]; st.global.b32 [$2], $0;", "=r,l,l",
                                  [x_ptr + offs, z_ptr + offs], dtype=tl.int32, is_pure=False, pack=1)
    elif CASE == "scalar":  # no arguments: one scalar result
        lane = tl.inline_asm_elementwise("mov.u32 $0, %laneid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
        tl.store(z_ptr + offs, tl.load(x_ptr + offs) + lane)
    else:  # a pure asm run twice on the same inputs, one result unused
        x = tl.load(x_ptr + offs).to(tl.int32, bitcast=True)
        y = tl.inline_asm_elementwise("shl.b32 $0, $1, 1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
        w = tl.inline_asm_elementwise("shl.b32 $0, $1, 1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
        tl.inline_asm_elementwise("shl.b32 $0, $1, 2;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
        tl.inline_asm_elementwise("membar.gl;", "=r,r", [x], dtype=tl.int32, is_pure=False, pack=1)
        tl.store(z_ptr + offs, (y + w).to(tl.float32, bitcast=True))


ASM_CASES = ("shift", "bytes", "multi", "halves", "pointers", "scalar", "purity")


@pytest.mark.parametrize("case", ASM_CASES)
@pytest.mark.parametrize("arch", ARCHS)
def test_inline_asm_assembles_for_nvidia(case, arch):
    x = np.zeros(128, np.float32)
    compiled = asm_kernel.compile(x, x, CASE=case, target=arch)
    assert "cubin" in compiled.asm  # ptxas took the kernel
    assert "// begin inline asm" in compiled.asm["ptx"]


def test_inline_asm_keeps_triton_packing_in_the_ptx():
    """Four int8 elements travel in one 32-bit register, as in Triton."""
    x = np.zeros(128, np.float32)
    llir = asm_kernel.compile(x, x, CASE="bytes", target="sm_90").asm["llir"]
    assert 'asm "and.b32 $0, $1, 0x1F1F1F1F; shl.b32 $0, $0, 3;", "=r,r"(<4 x i8>' in llir


def test_pure_asm_merges_and_drops_and_impure_asm_stays():
    fn = _tir(asm_kernel, np.zeros(128, np.float32), np.zeros(128, np.float32), stage="tir-opt", CASE="purity")
    asms = [op for op in ir.walk(fn.body) if isinstance(op, ir.InlineAsm)]
    assert [(op.asm, op.pure) for op in asms] == [("shl.b32 $0, $1, 1;", True), ("membar.gl;", False)]


@pytest.mark.host_only
def test_the_interpreter_cannot_run_asm_and_says_so_at_the_line():
    x = np.zeros(128, np.float32)
    asm_kernel.compile(x, x, CASE="shift", target="host")  # the IR is made anywhere
    with pytest.raises(InterpreterError, match="needs a GPU target") as info:
        asm_kernel[(1,)](x, x, CASE="shift")
    assert "tl.inline_asm_elementwise" in str(info.value)


def test_a_target_without_inline_asm_refuses_it_in_codegen():
    from tilec.codegen_llvm import TargetLowering
    with pytest.raises(TilecError, match="cannot run inline assembly"):
        TargetLowering.inline_asm(type("Plain", (), {"name": "plain"})(), None, "nop;", "", [], None, True)


@tilec.jit
def asm_misuse_kernel(x_ptr, CASE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    if CASE == "pack":
        tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=3)
    elif CASE == "no_dtype":
        tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=(), is_pure=True, pack=1)
    elif CASE == "bool":
        tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x > 0], dtype=tl.int32, is_pure=True, pack=1)
    elif CASE == "shapes":
        tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r", [x, tl.arange(0, 4)], dtype=tl.int32,
                                  is_pure=True, pack=1)
    else:
        tl.inline_asm_elementwise(x, "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)


@pytest.mark.parametrize("case,message", [
    ("pack", "pack=3 does not divide the 8 elements"), ("no_dtype", "at least one result dtype"),
    ("bool", "does not take int1"), ("shapes", "cannot be broadcast"), ("text", "the asm of"),
])
def test_inline_asm_misuse_is_a_compile_error(case, message):
    with pytest.raises(CompilationError, match="inline_asm_elementwise") as info:
        asm_misuse_kernel.compile(np.zeros(8, np.int32), CASE=case, target="host")
    assert message in str(info.value)
