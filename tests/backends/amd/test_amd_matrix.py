"""Dots on AMD's matrix units (``tilec/backends/amd/matrix.py``).

No AMD GPU runs here, so the layouts are checked two ways: the index math of
the codegen (which row of ``a`` and column of ``b`` each lane feeds an
instruction, which accumulator register each result lands in) is run on
integers for every lane of every wave and fed to a model of the instruction
written from AMD's ISA documents -- the product must come out where the
accumulator's blocked layout says each register is; and the kernels compile
to code objects whose assembly holds the instructions, without spills."""
from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from backends.amd.amd_helpers import compile_amd, compile_tile_ir, needs_lld, scratch_instructions
from kernels.attention import _attn_fwd
from kernels.matmul import matmul_kernel
from tilec.backends.amd import matrix
from tilec.backends.amd.matrix import MFMA, TILE, WMMA, DotPlan
from tilec.ir.layouts import register_offsets, thread_bits


class IntBuilder:
    """Stands in for llvmlite's IRBuilder: the codegen's index arithmetic on Python ints."""

    @staticmethod
    def _v(x):
        return x if isinstance(x, int) else x.constant

    def add(self, x, y): return self._v(x) + self._v(y)
    def mul(self, x, y): return self._v(x) * self._v(y)
    def and_(self, x, y): return self._v(x) & self._v(y)
    def lshr(self, x, y): return self._v(x) >> self._v(y)


