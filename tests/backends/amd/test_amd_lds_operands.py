"""Loop-invariant dot operands written to LDS once (``tilec/backends/amd/lds_operands.py``):
the rewrite as golden text, the values left alone, the fused attention computing
bit for bit what it computed before on the interpreter, and what it does to the
attention's registers on gfx1100."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from opt.golden import apply_pass
from opt.test_pipeline import run

from backends.amd.amd_helpers import compile_amd, needs_lld
from kernels.attention import _attn_fwd
from tilec.ir.printer import print_function
from tilec.opt.layouts import assign_layouts
from tilec.backends.amd.lds_operands import invariant_operands_in_lds
from tilec.backends.amd.matrix import matrix_unit
from tilec.backends.amd.target import amdgpu_target

GFX1100 = amdgpu_target("gfx1100")
ACC = "blocked<[1, 1], [2, 16], [1, 1], [1, 0]>"
LD = "blocked<[1, 8], [16, 2], [1, 1], [1, 0]>"

# %x is made before the loop and is every iteration's `a`: the rewrite's subject
LOOP = f"""\
func @k(%a: ptr<f16>, %b: ptr<f16>, %n: i32) {{
  %zero = constant {{value = 0, type = i32}} : i32
  %one = constant {{value = 1, type = i32}} : i32
  %z = constant {{value = 0.0, type = tile<16x16xf32>}} : tile<16x16xf32, {ACC}>
  %pa = splat %a {{shape = (16, 16)}} : tile<16x16xptr<f16>, {LD}>
  %pb0 = splat %b {{shape = (16, 16)}} : tile<16x16xptr<f16>, {LD}>
  %inc = constant {{value = 16, type = tile<16x16xi32>}} : tile<16x16xi32, {LD}>
  %x = load %pa, _, _ : tile<16x16xf16, {LD}>
  %acc, %pb_end = for %zero, %n, %one, [%z, %pb0] : tile<16x16xf32, {ACC}>, tile<16x16xptr<f16>, {LD}> {{
  ^(%k: i32, %acc_in: tile<16x16xf32, {ACC}>, %pb: tile<16x16xptr<f16>, {LD}>):
    %y = load %pb, _, _ : tile<16x16xf16, {LD}>
    %d = dot %x, %y, %acc_in : tile<16x16xf32, {ACC}>
    %pb_next = addptr %pb, %inc : tile<16x16xptr<f16>, {LD}>
    yield [%d, %pb_next]
  }}
}}
"""

REWRITTEN = f"""\
func @k(%a: ptr<f16>, %b: ptr<f16>, %n: i32) {{
  %zero = constant {{value = 0, type = i32}} : i32
  %one = constant {{value = 1, type = i32}} : i32
  %z = constant {{value = 0.0, type = tile<16x16xf32>}} : tile<16x16xf32, {ACC}>
  %pa = splat %a {{shape = (16, 16)}} : tile<16x16xptr<f16>, {LD}>
  %pb0 = splat %b {{shape = (16, 16)}} : tile<16x16xptr<f16>, {LD}>
  %inc = constant {{value = 16, type = tile<16x16xi32>}} : tile<16x16xi32, {LD}>
  %x = load %pa, _, _ : tile<16x16xf16, {LD}>
  %0 = constant {{value = 0, type = i32}} : i32
  %x_lds = local_alloc {{shape = (1, 16, 16), elem = f16, layout = shared<16, 1, 1, [2, 1, 0]>}} : \
tile<1x16x16xf16, shared<16, 1, 1, [2, 1, 0]>>
  barrier
  local_store %x_lds, %0, %x
  barrier
  %acc, %pb_end = for %zero, %n, %one, [%z, %pb0] : tile<16x16xf32, {ACC}>, tile<16x16xptr<f16>, {LD}> {{
  ^(%k: i32, %acc_in: tile<16x16xf32, {ACC}>, %pb: tile<16x16xptr<f16>, {LD}>):
    %y = load %pb, _, _ : tile<16x16xf16, {LD}>
    %x_1 = local_load %x_lds, %0 : tile<16x16xf16, {LD}>
    %d = dot %x_1, %y, %acc_in : tile<16x16xf32, {ACC}>
    %pb_next = addptr %pb, %inc : tile<16x16xptr<f16>, {LD}>
    yield [%d, %pb_next]
  }}
}}
"""


def lds(target=GFX1100):
    return lambda fn: invariant_operands_in_lds(fn, target, num_warps=1)


def unchanged(text: str) -> str:
    return apply_pass(lambda fn: fn, text)


def test_an_operand_made_before_the_loop_is_stored_once_and_read_in_place():
    got = apply_pass(lds(), LOOP)
    assert got == unchanged(REWRITTEN), got


def test_values_that_do_not_qualify_are_left_alone():
    used_after = LOOP.replace("  }\n}\n", "  }\n  store %pa, %x, _\n}\n")
    both_sides = LOOP.replace("%d = dot %x, %y, %acc_in", "%d = dot %x, %x, %acc_in")
    in_the_loop = LOOP.replace("%d = dot %x, %y, %acc_in", "%d = dot %y, %y, %acc_in")
    for text in (used_after, both_sides, in_the_loop):
        assert text != LOOP and apply_pass(lds(), text) == unchanged(text)
    too_small = dataclasses.replace(GFX1100, max_shared_bytes=512 + 511)  # the buffer and y's staging: 1024
    assert apply_pass(lds(too_small), LOOP) == unchanged(LOOP)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_computes_the_same_with_q_in_lds(causal):
    rng = np.random.default_rng(int(causal))
    n_ctx, d, bm, bn, warps = 40, 16, 32, 16, 2  # ragged: the last block of rows and keys masked
    q, k, v = (rng.uniform(-1, 1, (1, 1, n_ctx, d)).astype(np.float16) for _ in range(3))
    out, lse = np.zeros_like(q), np.zeros((1, n_ctx), np.float32)
    strides = tuple(s // 2 for s in q.strides[:3]) * 4
    values = (q, k, v, 0.25, out, lse, 1, n_ctx, *strides)
    compiled = _attn_fwd.compile(*values, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, target="host")
    fn = assign_layouts(compiled.fn, num_warps=warps, target=GFX1100, unit=matrix_unit(GFX1100))
    names = ["Q", "K", "V", "sm_scale", "Out", "M", "H", "N_CTX"] + [f"stride_{t}{d}" for t, last in zip(
        "qkvo", "mnnm") for d in ("z", "h", last)]
    args = {name: value for name, value in zip(names, values) if name in fn.arg_names}  # H = 1: specialized away
    grid = (math.ceil(n_ctx / bm), 1)
    before = run(fn, grid, args, "Out")
    moved = invariant_operands_in_lds(fn, GFX1100, warps)
    text = print_function(moved)
    # one buffer, read by each dot of q (the kernel's loops: the unmasked key blocks, then the masked ones)
    reads = print_function(fn).count("= dot %q,")
    assert text.count("q_lds = local_alloc") == 1 and text.count("local_load %q_lds") == reads >= 2, text
    np.testing.assert_array_equal(run(moved, grid, args, "Out"), before)
    scores = (q[0, 0].astype(np.float32) @ k[0, 0].astype(np.float32).T) * 0.25
    if causal:
        scores = np.where(np.tril(np.ones((n_ctx, n_ctx), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(1, keepdims=True))
    want = (p / p.sum(1, keepdims=True)) @ v[0, 0].astype(np.float32)
    np.testing.assert_allclose(before[0, 0].astype(np.float32), want, rtol=2e-2, atol=2e-2)


@needs_lld
def test_attentions_q_leaves_the_registers_on_gfx1100():
    f16, f32 = np.zeros(1 << 20, np.float16), np.zeros(1 << 20, np.float32)
    strides = (4 * 1024 * 64, 1024 * 64, 64) * 4
    compiled, _, meta = compile_amd(_attn_fwd, f16, f16, f16, 0.125, f16, f32, 4, 1024, *strides, HEAD_DIM=64,
                                    BLOCK_M=64, BLOCK_N=64, CAUSAL=True, num_warps=4, num_stages=3, target="gfx1100")
    gpu = compiled.asm["tir-gpu"]
    assert gpu.count("local_load %q_lds") == 2  # both loops of the causal kernel read the one buffer
    # q (64x64 f16) in LDS beside the 64x64 p and v the second dot stages
    assert meta[".group_segment_fixed_size"] >= 64 * 64 * 2 * 3
    assert meta[".private_segment_fixed_size"] == 0
