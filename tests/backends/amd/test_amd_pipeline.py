"""Stream pipelining through LDS (``tilec/backends/amd/stream_pipeline.py``):
the rewrite of a small loop as golden text, the one-slot form when the
double buffers do not fit, the loops left alone, pipelined kernels
computing exactly what they computed before on the interpreter (ragged
sizes, trip counts from 0 up), and what the benchmark matmuls compile to on
gfx942: the LDS of two slots, vector stores to it, fragment reads from it,
no scratch."""
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
from opt.test_pipeline import k_offset_matmul, operands, run

from backends.amd.amd_helpers import compile_amd, needs_lld, scratch_instructions
from benchmarks import kernels, matmul
from tilec.ir.printer import print_function
from tilec.opt.layouts import assign_layouts
from tilec.backends.amd.matrix import matrix_unit
from tilec.backends.amd.stream_pipeline import stream_pipeline
from tilec.backends.amd.target import amdgpu_target

GFX942 = amdgpu_target("gfx942")
ACC = "blocked<[4, 1], [4, 16], [1, 1], [1, 0]>"
LD = "blocked<[1, 4], [16, 4], [1, 1], [1, 0]>"

LOOP = f"""\
func @k(%a: ptr<f16>, %b: ptr<f16>, %n: i32) {{
  %zero = constant {{value = 0, type = i32}} : i32
  %one = constant {{value = 1, type = i32}} : i32
  %z = constant {{value = 0.0, type = tile<16x16xf32>}} : tile<16x16xf32, {ACC}>
  %pa0 = splat %a {{shape = (16, 16)}} : tile<16x16xptr<f16>, {LD}>
  %pb0 = splat %b {{shape = (16, 16)}} : tile<16x16xptr<f16>, {LD}>
  %inc = constant {{value = 16, type = tile<16x16xi32>}} : tile<16x16xi32, {LD}>
  %acc, %pa_end, %pb_end = for %zero, %n, %one, [%z, %pa0, %pb0] : tile<16x16xf32, {ACC}>, \
tile<16x16xptr<f16>, {LD}>, tile<16x16xptr<f16>, {LD}> {{
  ^(%k: i32, %acc_in: tile<16x16xf32, {ACC}>, %pa: tile<16x16xptr<f16>, {LD}>, %pb: tile<16x16xptr<f16>, {LD}>):
    %x = load %pa, _, _ : tile<16x16xf16, {LD}>
    %y = load %pb, _, _ : tile<16x16xf16, {LD}>
    %d = dot %x, %y, %acc_in : tile<16x16xf32, {ACC}>
    %pa_next = addptr %pa, %inc : tile<16x16xptr<f16>, {LD}>
    %pb_next = addptr %pb, %inc : tile<16x16xptr<f16>, {LD}>
    yield [%d, %pa_next, %pb_next]
  }}
}}
"""

PIPELINED = open(__file__.replace("test_amd_pipeline.py", "pipelined_loop.tir")).read()


def stream(num_stages: int = 2, target=GFX942):
    return lambda fn: stream_pipeline(fn, num_stages, target, num_warps=1)


def test_loads_go_one_iteration_ahead_into_registers_and_the_other_slot_after_the_dot():
    got = apply_pass(stream(), LOOP)
    assert got == PIPELINED, got


def test_one_stage_leaves_the_loop_alone():
    assert apply_pass(stream(1), LOOP) == apply_pass(lambda fn: fn, LOOP)


def test_without_room_for_two_slots_one_slot_is_stored_after_a_second_barrier():
    one_slot = apply_pass(stream(target=dataclasses.replace(GFX942, max_shared_bytes=1500)), LOOP)
    assert "local_alloc {shape = (1, 16, 16)" in one_slot
    body = one_slot[one_slot.index("^("):]
    assert body.count("barrier") == 2 + 1  # the iteration's, the one before the stores, the one after the loop
    assert re.search(r"dot .*\n(?:.*\n){3}    barrier\n    local_store", body), body
    too_small = dataclasses.replace(GFX942, max_shared_bytes=1000)
    assert apply_pass(stream(target=too_small), LOOP) == apply_pass(lambda fn: fn, LOOP)


def test_a_load_that_is_both_operands_keeps_the_loop():
    text = LOOP.replace("%d = dot %x, %y, %acc_in", "%d = dot %x, %x, %acc_in").replace(
        "    %y = load %pb, _, _ : tile<16x16xf16, {LD}>\n".format(LD=LD), "")
    assert apply_pass(stream(), text) == apply_pass(lambda fn: fn, text)


def test_a_load_also_stored_stays_a_load_and_the_other_operand_is_pipelined():
    text = LOOP.replace("    yield [%d,", "    store %pa, %x, _\n    yield [%d,")
    got = apply_pass(stream(), text)
    assert "%y_lds = local_alloc" in got and "x_lds" not in got
    assert re.search(r"%x = load %pa, _, _ .*\n    %d = dot %x, %y_2, %acc_in", got), got


# --------------------------------------------------------------------------- #
# Semantics on the interpreter: pipelined == not pipelined == numpy
# --------------------------------------------------------------------------- #