def hardware(plan, a_frags, b_frags):
    """What one instruction computes, from AMD's ISA documents: ``a_frags[l]``
    and ``b_frags[l]`` are lane ``l``'s operand vectors; returns the results
    per lane.  MFMA 16x16xK (w = K/4 elements a lane): lane l holds
    A[l%16][w*(l//16)+j], B[w*(l//16)+j][l%16] and D[4*(l//16)+e][l%16].
    WMMA 16x16x16 (RDNA3): lane l holds A[l%16][j], B[j][l%16] (lanes 16-31
    the same) and D[2*e+l//16][l%16]."""
    kind, width = plan.kind, plan.inst.width
    a, b = np.full((TILE, plan.inst.k), np.nan), np.full((plan.inst.k, TILE), np.nan)
    for lane, (fa, fb) in enumerate(zip(a_frags, b_frags)):
        for j in range(width):
            k = width * (lane // 16) + j if kind is MFMA else j
            for m, x, i, jj in ((a, fa[j], lane % 16, k), (b, fb[j], k, lane % 16)):
                assert np.isnan(m[i, jj]) or m[i, jj] == x, "two lanes disagree on one operand element"
                m[i, jj] = x
    assert not np.isnan(a).any() and not np.isnan(b).any(), "an operand element no lane holds"
    d = a @ b
    rows = (lambda lane, e: 4 * (lane // 16) + e) if kind is MFMA else (lambda lane, e: 2 * e + lane // 16)
    return [[d[rows(lane, e), lane % 16] for e in range(kind.results)] for lane in range(len(a_frags))]


def simulate(plan: DotPlan, m: int, n: int, k: int, wave: int) -> None:
    """Every wave's instructions, from the codegen's index functions, against ``A @ B``."""
    rng = np.random.default_rng(0)
    A, B = rng.integers(-3, 4, (m, k)).astype(float), rng.integers(-3, 4, (k, n)).astype(float)
    ctx = SimpleNamespace(b=IntBuilder())
    layout, num_warps = plan.acc, plan.wm * plan.wn
    offsets = register_offsets(layout, (m, n))
    index = {off: i for i, off in enumerate(offsets)}
    bits = thread_bits(layout, (m, n), num_warps, wave)
    got = np.full((m, n), np.nan)
    v, width = IntBuilder._v, plan.inst.width
    for warp in range(num_warps):
        w0, w1 = warp // plan.wn, warp % plan.wn
        acc = [[0.0] * len(offsets) for _ in range(wave)]
        for k0 in range(0, k, plan.inst.k):
            for q in range(m // (TILE * plan.wm)):
                for c in range(n // (TILE * plan.wn)):
                    a_frags, b_frags = [], []
                    for lane in range(wave):
                        row = v(matrix._a_row(ctx, plan, lane % 16, w0, q))
                        col = v(matrix._b_col(ctx, plan, lane % 16, w1, c))
                        first = v(matrix._first_k(ctx, plan, lane >> 4, k0))
                        a_frags.append([A[row, first + j] for j in range(width)])
                        b_frags.append([B[first + j, col] for j in range(width)])
                    for lane, results in enumerate(hardware(plan, a_frags, b_frags)):
                        for e, x in enumerate(results):
                            acc[lane][index[matrix._register_offset(plan, e, q, c)]] += x
        for lane in range(wave):
            base = [sum(t.value for t in bits if t.dim == d and t.value < size
                        and ((warp if t.warp else lane) >> t.bit) & 1) for d, size in enumerate((m, n))]
            for value, (dr, dc) in zip(acc[lane], offsets):
                r, c_ = base[0] + dr, base[1] + dc
                assert np.isnan(got[r, c_]) or got[r, c_] == value, "two threads hold one element differently"
                got[r, c_] = value
    np.testing.assert_array_equal(got, A @ B)


#: (family, instruction, wave size) of every instruction the codegen emits: the model covers each depth
INSTRUCTIONS = [(kind, inst, 64 if kind is MFMA else 32) for kind in (MFMA, WMMA)
                for inst in dict.fromkeys(kind.instructions.values())]


@pytest.mark.parametrize("kind, inst, wave", INSTRUCTIONS, ids=lambda x: getattr(x, "intrinsic", None))
@pytest.mark.parametrize("m, n, wm, wn", [(16, 16, 1, 1), (64, 32, 4, 1), (32, 64, 2, 2), (128, 64, 2, 4),
                                          (32, 128, 1, 8)])
def test_every_result_lands_in_the_register_the_layout_says(kind, inst, wave, m, n, wm, wn):
    simulate(DotPlan(kind, inst, wm, wn), m, n, 2 * inst.k, wave)


def test_the_model_catches_a_wrong_register_mapping(monkeypatch):
    right = matrix._register_offset
    # results 0 and 1 swapped: a mistake of the kind the model is there to catch
    monkeypatch.setattr(matrix, "_register_offset", lambda plan, e, q, c: right(plan, {0: 1, 1: 0}.get(e, e), q, c))
    with pytest.raises(AssertionError):
        simulate(DotPlan(MFMA, MFMA.instructions["f16", 16], 1, 1), 16, 16, 16, 64)


def test_the_model_catches_a_wrong_k_split(monkeypatch):
    # every lane group starting at the same k: the K=32 instruction's upper half never fed
    monkeypatch.setattr(matrix, "_first_k", lambda ctx, plan, half, k0: k0)
    with pytest.raises(AssertionError):
        simulate(DotPlan(MFMA, MFMA.instructions["i8", 32], 1, 1), 16, 16, 32, 64)


def matmul(arch, dtype, bm, bn, bk, warps):
    x = np.zeros(1 << 20, dtype)
    return compile_amd(matmul_kernel, x, x, x, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1, BLOCK_SIZE_M=bm,
                       BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=warps,
                       num_stages=1, target=arch)


def instructions(asm: str, prefix: str) -> dict:
    found = re.findall(rf"^\s+({prefix}\w+)", asm, re.M)
    return {name: found.count(name) for name in set(found)}


@needs_lld
@pytest.mark.parametrize("arch, expected", [
    ("gfx90a", {"v_mfma_f32_16x16x16f16": 16}), ("gfx942", {"v_mfma_f32_16x16x16_f16": 16}),
    ("gfx950", {"v_mfma_f32_16x16x16_f16": 16}), ("gfx1100", {"v_wmma_f32_16x16x16_f16": 16})])
def test_an_f16_matmul_runs_on_the_matrix_unit(arch, expected):
    # a 64x64 result over 4 waves and k = 64: 4 waves' rows x 4 column tiles x 4 k steps / 4 waves each
    compiled, _, meta = matmul(arch, np.float16, 64, 64, 64, 4)
    assert instructions(compiled.asm["asm"], "v_(?:mfma|wmma)") == expected
    assert meta[".private_segment_fixed_size"] == 0 and scratch_instructions(compiled.asm["asm"]) == []
    assert "blocked<[4, 1], [4, 16]" in compiled.asm["tir-gpu"] or arch == "gfx1100"


@needs_lld
def test_bf16_and_rdna4_and_f32():
    import ml_dtypes

    bf, _, _ = matmul("gfx942", ml_dtypes.bfloat16, 64, 64, 32, 4)
    assert instructions(bf.asm["asm"], "v_mfma") == {"v_mfma_f32_16x16x16_bf16": 8}
    wmma_bf, _, _ = matmul("gfx1100", ml_dtypes.bfloat16, 64, 64, 32, 4)
    assert instructions(wmma_bf.asm["asm"], "v_wmma") == {"v_wmma_f32_16x16x16_bf16": 8}
    # the tutorial's f32 dot is Triton's default tf32: xf32 on gfx942, 4 k steps of 8 per 32
    xf32, _, _ = matmul("gfx942", np.float32, 64, 64, 32, 4)
    assert instructions(xf32.asm["asm"], "v_mfma") == {"v_mfma_f32_16x16x8_xf32": 16}
    rdna4, _, _ = matmul("gfx1201", np.float16, 64, 64, 32, 4)  # its WMMA layout is not checked yet: FMA units
    f32, _, _ = matmul("gfx90a", np.float32, 64, 64, 32, 4)  # gfx90a has no xf32
    for compiled in (rdna4, f32):
        assert instructions(compiled.asm["asm"], "v_(?:mfma|wmma)") == {}
        assert "v_fma" in compiled.asm["asm"] or "v_pk_fma" in compiled.asm["asm"]


# A 32x64 @ 64x32 dot of splatted scalars, stored: the golden input of the instruction rules.
DOT_IR = """func @dot(%x: {a}, %y: {a}, %c_ptr: ptr<{acc}> {{divisibility = 16}}) {{
  %a = splat %x {{shape = (32, 64)}} : tile<32x64x{a}>
  %b = splat %y {{shape = (64, 32)}} : tile<64x32x{a}>
  %zero = constant {{value = 0, type = tile<32x32x{acc}>}} : tile<32x32x{acc}>
  %d = dot %a, %b, %zero {{input_precision = "{precision}"}} : tile<32x32x{acc}>
  %r = arange {{start = 0, end = 32}} : tile<32xi32>
  %rows = expand_dims %r {{axis = 1}} : tile<32x1xi32>
  %cols = expand_dims %r {{axis = 0}} : tile<1x32xi32>
  %n = constant {{value = 32, type = tile<32x1xi32>}} : tile<32x1xi32>
  %row_offs = mul %rows, %n : tile<32x1xi32>
  %rb = broadcast %row_offs {{shape = (32, 32)}} : tile<32x32xi32>
  %cb = broadcast %cols {{shape = (32, 32)}} : tile<32x32xi32>
  %offs = add %rb, %cb : tile<32x32xi32>
  %base = splat %c_ptr {{shape = (32, 32)}} : tile<32x32xptr<{acc}>>
  %ptrs = addptr %base, %offs : tile<32x32xptr<{acc}>>
  store %ptrs, %d, _
}}
"""


# (arch, operand, accumulator, input_precision) -> the instruction and how many: 2x2 result
# tiles over 4 waves (one a wave) times 64 / k steps.  Each arch only gets the
# instructions it has: an intrinsic the arch lacks would abort the process in LLVM.
@needs_lld
@pytest.mark.parametrize("arch, a, acc, precision, expected", [
    ("gfx90a", "i8", "i32", "ieee", {"v_mfma_i32_16x16x16i8": 4}),
    ("gfx942", "i8", "i32", "ieee", {"v_mfma_i32_16x16x32_i8": 2}),
    ("gfx1100", "i8", "i32", "ieee", {"v_wmma_i32_16x16x16_iu8": 4}),
    ("gfx942", "f32", "f32", "tf32", {"v_mfma_f32_16x16x8_xf32": 8}),
    ("gfx942", "f32", "f32", "ieee", {}),
    ("gfx942", "f32", "f32", "tf32x3", {}),
    ("gfx90a", "f32", "f32", "tf32", {}),
    ("gfx942", "f8e4b8", "f32", "ieee", {"v_mfma_f32_16x16x32_fp8_fp8": 2}),
    ("gfx942", "f8e5b16", "f32", "ieee", {"v_mfma_f32_16x16x32_bf8_bf8": 2}),
])
def test_each_dot_rule_picks_its_instruction(arch, a, acc, precision, expected):
    compiled, meta = compile_tile_ir(DOT_IR.format(a=a, acc=acc, precision=precision), arch)
    asm = compiled.asm["asm"]
    assert instructions(asm, "v_(?:mfma|wmma)") == expected
    if not expected:
        assert "v_fma_f32" in asm or "v_pk_fma_f32" in asm or "v_fmac_f32" in asm
    assert meta[".private_segment_fixed_size"] == 0


@needs_lld
@pytest.mark.parametrize("arch, a, expected", [
    ("gfx942", "f8e4nv", {"v_mfma_f32_16x16x16_f16": 4}),  # OCP fp8: gfx942 has the fnuz forms only
    ("gfx90a", "f8e4b8", {"v_mfma_f32_16x16x16f16": 4}),  # no fp8 instruction at all
    ("gfx1100", "f8e5", {"v_wmma_f32_16x16x16_f16": 4}),
])
def test_an_fp8_dot_the_arch_cannot_multiply_runs_widened_to_f16(arch, a, expected):
    compiled, meta = compile_tile_ir(DOT_IR.format(a=a, acc="f32", precision="ieee"), arch)
    assert instructions(compiled.asm["asm"], "v_(?:mfma|wmma)") == expected
    assert "cast" in compiled.asm["tir-gpu"]


@needs_lld
@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_attention_chains_two_dots_on_the_matrix_unit(arch):
    f16, f32 = np.zeros(1 << 20, np.float16), np.zeros(1 << 20, np.float32)
    strides = (4 * 1024 * 64, 1024 * 64, 64) * 4
    compiled, _, meta = compile_amd(_attn_fwd, f16, f16, f16, 0.125, f16, f32, 4, 1024, *strides, HEAD_DIM=64,
                                    BLOCK_M=64, BLOCK_N=32, CAUSAL=False, num_warps=4, num_stages=1, target=arch)
    assert sum(instructions(compiled.asm["asm"], "v_(?:mfma|wmma)").values()) > 0
    assert meta[".private_segment_fixed_size"] == 0
