"""Loading one iteration ahead into registers (``tilec/opt/register_prefetch.py``):
the rewrite as golden text, each bail-out, and prefetching kernels computing
exactly what they computed before, on the interpreter, for ragged sizes whose
trip counts run from 0 up."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernels.layer_norm import _layer_norm_bwd_dwdb
from opt.golden import apply_pass

import tilec
import tilec.language as tl
from tilec import ir
from tilec.ir.interpret import interpret
from tilec.ir.parser import parse_function
from tilec.ir.printer import print_function
from tilec.backends.nvidia.layouts import assign_layouts
from tilec.backends.nvidia.target import nvptx_target
from tilec.opt.pipelining import NotPipelinable, users_of
from tilec.opt.register_prefetch import prefetch_loops, prefetch_stages

SM_90 = nvptx_target("sm_90")
THREADS = 128

LOOP = """\
func @k(%a: ptr<f32>, %n: i32) {
  %zero = constant {value = 0, type = i32} : i32
  %one = constant {value = 1, type = i32} : i32
  %z = constant {value = 0.0, type = tile<16x16xf32>} : tile<16x16xf32>
  %p0 = splat %a {shape = (16, 16)} : tile<16x16xptr<f32>>
  %inc = constant {value = 16, type = tile<16x16xi32>} : tile<16x16xi32>
  %acc, %p_end = for %zero, %n, %one, [%z, %p0] : tile<16x16xf32>, tile<16x16xptr<f32>> {
  ^(%k: i32, %acc_in: tile<16x16xf32>, %p: tile<16x16xptr<f32>>):
    %x = load %p, _, _ : tile<16x16xf32>
    %s = add %acc_in, %x : tile<16x16xf32>
    %p_next = addptr %p, %inc : tile<16x16xptr<f32>>
    yield [%s, %p_next]
  }
}
"""

# The first iteration's tile is loaded before the loop; each iteration loads
# the next one's (masked by k + 1 < n) before it adds the one it carries in.
PREFETCHED = """\
func @k(%a: ptr<f32>, %n: i32) {
  %zero = constant {value = 0, type = i32} : i32
  %one = constant {value = 1, type = i32} : i32
  %z = constant {value = 0.0, type = tile<16x16xf32>} : tile<16x16xf32>
  %p0 = splat %a {shape = (16, 16)} : tile<16x16xptr<f32>>
  %inc = constant {value = 16, type = tile<16x16xi32>} : tile<16x16xi32>
  %0 = cmp %zero, %n {pred = "lt"} : i1
  %1 = splat %0 {shape = (16, 16)} : tile<16x16xi1>
  %x = load %p0, %1, _ : tile<16x16xf32>
  %p_next = addptr %p0, %inc : tile<16x16xptr<f32>>
  %acc, %p_end, %x_next = for %zero, %n, %one, [%z, %p_next, %x] : \
tile<16x16xf32>, tile<16x16xptr<f32>>, tile<16x16xf32> {
  ^(%k: i32, %acc_in: tile<16x16xf32>, %p: tile<16x16xptr<f32>>, %x_1: tile<16x16xf32>):
    %2 = add %k, %one : i32
    %3 = cmp %2, %n {pred = "lt"} : i1
    %4 = splat %3 {shape = (16, 16)} : tile<16x16xi1>
    %x_2 = load %p, %4, _ : tile<16x16xf32>
    %p_next_1 = addptr %p, %inc : tile<16x16xptr<f32>>
    %s = add %acc_in, %x_1 : tile<16x16xf32>
    yield [%s, %p_next_1, %x_2]
  }
}
"""


def prefetch(num_stages: int = 3, max_words: int = 64):
    return lambda fn: prefetch_loops(fn, num_stages, THREADS, max_words)


def test_the_next_iterations_tile_is_loaded_before_this_one_is_used():
    assert apply_pass(prefetch(), LOOP) == PREFETCHED


def test_one_stage_leaves_the_loop_alone():
    assert apply_pass(prefetch(1), LOOP) == LOOP


# --------------------------------------------------------------------------- #
# Bail-outs: the loop is left as it is, and prefetch_stages says why
# --------------------------------------------------------------------------- #

ADD = "    %s = add %acc_in, %x : tile<16x16xf32>\n"
BAIL = {
    "holds a dot": (ADD, "    %s = dot %x, %x, %acc_in : tile<16x16xf32>\n"),
    "(last stage) writes memory": (ADD, ADD + "    store %p0, %s, _\n"),
    "over 1": ("", ""),  # 16x16 f32 over 128 threads: 2 registers a thread
    "the body holds control flow": (ADD, ADD + "    if %c {\n      yield []\n    } {\n      yield []\n    }\n"),
}


@pytest.mark.parametrize("reason", sorted(BAIL))
def test_loops_that_cannot_prefetch_are_left_alone(reason):
    old, new = BAIL[reason]
    text = LOOP.replace(old, new, 1).replace("%n: i32)", "%n: i32, %c: i1)")
    max_words = 1 if reason == "over 1" else 64
    fn = parse_function(text)
    loop = next(op for op in fn.body.ops if isinstance(op, ir.For))
    with pytest.raises(NotPipelinable, match=reason.replace("(", r"\(").replace(")", r"\)")):
        prefetch_stages(loop, users_of(fn.body), THREADS, max_words)
    assert apply_pass(prefetch(max_words=max_words), text) == print_function(fn)


# --------------------------------------------------------------------------- #
# Semantics on the interpreter: prefetched == as written == numpy
# --------------------------------------------------------------------------- #

def tile_ir(kernel, args: dict, num_warps: int = 4, **constexprs):
    """``kernel`` specialized for ``args`` and lowered to tile IR with layouts."""
    compiled = kernel.compile(*args.values(), **constexprs, target="host")
    return assign_layouts(compiled.fn, num_warps=num_warps, target=SM_90)


def check_prefetched(fn, grid, args: dict, outs: list[str], num_warps: int = 4) -> dict:
    """Prefetching ``fn`` rewrites a loop and changes no bit of ``outs``; their values."""
    def run(f):
        fresh = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
        interpret(f, grid, [fresh[name] for name in f.arg_names])
        return {name: fresh[name] for name in outs}

    before = run(fn)
    rewritten = prefetch_loops(fn, 2, 32 * num_warps)
    assert print_function(rewritten) != print_function(fn), "no loop was prefetched"
    after = run(rewritten)
    for name in outs:
        np.testing.assert_array_equal(after[name], before[name])
    return after


@settings(max_examples=20, deadline=None)
@given(m=st.integers(0, 100), n=st.integers(1, 90), block_m=st.sampled_from((1, 8, 32)),
       block_n=st.sampled_from((16, 64)), seed=st.integers(0, 2**16))
def test_the_layer_norm_column_sums_prefetched(m, n, block_m, block_n, seed):
    rng = np.random.default_rng(seed)
    dw, db = (rng.uniform(-4, 4, (max(m, 1), n)).astype(np.float32) for _ in range(2))
    args = dict(DW=dw, DB=db, FINAL_DW=np.zeros(n, np.float32), FINAL_DB=np.zeros(n, np.float32), M=m, N=n)
    fn = tile_ir(_layer_norm_bwd_dwdb, args, BLOCK_SIZE_M=block_m, BLOCK_SIZE_N=block_n)
    got = check_prefetched(fn, (math.ceil(n / block_n),), args, ["FINAL_DW", "FINAL_DB"])
    np.testing.assert_allclose(got["FINAL_DW"], dw[:m].sum(axis=0), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got["FINAL_DB"], db[:m].sum(axis=0), rtol=1e-5, atol=1e-4)


@tilec.jit
def column_max(x_ptr, out_ptr, M, N, start, BM: tl.constexpr, BN: tl.constexpr, STRIDE: tl.constexpr):
    """Column maxima of rows ``start, start + STRIDE, ...`` (masked-off
    elements read as -inf, the last stage masks again with the rows it
    computes from the induction variable), and a count of rows seen: the
    loop-carried pointer advances in stage 0, the count in the last."""
    cols = tl.arange(0, BN)
    rows = tl.arange(0, BM)
    best = tl.full((BM, BN), float("-inf"), tl.float32)
    seen = tl.zeros((BM, BN), tl.int32)
    ptrs = x_ptr + (start + rows * STRIDE)[:, None] * N + cols[None, :]
    for i in range(start, M, BM * STRIDE):
        r = i + rows * STRIDE
        x = tl.load(ptrs, mask=(r[:, None] < M) & (cols[None, :] < N), other=float("-inf"))
        best = tl.maximum(best, x)
        seen += tl.where(r[:, None] < M, 1, 0)
        ptrs += BM * STRIDE * N
    tl.store(out_ptr + cols, tl.max(best, axis=0), mask=cols < N)
    tl.store(out_ptr + BN + cols, tl.sum(seen, axis=0), mask=cols < N)


@settings(max_examples=20, deadline=None)
@given(m=st.integers(0, 70), n=st.integers(1, 40), start=st.integers(0, 9), stride=st.integers(1, 3),
       bm=st.sampled_from((2, 8)), seed=st.integers(0, 2**16))
def test_a_nonzero_other_and_stage_0_values_the_last_stage_computes_again(m, n, start, stride, bm, seed):
    x = np.random.default_rng(seed).normal(0, 10, (max(m, 1), n)).astype(np.float32)
    out = np.zeros(2 * 64, np.float32)
    args = dict(x_ptr=x, out_ptr=out, M=m, N=n, start=start)
    fn = tile_ir(column_max, args, BM=bm, BN=64, STRIDE=stride)
    got = check_prefetched(fn, (1,), args, ["out_ptr"])["out_ptr"]
    rows = x[start:m:stride]
    want = rows.max(axis=0) if len(rows) else np.full(n, -np.inf, np.float32)
    np.testing.assert_array_equal(got[:n], want)
    blocks = math.ceil(max(m - start, 0) / (bm * stride))  # rows seen by row slot j: r = i + j * stride < M
    seen = sum(int(start + b * bm * stride + j * stride < m) for b in range(blocks) for j in range(bm))
    np.testing.assert_array_equal(got[64:64 + n], seen)


@pytest.mark.parametrize("num_stages, prefetched", ((1, False), (3, True)))
def test_the_nvidia_backend_prefetches_the_layer_norm_column_sums(num_stages, prefetched):
    """Compiled for sm_90 (no GPU needed): the loop carries the next
    iteration's two tiles, and ptxas keeps all sixteen 16-byte loads of an
    iteration in flight (more registers than the 64 the sums take)."""
    partial, out = np.zeros((256, 1024), np.float32), np.zeros(1024, np.float16)
    k = _layer_norm_bwd_dwdb.compile(partial, partial, out, out, 256, 1024, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128,
                                     num_stages=num_stages, target="sm_90")
    loop = next(line for line in k.asm["tir-gpu"].splitlines() if " = for " in line)
    assert loop.count("_next") == (2 if prefetched else 0), loop
    assert k.asm["ptx"].count("ld.global.v4.b32") == 16 * (2 if prefetched else 1)  # before the loop and in it
    if k.n_regs is not None:  # ptxas is installed
        assert (k.n_regs > 64 + 64) == prefetched, k.n_regs
