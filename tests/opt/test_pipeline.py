"""Software pipelining (``tilec/backends/nvidia/pipeline.py``): the rewrite on a small
loop as golden text, each bail-out, and -- the point -- pipelined kernels
computing exactly what they computed before, on the interpreter, for ragged
sizes whose trip counts run from 0 past ``num_stages``."""
from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernels.matmul import matmul_kernel
from opt.golden import apply_pass

import tilec
import tilec.language as tl
from tilec import ir
from tilec.ir.interpret import interpret
from tilec.ir.parser import parse_function
from tilec.ir.printer import print_function
from tilec.opt.axis_info import analyze_axes
from tilec.backends.nvidia.layouts import assign_layouts
from tilec.backends.nvidia.pipeline import analyze_loop, pipeline_loops
from tilec.backends.nvidia.target import nvptx_target
from tilec.opt.pipelining import NotPipelinable

SM_90 = nvptx_target("sm_90")

# --------------------------------------------------------------------------- #
# Golden text
# --------------------------------------------------------------------------- #

LOOP = """\
func @k(%a: ptr<f16>, %n: i32) {
  %zero = constant {value = 0, type = i32} : i32
  %one = constant {value = 1, type = i32} : i32
  %z = constant {value = 0.0, type = tile<16x16xf32>} : tile<16x16xf32, mma<[1, 1]>>
  %p0 = splat %a {shape = (16, 16)} : tile<16x16xptr<f16>>
  %inc = constant {value = 16, type = tile<16x16xi32>} : tile<16x16xi32>
  %acc, %p_end = for %zero, %n, %one, [%z, %p0] : tile<16x16xf32, mma<[1, 1]>>, tile<16x16xptr<f16>> {
  ^(%k: i32, %acc_in: tile<16x16xf32, mma<[1, 1]>>, %p: tile<16x16xptr<f16>>):
    %x = load %p, _, _ : tile<16x16xf16>
    %xa = convert_layout %x {layout = dot_op<0, 2, mma<[1, 1]>>} : tile<16x16xf16, dot_op<0, 2, mma<[1, 1]>>>
    %xb = convert_layout %x {layout = dot_op<1, 2, mma<[1, 1]>>} : tile<16x16xf16, dot_op<1, 2, mma<[1, 1]>>>
    %d = dot %xa, %xb, %acc_in : tile<16x16xf32, mma<[1, 1]>>
    %p_next = addptr %p, %inc : tile<16x16xptr<f16>>
    yield [%d, %p_next]
  }
}
"""