def tile_ir(kernel, args: dict, num_warps: int = 4, **constexprs):
    """``kernel`` specialized for ``args``, with gfx942's layouts (its dots on MFMA)."""
    compiled = kernel.compile(*args.values(), **constexprs, target="host")
    return assign_layouts(compiled.fn, num_warps=num_warps, target=GFX942, unit=matrix_unit(GFX942))


def check_pipelined(fn, grid, args: dict, out: str, want: np.ndarray, num_warps: int = 4):
    before = run(fn, grid, args, out)
    np.testing.assert_allclose(before.astype(np.float32), want, rtol=2e-2, atol=2e-2)
    piped = stream_pipeline(fn, 2, GFX942, num_warps)
    assert "local_store" in print_function(piped)
    np.testing.assert_array_equal(run(piped, grid, args, out), before)


@settings(max_examples=12, deadline=None)
@given(m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(0, 120), bm=st.sampled_from((16, 32)),
       bn=st.sampled_from((16, 32)), bk=st.sampled_from((16, 32)))
def test_tutorial_matmul_pipelined_computes_the_same(m, n, k, bm, bn, bk):
    a, b, want = operands(m, n, k, m * n + k)
    c = np.zeros((m, n), np.float16)
    args = dict(a_ptr=a, b_ptr=b, c_ptr=c, M=m, N=n, K=k, stride_am=k, stride_ak=1, stride_bk=n, stride_bn=1,
                stride_cm=n, stride_cn=1)
    fn = tile_ir(matmul_kernel, args, num_warps=1, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=2,
                 ACTIVATION="")
    check_pipelined(fn, (math.ceil(m / bm) * math.ceil(n / bn),), args, "c_ptr", want, num_warps=1)


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(0, 90), k_start=st.integers(0, 40))
def test_loads_addressed_by_the_induction_variable_and_reused_by_the_last_stage(m, n, k, k_start):
    a, b, _ = operands(m, n, k, m + n + k)
    want = a[:, k_start:].astype(np.float32) @ b[k_start:].astype(np.float32)
    counts = sum((start + np.arange(16) < k for start in range(k_start, k, 16)), np.zeros(16))
    want += counts[np.arange(n) % 16]  # COUNT_K: the last stage computes `ks` again for its own iteration
    c = np.zeros((m, n), np.float32)
    args = dict(a_ptr=a, b_ptr=b, c_ptr=c, M=m, N=n, K=k, k_start=k_start)
    fn = tile_ir(k_offset_matmul, args, num_warps=2, BM=32, BN=16, BK=16, EVEN_K=False, OTHER=0.0, COUNT_K=True)
    check_pipelined(fn, (math.ceil(m / 32), math.ceil(n / 16)), args, "c_ptr", want, num_warps=2)


# --------------------------------------------------------------------------- #
# The benchmark matmuls on gfx942
# --------------------------------------------------------------------------- #

@needs_lld
@pytest.mark.parametrize("config", matmul.CONFIGS, ids=str)
def test_benchmark_matmuls_read_mfma_fragments_from_an_lds_double_buffer(config):
    x = np.zeros(16, np.float16)
    compiled, _, meta = compile_amd(
        kernels.tilec_kernel("matmul"), x, x, x, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1,
        BLOCK_SIZE_M=config.block_m, BLOCK_SIZE_N=config.block_n, BLOCK_SIZE_K=config.block_k,
        GROUP_SIZE_M=config.group_size_m, ACTIVATION="", num_warps=config.num_warps,
        num_stages=config.num_stages, target="gfx942")
    tile_bytes = (config.block_m + config.block_n) * config.block_k * 2
    slots = 2 if 2 * tile_bytes <= 64 * 1024 else 1
    # the buffers, or more where the epilogue's conversion of the accumulator needs more
    assert slots * tile_bytes <= meta[".group_segment_fixed_size"] <= 64 * 1024
    body = compiled.asm["tir-gpu"].split("^(", 1)[1]
    order = re.findall(r"= (load|local_load|dot) |^\s+(local_store|barrier)", body, re.M)
    assert [a or b for a, b in order][:8] == ["barrier", "load", "load", "local_load", "local_load", "dot"] + (
        ["local_store"] * 2 if slots == 2 else ["barrier", "local_store"])
    asm = compiled.asm["asm"]
    assert re.search(r"^\s+ds_write_b128", asm, re.M) and re.search(r"^\s+ds_read_b64", asm, re.M)
    assert (meta[".private_segment_fixed_size"], scratch_instructions(asm)) == (0, [])


@needs_lld
def test_rdna_keeps_its_loops():
    x = np.zeros(16, np.float16)
    c = matmul.CONFIGS[0]
    compiled, _, _ = compile_amd(
        kernels.tilec_kernel("matmul"), x, x, x, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1,
        BLOCK_SIZE_M=c.block_m, BLOCK_SIZE_N=c.block_n, BLOCK_SIZE_K=c.block_k, GROUP_SIZE_M=c.group_size_m,
        ACTIVATION="", num_warps=c.num_warps, num_stages=c.num_stages, target="gfx1100")
    assert "local_store" not in compiled.asm["tir-gpu"]
