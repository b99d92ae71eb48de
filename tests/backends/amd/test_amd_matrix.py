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
from tilec.backends.amd.matrix import MFMA, MFMA32, WMMA, WMMA12, DotPlan
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


def operand_k(kind, depth: int, lane: int, j: int) -> int:
    """The ``k`` of element ``j`` of lane ``lane``'s operand fragments of an
    instruction of depth ``depth``, from AMD's ISA documents (the same for
    ``a`` and ``b``, so the model holds for any order of ``k`` inside a lane
    group the hardware may use): MFMA 16x16xK: lanes 16*g..16*g+15 hold
    k = (K/4)*g + j; MFMA 32x32xK (gfx950): lanes 32*g..32*g+31 hold
    k = (K/2)*g + j; RDNA3's WMMA: every lane holds all 16 (lanes 16-31 a
    copy); RDNA4's WMMA: lanes 16*g..16*g+15 hold k = 8*g + j."""
    if kind is MFMA:
        return depth // 4 * (lane // 16) + j
    if kind is MFMA32:
        return depth // 2 * (lane // 32) + j
    if kind is WMMA:
        return j
    assert kind is WMMA12
    return 8 * (lane // 16) + j


def result_row(kind, lane: int, e: int) -> int:
    """The row of result register ``e`` of lane ``lane`` (its column: ``lane
    % tile``), from AMD's ISA documents: MFMA 16x16: 4*(l//16) + e; MFMA
    32x32: 8*(e//4) + 4*(l//32) + e%4 (e < 16); RDNA3's WMMA: 2*e + l//16;
    RDNA4's WMMA: 8*(l//16) + e (e < 8)."""
    if kind is MFMA:
        return 4 * (lane // 16) + e
    if kind is MFMA32:
        return 8 * (e // 4) + 4 * (lane // 32) + e % 4
    if kind is WMMA:
        return 2 * e + lane // 16
    assert kind is WMMA12
    return 8 * (lane // 16) + e


def hardware(plan, a_frags, b_frags):
    """What one instruction computes, from AMD's ISA documents: ``a_frags[l]``
    and ``b_frags[l]`` are lane ``l``'s operand vectors; returns the results
    per lane.  Lane l holds A[l % tile][k] and B[k][l % tile] at the ``k``
    of ``operand_k``, and result ``e`` at D[result_row(l, e)][l % tile]."""
    kind, width, tile = plan.kind, plan.inst.width, plan.kind.tile
    a, b = np.full((tile, plan.inst.k), np.nan), np.full((plan.inst.k, tile), np.nan)
    for lane, (fa, fb) in enumerate(zip(a_frags, b_frags)):
        for j in range(width):
            k = operand_k(kind, plan.inst.k, lane, j)
            for m, x, i, jj in ((a, fa[j], lane % tile, k), (b, fb[j], k, lane % tile)):
                assert np.isnan(m[i, jj]) or m[i, jj] == x, "two lanes disagree on one operand element"
                m[i, jj] = x
    assert not np.isnan(a).any() and not np.isnan(b).any(), "an operand element no lane holds"
    d = a @ b
    return [[d[result_row(kind, lane, e), lane % tile] for e in range(kind.results)] for lane in range(len(a_frags))]


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
    v, width, tile = IntBuilder._v, plan.inst.width, plan.kind.tile
    for warp in range(num_warps):
        w0, w1 = warp // plan.wn, warp % plan.wn
        acc = [[0.0] * len(offsets) for _ in range(wave)]
        for k0 in range(0, k, plan.inst.k):
            for q in range(m // (tile * plan.wm)):
                for c in range(n // (tile * plan.wn)):
                    a_frags, b_frags = [], []
                    for lane in range(wave):
                        row = v(matrix._a_row(ctx, plan, lane % tile, w0, q))
                        col = v(matrix._b_col(ctx, plan, lane % tile, w1, c))
                        first = v(matrix._first_k(ctx, plan, lane // tile, k0))
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
INSTRUCTIONS = [(kind, inst, 64 if kind in (MFMA, MFMA32) else 32) for kind in (MFMA, MFMA32, WMMA, WMMA12)
                for inst in dict.fromkeys(kind.instructions.values())]


@pytest.mark.parametrize("kind, inst, wave", INSTRUCTIONS, ids=lambda x: getattr(x, "intrinsic", None))
@pytest.mark.parametrize("m, n, wm, wn", [(16, 16, 1, 1), (64, 32, 4, 1), (32, 64, 2, 2), (128, 64, 2, 4),
                                          (32, 128, 1, 8)])
def test_every_result_lands_in_the_register_the_layout_says(kind, inst, wave, m, n, wm, wn):
    scale = kind.tile // 16  # the grids in tiles: 32x32 instructions cover twice the rows and columns
    simulate(DotPlan(kind, inst, wm, wn), m * scale, n * scale, 2 * inst.k, wave)


def test_the_model_catches_rdna3s_layouts_on_rdna4(monkeypatch):
    plan = DotPlan(WMMA12, WMMA12.instructions["f16", 16], 2, 2)
    simulate(plan, 32, 32, 32, 32)
    # RDNA3's operands (every lane all 16 k from k0): lanes 16-31 never feed k 8-15
    with monkeypatch.context() as patched:
        patched.setattr(matrix, "_first_k", lambda ctx, plan, group, k0: k0)
        with pytest.raises(AssertionError):
            simulate(plan, 32, 32, 32, 32)
    # RDNA3's result rows (2*e + l//16) for RDNA4's (8*(l//16) + e)
    right = matrix._register_offset
    monkeypatch.setattr(matrix, "_register_offset",
                        lambda plan, e, q, c: (2 * plan.wm * (e + 8 * q), right(plan, e, q, c)[1]))
    with pytest.raises((AssertionError, KeyError)):  # KeyError: a register the layout does not have
        simulate(plan, 32, 32, 32, 32)


def test_the_model_catches_a_32x32_result_read_as_16x16(monkeypatch):
    plan = DotPlan(MFMA32, MFMA32.instructions["f16", 16], 2, 2)
    simulate(plan, 64, 64, 32, 64)
    # result e at row e of its pass (as 16x16's 4*(l//16) + e would have it), not 8*(e//4) + e%4
    monkeypatch.setattr(matrix, "_register_offset", lambda plan, e, q, c: (e + 32 * plan.wm * q, 32 * plan.wn * c))
    with pytest.raises((AssertionError, KeyError)):  # KeyError: a register the layout does not have
        simulate(plan, 64, 64, 32, 64)


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


def matmul(arch, dtype, bm, bn, bk, warps, **options):
    x = np.zeros(1 << 20, dtype)
    return compile_amd(matmul_kernel, x, x, x, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1, BLOCK_SIZE_M=bm,
                       BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="", num_warps=warps,
                       num_stages=1, target=arch, **options)


def instructions(asm: str, prefix: str) -> dict:
    found = re.findall(rf"^\s+({prefix}\w+)", asm, re.M)
    return {name: found.count(name) for name in set(found)}


MFMA32_ACC, MFMA16_ACC = "blocked<[4, 1], [2, 32], [2, 2]", "blocked<[4, 1], [4, 16], [4, 1]"


# (arch, matrix_instr_nonkdim, instructions, the accumulator's layout): a 64x64 result over 4 waves
# and k = 64.  The compiler's pick (0) and 32: a 2x2 grid of waves, one 32x32 tile each, 64 / k
# steps; 16: the 4 waves' rows x 4 column tiles x (64 / k) k steps.  RDNA has 16x16 forms only.
@needs_lld
@pytest.mark.parametrize("arch, nonkdim, expected, acc", [
    ("gfx90a", 0, {"v_mfma_f32_32x32x8f16": 8}, MFMA32_ACC),
    ("gfx90a", 16, {"v_mfma_f32_16x16x16f16": 16}, MFMA16_ACC),
    ("gfx942", 0, {"v_mfma_f32_32x32x8_f16": 8}, MFMA32_ACC),
    ("gfx942", 32, {"v_mfma_f32_32x32x8_f16": 8}, MFMA32_ACC),
    ("gfx942", 16, {"v_mfma_f32_16x16x16_f16": 16}, MFMA16_ACC),
    ("gfx950", 0, {"v_mfma_f32_32x32x16_f16": 4}, MFMA32_ACC),
    ("gfx950", 16, {"v_mfma_f32_16x16x32_f16": 8}, MFMA16_ACC),
    ("gfx1100", 32, {"v_wmma_f32_16x16x16_f16": 16}, "blocked<[1, 1], [2, 16], [4, 1]"),
    ("gfx1201", 0, {"v_wmma_f32_16x16x16_f16": 16}, "blocked<[8, 1], [2, 16], [4, 1]")])
def test_an_f16_matmul_runs_on_the_matrix_unit(arch, nonkdim, expected, acc):
    compiled, _, meta = matmul(arch, np.float16, 64, 64, 64, 4, matrix_instr_nonkdim=nonkdim)
    assert instructions(compiled.asm["asm"], "v_(?:mfma|wmma)") == expected
    assert meta[".private_segment_fixed_size"] == 0 and scratch_instructions(compiled.asm["asm"]) == []
    assert acc in compiled.asm["tir-gpu"]


@needs_lld
def test_nonkdim_32_falls_back_to_16x16_where_no_32x32_tile_fits_a_wave():
    # 32x64 over 4 waves: 32x32 tiles would give a wave none (a 1x4 grid over 2 columns of tiles),
    # 16x16 gives each 16 rows x 32 columns: 2 tiles x 2 k steps
    compiled, _, _ = matmul("gfx942", np.float16, 32, 64, 32, 4, matrix_instr_nonkdim=32)
    assert instructions(compiled.asm["asm"], "v_mfma") == {"v_mfma_f32_16x16x16_f16": 4}
    # 64x64 with 16: the 32x32 form would fit, the option keeps it off
    sixteen, _, _ = matmul("gfx942", np.float16, 64, 64, 32, 4, matrix_instr_nonkdim=16)
    assert instructions(sixteen.asm["asm"], "v_mfma") == {"v_mfma_f32_16x16x16_f16": 8}


@needs_lld
def test_bf16_and_f32():
    import ml_dtypes

    bf, _, _ = matmul("gfx942", ml_dtypes.bfloat16, 64, 64, 32, 4)
    assert instructions(bf.asm["asm"], "v_mfma") == {"v_mfma_f32_32x32x8_bf16": 4}
    bf16x16, _, _ = matmul("gfx942", ml_dtypes.bfloat16, 64, 64, 32, 4, matrix_instr_nonkdim=16)
    assert instructions(bf16x16.asm["asm"], "v_mfma") == {"v_mfma_f32_16x16x16_bf16": 8}
    wmma_bf, _, _ = matmul("gfx1100", ml_dtypes.bfloat16, 64, 64, 32, 4)
    assert instructions(wmma_bf.asm["asm"], "v_wmma") == {"v_wmma_f32_16x16x16_bf16": 8}
    rdna4_bf, _, _ = matmul("gfx1201", ml_dtypes.bfloat16, 64, 64, 32, 4)
    assert instructions(rdna4_bf.asm["asm"], "v_wmma") == {"v_wmma_f32_16x16x16_bf16": 8}
    cdna4_bf, _, _ = matmul("gfx950", ml_dtypes.bfloat16, 64, 64, 32, 4)
    assert instructions(cdna4_bf.asm["asm"], "v_mfma") == {"v_mfma_f32_32x32x16_bf16": 2}
    # the tutorial's f32 dot is Triton's default tf32: xf32 on gfx942, 8 k steps of 4 per 32
    xf32, _, _ = matmul("gfx942", np.float32, 64, 64, 32, 4)
    assert instructions(xf32.asm["asm"], "v_mfma") == {"v_mfma_f32_32x32x4_xf32": 8}
    for arch in ("gfx90a", "gfx950"):  # no xf32 (gfx950 dropped it)
        f32, _, _ = matmul(arch, np.float32, 64, 64, 32, 4)
        assert instructions(f32.asm["asm"], "v_(?:mfma|wmma)") == {}
        assert "v_fma" in f32.asm["asm"] or "v_pk_fma" in f32.asm["asm"]


@needs_lld
def test_gfx950_takes_the_16x16x32_form_where_32x32_does_not_fit():
    # 16 rows: no 32x32 tile; k = 32 steps of the 8-wide 16x16x32 form, one 16x16 tile a wave
    compiled, _, _ = matmul("gfx950", np.float16, 16, 64, 32, 4)
    assert instructions(compiled.asm["asm"], "v_mfma") == {"v_mfma_f32_16x16x32_f16": 1}
    assert "<8 x half>" in compiled.asm["llir"]


#: The intrinsics each arch's dots may call, by operand type: nothing else
#: (an intrinsic the arch lacks aborts the process inside LLVM).
ARCH_INTRINSICS = {
    "gfx90a": {"f16": ["f32.32x32x8f16", "f32.16x16x16f16"], "bf16": ["f32.32x32x8bf16.1k", "f32.16x16x16bf16.1k"],
               "i8": ["i32.32x32x8i8", "i32.16x16x16i8"]},
    "gfx942": {"f16": ["f32.32x32x8f16", "f32.16x16x16f16"], "bf16": ["f32.32x32x8bf16.1k", "f32.16x16x16bf16.1k"],
               "i8": ["i32.32x32x16.i8", "i32.16x16x32.i8"], "f32": ["f32.32x32x4.xf32", "f32.16x16x8.xf32"],
               "f8e4b8": ["f32.32x32x16.fp8.fp8", "f32.16x16x32.fp8.fp8"],
               "f8e5b16": ["f32.32x32x16.bf8.bf8", "f32.16x16x32.bf8.bf8"]},
    "gfx950": {"f16": ["f32.32x32x16.f16", "f32.32x32x8f16", "f32.16x16x32.f16", "f32.16x16x16f16"],
               "bf16": ["f32.32x32x16.bf16", "f32.32x32x8bf16.1k", "f32.16x16x32.bf16", "f32.16x16x16bf16.1k"],
               "i8": ["i32.32x32x32.i8", "i32.32x32x16.i8", "i32.16x16x64.i8", "i32.16x16x32.i8"],
               "f8e4nv": ["f32.32x32x16.fp8.fp8", "f32.16x16x32.fp8.fp8"],
               "f8e5": ["f32.32x32x16.bf8.bf8", "f32.16x16x32.bf8.bf8"]},
    "gfx1100": {"f16": ["f32.16x16x16.f16.v8f32.v16f16"], "bf16": ["f32.16x16x16.bf16.v8f32.v16i16"],
                "i8": ["i32.16x16x16.iu8.v8i32.v4i32"]},
    "gfx1201": {"f16": ["f32.16x16x16.f16.v8f32.v8f16"], "bf16": ["f32.16x16x16.bf16.v8f32.v8i16"],
                "i8": ["i32.16x16x16.iu8.v8i32.v2i32"], "f8e4nv": ["f32.16x16x16.fp8.fp8.v8f32.v2i32"],
                "f8e5": ["f32.16x16x16.bf8.bf8.v8f32.v2i32"]},
}


@pytest.mark.parametrize("arch", list(ARCH_INTRINSICS))
def test_each_arch_calls_only_its_own_intrinsics(arch):
    from tilec.backends.amd.target import amdgpu_target

    target, got = amdgpu_target(arch), {}
    for fact in target.matrix_instructions:
        dot = SimpleNamespace(a=SimpleNamespace(type=_tile(fact.operand)), acc=SimpleNamespace(type=_tile(
            fact.accumulator)), input_precision="tf32")
        got[fact.operand] = [inst.intrinsic.split(".", 3)[3] for _, inst in matrix.candidates(dot, target)]
    assert got == ARCH_INTRINSICS[arch]


def _tile(name: str):
    from tilec.ir.types import SCALAR_TYPES, with_shape

    return with_shape(SCALAR_TYPES[name], (32, 32))


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
    # gfx950: a 32x32 result on 4 waves leaves no 32x32 tile a wave, so the 16x16 forms
    ("gfx950", "f16", "f32", "ieee", {"v_mfma_f32_16x16x32_f16": 2}),
    ("gfx950", "bf16", "f32", "ieee", {"v_mfma_f32_16x16x32_bf16": 2}),
    ("gfx950", "i8", "i32", "ieee", {"v_mfma_i32_16x16x64_i8": 1}),
    ("gfx950", "f8e4nv", "f32", "ieee", {"v_mfma_f32_16x16x32_fp8_fp8": 2}),  # OCP e4m3 on CDNA4
    ("gfx950", "f8e5", "f32", "ieee", {"v_mfma_f32_16x16x32_bf8_bf8": 2}),
    ("gfx950", "f32", "f32", "tf32", {}),  # no xf32 on gfx950
    ("gfx1201", "f16", "f32", "ieee", {"v_wmma_f32_16x16x16_f16": 4}),
    ("gfx1201", "bf16", "f32", "ieee", {"v_wmma_f32_16x16x16_bf16": 4}),
    ("gfx1201", "i8", "i32", "ieee", {"v_wmma_i32_16x16x16_iu8": 4}),
    ("gfx1201", "f8e4nv", "f32", "ieee", {"v_wmma_f32_16x16x16_fp8_fp8": 4}),
    ("gfx1201", "f8e5", "f32", "ieee", {"v_wmma_f32_16x16x16_bf8_bf8": 4}),
])
def test_each_dot_rule_picks_its_instruction(arch, a, acc, precision, expected):
    check_dot_rule(arch, a, acc, precision, expected, 4)


# The 32x32 rules: the same 32x32 result on one wave, one tile, 64 / k steps.
@needs_lld
@pytest.mark.parametrize("arch, a, acc, precision, expected", [
    ("gfx90a", "f16", "f32", "ieee", {"v_mfma_f32_32x32x8f16": 8}),
    ("gfx90a", "bf16", "f32", "ieee", {"v_mfma_f32_32x32x8bf16_1k": 8}),
    ("gfx90a", "i8", "i32", "ieee", {"v_mfma_i32_32x32x8i8": 8}),
    ("gfx942", "bf16", "f32", "ieee", {"v_mfma_f32_32x32x8_bf16": 8}),
    ("gfx942", "i8", "i32", "ieee", {"v_mfma_i32_32x32x16_i8": 4}),
    ("gfx942", "f32", "f32", "tf32", {"v_mfma_f32_32x32x4_xf32": 16}),
    ("gfx942", "f8e4b8", "f32", "ieee", {"v_mfma_f32_32x32x16_fp8_fp8": 4}),
    ("gfx942", "f8e5b16", "f32", "ieee", {"v_mfma_f32_32x32x16_bf8_bf8": 4}),
    ("gfx950", "bf16", "f32", "ieee", {"v_mfma_f32_32x32x16_bf16": 4}),
    ("gfx950", "i8", "i32", "ieee", {"v_mfma_i32_32x32x32_i8": 2}),
    ("gfx950", "f8e4nv", "f32", "ieee", {"v_mfma_f32_32x32x16_fp8_fp8": 4}),
    ("gfx950", "f8e5", "f32", "ieee", {"v_mfma_f32_32x32x16_bf8_bf8": 4}),
])
def test_each_32x32_dot_rule_picks_its_instruction(arch, a, acc, precision, expected):
    check_dot_rule(arch, a, acc, precision, expected, 1)


def check_dot_rule(arch, a, acc, precision, expected, warps):
    compiled, meta = compile_tile_ir(DOT_IR.format(a=a, acc=acc, precision=precision), arch, warps)
    asm = compiled.asm["asm"]
    assert instructions(asm, "v_(?:mfma|wmma)") == expected
    if not expected:
        assert "v_fma_f32" in asm or "v_pk_fma_f32" in asm or "v_fmac_f32" in asm
    elif a.startswith("f8"):  # the fp8 operands reach the instruction as they are, not widened
        assert " = cast " not in compiled.asm["tir-gpu"]
    assert meta[".private_segment_fixed_size"] == 0


@needs_lld
@pytest.mark.parametrize("arch, a, expected", [
    ("gfx942", "f8e4nv", {"v_mfma_f32_16x16x16_f16": 4}),  # OCP fp8: gfx942 has the fnuz forms only
    ("gfx90a", "f8e4b8", {"v_mfma_f32_16x16x16f16": 4}),  # no fp8 instruction at all
    ("gfx1100", "f8e5", {"v_wmma_f32_16x16x16_f16": 4}),
    ("gfx950", "f8e4b8", {"v_mfma_f32_16x16x32_f16": 2}),  # fnuz: gfx950's fp8 is OCP
    ("gfx1201", "f8e5b16", {"v_wmma_f32_16x16x16_f16": 4}),
])
def test_an_fp8_dot_the_arch_cannot_multiply_runs_widened_to_f16(arch, a, expected):
    compiled, meta = compile_tile_ir(DOT_IR.format(a=a, acc="f32", precision="ieee"), arch)
    assert instructions(compiled.asm["asm"], "v_(?:mfma|wmma)") == expected
    assert " = cast " in compiled.asm["tir-gpu"]


@needs_lld
@pytest.mark.parametrize("arch", ["gfx942", "gfx950", "gfx1100", "gfx1201"])
def test_attention_chains_two_dots_on_the_matrix_unit(arch):
    f16, f32 = np.zeros(1 << 20, np.float16), np.zeros(1 << 20, np.float32)
    strides = (4 * 1024 * 64, 1024 * 64, 64) * 4
    compiled, _, meta = compile_amd(_attn_fwd, f16, f16, f16, 0.125, f16, f32, 4, 1024, *strides, HEAD_DIM=64,
                                    BLOCK_M=64, BLOCK_N=32, CAUSAL=False, num_warps=4, num_stages=1, target=arch)
    assert sum(instructions(compiled.asm["asm"], "v_(?:mfma|wmma)").values()) > 0
    assert meta[".private_segment_fixed_size"] == 0