PIPELINED_3 = """\
func @k(%a: ptr<f16>, %n: i32) {
  %zero = constant {value = 0, type = i32} : i32
  %one = constant {value = 1, type = i32} : i32
  %z = constant {value = 0.0, type = tile<16x16xf32>} : tile<16x16xf32, mma<[1, 1]>>
  %p0 = splat %a {shape = (16, 16)} : tile<16x16xptr<f16>>
  %inc = constant {value = 16, type = tile<16x16xi32>} : tile<16x16xi32>
  %x_smem = local_alloc {shape = (3, 16, 16), elem = f16, layout = shared<8, 4, 2, [2, 1, 0]>} : tile<3x16x16xf16, shared<8, 4, 2, [2, 1, 0]>>
  barrier
  %0 = constant {value = 0, type = i32} : i32
  %1 = cmp %zero, %n {pred = "lt"} : i1
  %2 = splat %1 {shape = (16, 16)} : tile<16x16xi1>
  async_copy %x_smem, %0, %p0, %2, _
  %p_next = addptr %p0, %inc : tile<16x16xptr<f16>>
  async_commit
  %3 = constant {value = 1, type = i32} : i32
  %4 = add %zero, %3 : i32
  %5 = cmp %4, %n {pred = "lt"} : i1
  %6 = splat %5 {shape = (16, 16)} : tile<16x16xi1>
  async_copy %x_smem, %3, %p_next, %6, _
  %p_next_1 = addptr %p_next, %inc : tile<16x16xptr<f16>>
  async_commit
  %7 = constant {value = 2, type = i32} : i32
  %8 = constant {value = 3, type = i32} : i32
  %acc, %p_end, %read_slot, %write_slot = for %zero, %n, %one, [%z, %p_next_1, %0, %7] : tile<16x16xf32, mma<[1, 1]>>, tile<16x16xptr<f16>>, i32, i32 {
  ^(%k: i32, %acc_in: tile<16x16xf32, mma<[1, 1]>>, %p: tile<16x16xptr<f16>>, %read_slot_1: i32, %write_slot_1: i32):
    async_wait {pending = 1}
    barrier
    %xa = local_load %x_smem, %read_slot_1 : tile<16x16xf16, dot_op<0, 2, mma<[1, 1]>>>
    %xb = local_load %x_smem, %read_slot_1 : tile<16x16xf16, dot_op<1, 2, mma<[1, 1]>>>
    %d = dot %xa, %xb, %acc_in : tile<16x16xf32, mma<[1, 1]>>
    %9 = add %k, %7 : i32
    %10 = cmp %9, %n {pred = "lt"} : i1
    %11 = splat %10 {shape = (16, 16)} : tile<16x16xi1>
    async_copy %x_smem, %write_slot_1, %p, %11, _
    %p_next_2 = addptr %p, %inc : tile<16x16xptr<f16>>
    async_commit
    %12 = add %read_slot_1, %3 : i32
    %13 = cmp %12, %8 {pred = "eq"} : i1
    %14 = select %13, %0, %12 : i32
    %15 = add %write_slot_1, %3 : i32
    %16 = cmp %15, %8 {pred = "eq"} : i1
    %17 = select %16, %0, %15 : i32
    yield [%d, %p_next_2, %14, %17]
  }
  async_wait {pending = 0}
  barrier
}
"""


def stages(n: int):
    return lambda fn: pipeline_loops(fn, n, SM_90, num_warps=4)


def test_three_stages_copy_two_iterations_ahead_and_read_the_oldest_slot():
    got = apply_pass(stages(3), LOOP)
    assert got == PIPELINED_3, got


def test_a_target_without_asynchronous_copies_keeps_its_loops():
    no_copies = dataclasses.replace(SM_90, async_copies=False)
    assert apply_pass(lambda fn: pipeline_loops(fn, 3, no_copies, num_warps=4), LOOP) == apply_pass(stages(1), LOOP)


def test_two_stages_wait_for_every_copy_and_four_keep_two_in_flight():
    assert "async_wait {pending = 0}\n    barrier" in apply_pass(stages(2), LOOP)
    four = apply_pass(stages(4), LOOP)
    assert "async_wait {pending = 2}" in four and four.count("async_commit") == 4  # 3 in the prologue
    assert "local_alloc {shape = (4, 16, 16)" in four


def test_one_stage_leaves_the_loop_alone():
    assert apply_pass(stages(1), LOOP) == LOOP


# --------------------------------------------------------------------------- #
# Bail-outs: the loop is left as it is, and analyze_loop says why
# --------------------------------------------------------------------------- #

