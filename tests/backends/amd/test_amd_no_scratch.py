"""The benchmark kernels (``benchmarks/``: the tutorials' matmul, attention,
softmax and layer norm under the configurations the benchmarks time on each
arch) compile for gfx90a, gfx942, gfx950, gfx1100 and gfx1201 without
scratch: the code object's ``.private_segment_fixed_size`` is 0 and no
instruction touches scratch, and every dot runs on MFMA/WMMA (a kernel that
fell back to the FMA units would spill less and prove nothing)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from backends.amd.amd_helpers import ARCHS_CHECKED, compile_amd, needs_lld, scratch_instructions
from benchmarks import attention, kernels, matmul

pytestmark = needs_lld


def matmul_cases():
    return [("matmul", str(c), c) for c in matmul.CONFIGS]


def attention_cases(arch: str):
    return [("attention", f"D{d}{' causal' if causal else ''} {c}", (d, causal, c)) for d in attention.HEAD_DIMS
            for causal in (False, True) for c in attention.configs_for(arch)
            if c.block_m % c.block_n == 0 or not causal]


def cases():
    return [pytest.param(arch, kernel, name, config, id=f"{arch}-{kernel}-{name}")
            for arch in ARCHS_CHECKED for kernel, name, config in matmul_cases() + attention_cases(arch)]


def compile_benchmark(kernel: str, config, arch: str):
    x = np.zeros(16, np.float16)
    if kernel == "matmul":
        return compile_amd(kernels.tilec_kernel("matmul"), x, x, x, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1,
                           BLOCK_SIZE_M=config.block_m, BLOCK_SIZE_N=config.block_n, BLOCK_SIZE_K=config.block_k,
                           GROUP_SIZE_M=config.group_size_m, ACTIVATION="", num_warps=config.num_warps,
                           num_stages=config.num_stages, target=arch)
    d, causal, c = config
    n = 4096
    strides = (attention.HEADS * n * d, n * d, d) * 4
    return compile_amd(attention.tutorial()._attn_fwd, x, x, x, 0.125, x, np.zeros(16, np.float32), attention.HEADS,
                       n, *strides, HEAD_DIM=d, BLOCK_M=c.block_m, BLOCK_N=c.block_n, CAUSAL=causal,
                       num_warps=c.num_warps, num_stages=c.num_stages, target=arch)


@pytest.mark.parametrize("arch, kernel, name, config", cases())
def test_dot_kernels_run_on_the_matrix_unit_without_scratch(arch, kernel, name, config):
    compiled, _, meta = compile_benchmark(kernel, config, arch)
    asm = compiled.asm["asm"]
    assert re.search(r"^\s+v_(?:mfma|wmma)_", asm, re.M), "a dot fell back to the FMA units"
    assert (meta[".private_segment_fixed_size"], scratch_instructions(asm)) == (0, [])


@pytest.mark.parametrize("arch", ARCHS_CHECKED)
@pytest.mark.parametrize("n_cols", [1000, 16384])
def test_softmax_and_layer_norm_without_scratch(arch, n_cols):
    f32, f16 = np.zeros(16, np.float32), np.zeros(16, np.float16)
    block, warps = kernels.softmax_config(n_cols)
    soft = compile_amd(kernels.tilec_kernel("softmax"), f32, f32, n_cols, n_cols, n_cols, BLOCK_SIZE=block,
                       num_warps=warps, target=arch)
    block, warps = kernels.layer_norm_config(n_cols, 2)
    norm = compile_amd(kernels.tilec_kernel("layer_norm"), f16, f16, f16, f16, f32, f32, n_cols, n_cols, 1e-5,
                       BLOCK_SIZE=block, num_warps=warps, target=arch)
    for compiled, _, meta in (soft, norm):
        assert (meta[".private_segment_fixed_size"], scratch_instructions(compiled.asm["asm"])) == (0, [])