BODY_LOAD = "    %x = load %p, _, _ : tile<16x16xf16>\n"
BAIL = {
    "the step is not a positive constant": ("%n, %one, [", "%n, %n, ["),
    "the body holds control flow": (BODY_LOAD, BODY_LOAD + "    if %c {\n      yield []\n    } {\n"
                                  "      yield []\n    }\n"),
    "`other` is not a constant 0": (BODY_LOAD, "    %o = constant {value = 1.0, type = tile<16x16xf16>} : "
                                    "tile<16x16xf16>\n    %x = load %p, _, %o : tile<16x16xf16>\n"),
    "no load to pipeline": ("    yield [%d,", "    store %p, %x, _\n    yield [%d,"),
    # the pointers of this iteration are stage 0: the last stage runs S-1 iterations behind
    "(last stage) uses a value of the first stage": ("    yield [%d,", "    %h = load %p, _, _ : tile<16x16xf16>\n"
                                                      "    yield [%d,"),
    "used after the loop": ("\n}\n", "\n  %last = load %p_end, _, _ : tile<16x16xf16>\n}\n"),
    "is not pure": (BODY_LOAD, "    %bump = load %p, _, _ : tile<16x16xf16>\n"
                    "    %bumpi = bitcast %bump {to = i16} : tile<16x16xi16>\n"
                    "    %q = addptr %p, %bumpi : tile<16x16xptr<f16>>\n"
                    "    %x = load %q, _, _ : tile<16x16xf16>\n"),
    "from a pipelined load": ("    %xb = ", "    %xi = bitcast %xa {to = i16} : tile<16x16xi16, "
                              "dot_op<0, 2, mma<[1, 1]>>>\n    %q = addptr %p, %xi : tile<16x16xptr<f16>>\n"
                              "    %y = load %q, _, _ : tile<16x16xf16>\n    %ya = convert_layout %y {layout = "
                              "dot_op<0, 2, mma<[1, 1]>>} : tile<16x16xf16, dot_op<0, 2, mma<[1, 1]>>>\n    %xb = "),
}


@pytest.mark.parametrize("reason", sorted(BAIL))
def test_loops_that_cannot_be_pipelined_are_left_alone(reason):
    old, new = BAIL[reason]
    assert old in LOOP
    text = LOOP.replace(old, new, 1).replace("func @k(%a: ptr<f16>, %n: i32)", "func @k(%a: ptr<f16>, %n: i32, %c: i1)")
    fn = parse_function(text)
    loop = next(op for op in fn.body.ops if isinstance(op, ir.For))
    users = {}
    for op in ir.walk(fn.body):
        for v in op.operands:
            users.setdefault(v, []).append(op)
    with pytest.raises(NotPipelinable, match=reason.replace("(", r"\(").replace(")", r"\)")):
        analyze_loop(loop, users)
    assert apply_pass(stages(3), text) == print_function(fn)


# --------------------------------------------------------------------------- #
# Semantics on the interpreter: pipelined == not pipelined == numpy
# --------------------------------------------------------------------------- #

def tile_ir(kernel, args: dict, **constexprs):
    """``kernel`` specialized for ``args`` and lowered to tile IR with layouts (4 warps)."""
    compiled = kernel.compile(*args.values(), **constexprs, target="host")
    return assign_layouts(compiled.fn, num_warps=4, target=SM_90)


def run(fn, grid, args: dict, out: str) -> np.ndarray:
    """Interpret ``fn`` on fresh copies of ``args``; the array ``out`` after it."""
    fresh = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    interpret(fn, grid, [fresh[name] for name in fn.arg_names])
    return fresh[out]


def check_pipelined(fn, num_stages: int, grid, args: dict, out: str, want: np.ndarray, pipelined=True):
    """Pipelining ``fn`` over ``num_stages`` changes no bit of ``out``, which is ``want``."""
    before = run(fn, grid, args, out)
    np.testing.assert_allclose(before.astype(np.float32), want, rtol=2e-2, atol=2e-2)
    piped = pipeline_loops(fn, num_stages, SM_90, num_warps=4)
    text = print_function(piped)
    assert ("async_copy" in text) == pipelined, text
    np.testing.assert_array_equal(run(piped, grid, args, out), before)


def operands(m: int, n: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


BLOCKS = st.sampled_from((16, 32))
STAGES = st.sampled_from((2, 3, 4))


@settings(max_examples=15)
@given(m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(0, 120), bm=BLOCKS, bn=BLOCKS, bk=BLOCKS,
       num_stages=STAGES, leaky=st.booleans())
def test_tutorial_matmul_pipelined_computes_the_same(m, n, k, bm, bn, bk, num_stages, leaky):
    a, b, want = operands(m, n, k, m * n + k)
    c = np.zeros((m, n), np.float16)
    args = dict(a_ptr=a, b_ptr=b, c_ptr=c, M=m, N=n, K=k, stride_am=k, stride_ak=1, stride_bk=n, stride_bn=1,
                stride_cm=n, stride_cn=1)
    fn = tile_ir(matmul_kernel, args, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=2,
                 ACTIVATION="leaky_relu" if leaky else "")
    grid = (math.ceil(m / bm) * math.ceil(n / bn),)
    check_pipelined(fn, num_stages, grid, args, "c_ptr", np.where(want >= 0, want, 0.01 * want) if leaky else want)


@tilec.jit
def k_offset_matmul(a_ptr, b_ptr, c_ptr, M, N, K, k_start,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, EVEN_K: tl.constexpr, OTHER: tl.constexpr,
                    COUNT_K: tl.constexpr = False):
    """``c = a[:, k_start:] @ b[k_start:, :]`` with pointers recomputed from
    the induction variable (no loop-carried pointers), a step of ``BK``, a
    lower bound that is an argument, and no masks on K when ``EVEN_K``.
    ``COUNT_K`` (``BN == BK``) adds to column ``j`` the number of blocks
    whose ``k + j`` is below K: the last stage uses stage 0's ``ks``."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(k_start, K, BK):
        ks = k + rk
        a_ptrs = a_ptr + (rm % M)[:, None] * K + ks[None, :]
        b_ptrs = b_ptr + ks[:, None] * N + (rn % N)[None, :]
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            a = tl.load(a_ptrs, mask=ks[None, :] < K, other=OTHER)
            b = tl.load(b_ptrs, mask=ks[:, None] < K, other=OTHER)
        acc = tl.dot(a, b, acc)
        if COUNT_K:
            acc += tl.where(ks < K, 1.0, 0.0)[None, :]
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def k_offset_case(m, n, k, k_start, even_k, other, int64_k=False, count_k=False):
    a, b, _ = operands(m, n, k, m + n + k)
    want = a[:, k_start:].astype(np.float32) @ b[k_start:].astype(np.float32)
    if count_k:  # column j of a block: +1 for each iteration's k with k + j < K
        counts = sum((start + np.arange(16) < k for start in range(k_start, k, 16)), np.zeros(16))
        want += counts[np.arange(n) % 16]
    c = np.zeros((m, n), np.float32)
    args = dict(a_ptr=a, b_ptr=b, c_ptr=c, M=m, N=n, K=np.int64(k) if int64_k else k, k_start=k_start)
    fn = tile_ir(k_offset_matmul, args, BM=32, BN=16, BK=16, EVEN_K=even_k, OTHER=other, COUNT_K=count_k)
    return fn, (math.ceil(m / 32), math.ceil(n / 16)), args, want


@settings(max_examples=10)
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(0, 90), k_start=st.integers(0, 40),
       num_stages=STAGES, int64_k=st.booleans())
def test_loads_addressed_by_the_induction_variable_pipelined(m, n, k, k_start, num_stages, int64_k):
    fn, grid, args, want = k_offset_case(m, n, k, k_start, False, 0.0, int64_k)
    loop = next(op for op in ir.walk(fn.body) if isinstance(op, ir.For))
    assert str(loop.lower.type) == ("i64" if int64_k else "i32")
    check_pipelined(fn, num_stages, grid, args, "c_ptr", want)


@pytest.mark.parametrize("num_stages", (2, 3, 4))
@pytest.mark.parametrize("k", (16, 32, 48, 80))
def test_unmasked_loads_are_copied_under_the_iteration_mask_alone(num_stages, k):
    fn, grid, args, want = k_offset_case(33, 20, k, 0, True, 0.0)
    check_pipelined(fn, num_stages, grid, args, "c_ptr", want)


@settings(max_examples=10)
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(0, 90), k_start=st.integers(0, 40),
       num_stages=STAGES)
def test_the_last_stage_computes_again_what_it_uses_of_stage_0(m, n, k, k_start, num_stages):
    fn, grid, args, want = k_offset_case(m, n, k, k_start, False, 0.0, count_k=True)
    check_pipelined(fn, num_stages, grid, args, "c_ptr", want)


def test_a_nonzero_other_keeps_the_loop_as_it_is():
    fn, grid, args, want = k_offset_case(20, 20, 40, 0, False, 1.0)
    padding = 48 - 40  # the last block's masked-off k: 1.0 * 1.0 each
    check_pipelined(fn, 3, grid, args, "c_ptr", want + padding, pipelined=False)


@pytest.mark.parametrize("num_stages", (2, 3))
def test_copies_keep_the_axis_facts_of_the_loads_they_replace(num_stages):
    """The codegen sizes cp.async vectors from the axis analysis: ``mask &
    splat(valid)`` must stay as constant as the mask alone."""
    m = n = k = 128
    a, b, _ = operands(m, n, k, 0)
    args = dict(a_ptr=a, b_ptr=b, c_ptr=np.zeros((m, n), np.float16), M=m, N=n, K=k, stride_am=k, stride_ak=1,
                stride_bk=n, stride_bn=1, stride_cm=n, stride_cn=1)
    fn = tile_ir(matmul_kernel, args, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=2,
                 ACTIVATION="")
    facts = analyze_axes(fn)
    want = [(facts[op.mask], facts[op.ptr]) for op in ir.walk(fn.body) if isinstance(op, ir.Load) and op.mask]
    piped = pipeline_loops(fn, num_stages, SM_90, num_warps=4)
    facts = analyze_axes(piped)
    got = [(facts[op.mask], facts[op.ptr]) for op in ir.walk(piped.body) if isinstance(op, ir.AsyncCopy)]
    assert got == want * num_stages  # S-1 copies of each in the prologue, one in the loop


@tilec.jit
def two_tiles_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Each program computes two row blocks of ``c = a @ b`` one after the
    other: the K loop, pipelined, sits in an outer loop that is not."""
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    for t in range(2):
        rm = (tl.program_id(0) * 2 + t) * BM + tl.arange(0, BM)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            ks = k + rk
            a = tl.load(a_ptr + (rm % M)[:, None] * K + ks[None, :], mask=ks[None, :] < K, other=0.0)
            b = tl.load(b_ptr + ks[:, None] * N + (rn % N)[None, :], mask=ks[:, None] < K, other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@settings(max_examples=8)
@given(m=st.integers(1, 80), n=st.integers(1, 40), k=st.integers(0, 70), num_stages=STAGES)
def test_a_pipelined_loop_inside_an_outer_loop(m, n, k, num_stages):
    a, b, want = operands(m, n, k, m * k + n)
    args = dict(a_ptr=a, b_ptr=b, c_ptr=np.zeros((m, n), np.float32), M=m, N=n, K=k)
    fn = tile_ir(two_tiles_matmul, args, BM=16, BN=16, BK=16)
    check_pipelined(fn, num_stages, (math.ceil(m / 32), math.ceil(n / 16)), args, "c_ptr", want)


# --------------------------------------------------------------------------- #
# A warpgroup dot left running (sm_90a: dot_overlap.py)
# --------------------------------------------------------------------------- #

WARPGROUP_LOOP = """\
func @k(%a: ptr<f16>, %b: ptr<f16>, %n: i32) {
  %zero = constant {value = 0, type = i32} : i32
  %one = constant {value = 1, type = i32} : i32
  %z = constant {value = 0.0, type = tile<64x64xf32>} : tile<64x64xf32, mma<[4, 1]>>
  %pa0 = splat %a {shape = (64, 64)} : tile<64x64xptr<f16>>
  %pb0 = splat %b {shape = (64, 64)} : tile<64x64xptr<f16>>
  %inc = constant {value = 64, type = tile<64x64xi32>} : tile<64x64xi32>
  %acc, %pa_end, %pb_end = for %zero, %n, %one, [%z, %pa0, %pb0] : tile<64x64xf32, mma<[4, 1]>>, tile<64x64xptr<f16>>, tile<64x64xptr<f16>> {
  ^(%k: i32, %acc_in: tile<64x64xf32, mma<[4, 1]>>, %pa: tile<64x64xptr<f16>>, %pb: tile<64x64xptr<f16>>):
    %x = load %pa, _, _ : tile<64x64xf16>
    %y = load %pb, _, _ : tile<64x64xf16>
    %xa = convert_layout %x {layout = dot_op<0, 2, mma<[4, 1]>>} : tile<64x64xf16, dot_op<0, 2, mma<[4, 1]>>>
    %yb = convert_layout %y {layout = dot_op<1, 2, mma<[4, 1]>>} : tile<64x64xf16, dot_op<1, 2, mma<[4, 1]>>>
    ACC%d = dot %xa, %yb, %acc_used : tile<64x64xf32, mma<[4, 1]>>
    %pa_next = addptr %pa, %inc : tile<64x64xptr<f16>>
    %pb_next = addptr %pb, %inc : tile<64x64xptr<f16>>
    yield [%d, %pa_next, %pb_next]
  }
  %out = splat %a {shape = (64, 64)} : tile<64x64xptr<f16>, mma<[4, 1]>>
  %h = cast %acc {to = f16} : tile<64x64xf16, mma<[4, 1]>>
  store %out, %h, _
}
"""
CARRIED = ""  # the dot accumulates into the carried value itself
RESCALED = ("%half = constant {value = 0.5, type = tile<64x64xf32>} : tile<64x64xf32, mma<[4, 1]>>\n"
            "    %acc_used = mul %acc_in, %half : tile<64x64xf32, mma<[4, 1]>>\n    ")


@pytest.mark.parametrize("arch,acc,overlap", [("sm_90a", CARRIED, "chained"), ("sm_90a", RESCALED, "deferred"),
                                              ("sm_90", CARRIED, None)], ids=["sm_90a", "rescaled", "sm_90"])
def test_a_warpgroup_dot_feeding_only_the_next_iteration_keeps_running(arch, acc, overlap):
    """On sm_90a the K loop's dot waits only for the iteration before
    (``dot_wait {pending = 1}``); one whose accumulator is rescaled in the
    loop (attention's) is waited for by the next iteration, just before the
    rescale reads it; the loop's result waits for all, and the buffers get a
    slot more than stages so the copies never overwrite what a running dot
    reads.  A target without warpgroup instructions keeps the plain schedule."""
    text = WARPGROUP_LOOP.replace("ACC", acc)
    if not acc:
        text = text.replace("%acc_used", "%acc_in")
    got = apply_pass(lambda fn: pipeline_loops(fn, 3, nvptx_target(arch), num_warps=4), text)
    slots = 4 if overlap else 3
    assert got.count(f"local_alloc {{shape = ({slots}, 64, 64)") == 2, got
    body, after = got.split("yield [")[0], got.split("async_wait {pending = 0}")[1]
    assert ("%d_1 = dot_wait %d {pending = 1}" in body) == (overlap == "chained"), got
    waited = re.search(r"(%acc_in\S*) = dot_wait %acc_in {pending = 0}.*\n\s*%acc_used\S* = mul \1,", body)
    assert (waited is not None) == (overlap == "deferred"), got
    assert ("dot_wait %acc {pending = 0}" in after) == (overlap is not None), got
    assert body.split("for ", 1)[1].count("barrier") == 1
