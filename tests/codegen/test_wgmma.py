"""``dot`` on Hopper's warpgroup instructions (``backends/nvidia/wgmma.py``),
checked without a GPU.

* The descriptors read what the layouts store: for every element an
  instruction reads, the address the hardware forms from the descriptor
  (start address, leading and stride byte offsets, then the swizzle XOR on
  address bits) is where ``swizzled_offset`` -- the codegen's own LLVM IR,
  compiled for this host -- put it.
* The tutorial matmul compiled for ``sm_90a`` is ``wgmma`` from shared
  memory with the transpose bits its operands' storage asks for, its K
  loop leaving one group of instructions running, and
  ``ptxas`` assembles it without spills; for plain ``sm_90`` it stays on
  ``mma.sync``.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from codegen.test_mma_addresses import offset_function
from kernels.descriptor_matmul import compile_descriptor_matmul
from kernels.matmul import matmul_kernel

import tilec
import tilec.language as tl
from tilec.backends.nvidia import ptxas
from tilec.backends.nvidia.wgmma import GROUP_M, descriptor_for, group_k
from tilec.ir.layouts_nvidia import swizzled_layout
from tilec.ir.types import bf16, f16, i8


def hardware_offset(desc, start: int, outer: int, k: int) -> int:
    """The byte address the tensor cores read element ``(outer, k)`` of an
    instruction's operand from (PTX ISA, "matrix descriptor" and the
    canonical layouts): 8-row core matrices ``stride`` bytes apart, atoms
    ``leading`` bytes apart along M/N when MN-major, then the swizzle XORs
    address bits 4.. with bits 7.. (``log2(atom bytes / 16)`` of each)."""
    bits = desc.bits()
    leading, stride = ((bits >> 16) & 0x3FFF) << 4, ((bits >> 32) & 0x3FFF) << 4
    size = desc.elem_bytes
    if desc.transposed:  # rows of an atom run along k, the atom's row along m/n
        address = (outer // desc.atom) * leading + (outer % desc.atom) * size + (k // 8) * stride \
            + (k % 8) * desc.atom_bytes
    else:
        address = (outer // 8) * stride + (outer % 8) * desc.atom_bytes + k * size
    address += start
    width = (desc.atom_bytes // 16).bit_length() - 1
    return address ^ (((address >> 7) & ((1 << width) - 1)) << 4)


CASES = [(elem, is_a, outer, k, along_k) for elem in (f16, bf16, i8) for is_a in (True, False)
         for outer in (64, 128, 256) for k in (16, 32, 64, 128) for along_k in (True, False)
         if k % group_k(elem) == 0]


@pytest.mark.parametrize("elem,is_a,outer,k,along_k", CASES,
                         ids=[f"{e}-{'a' if a else 'b'}-{o}-{k}-{'k' if ak else 'mn'}" for e, a, o, k, ak in CASES])
def test_descriptors_read_what_the_layouts_store(elem, is_a, outer, k, along_k):
    """A pipelined operand as the pipeliner lays it out, and the footprints
    of its first and last instructions (``a``: 64 rows, ``b``: every column)."""
    shape = (outer, k) if is_a else (k, outer)
    k_dim = 1 if is_a else 0
    fast = k_dim if along_k else 1 - k_dim
    layout = swizzled_layout(shape, (fast, 1 - fast), elem.bytes)
    desc = descriptor_for(layout, shape, elem, is_a)
    if desc is None:  # rows under 32 bytes: no swizzle mode describes them; 8-bit ones must run along k
        assert shape[fast] * elem.bytes < 32 or (elem.bits == 8 and not along_k)
        return
    kk_step = group_k(elem)
    stored = offset_function(layout, shape, elem.bytes)
    n = GROUP_M if is_a else outer
    for outer0, k0 in ((0, 0), (outer - n, k - kk_step)):
        start = desc.offset(outer0, k0)
        for o in range(n):
            for kk in range(kk_step):
                row_col = (outer0 + o, k0 + kk) if is_a else (k0 + kk, outer0 + o)
                assert hardware_offset(desc, start, o, kk) == stored(*row_col), (o, kk)


def _matmul_ptx(target: str, a_strides=(4096, 1), b_strides=(4096, 1), block=(128, 128, 64), warps=4) -> str:
    x = np.empty((4096, 4096), np.float16)
    compiled = matmul_kernel.compile(
        x, x, x, 4096, 4096, 4096, *a_strides, *b_strides, 4096, 1, BLOCK_SIZE_M=block[0], BLOCK_SIZE_N=block[1],
        BLOCK_SIZE_K=block[2], GROUP_SIZE_M=8, ACTIVATION="", num_warps=warps, num_stages=3, target=target)
    return compiled.asm["ptx"]


@pytest.mark.parametrize("a_strides,b_strides,bits", [
    ((4096, 1), (4096, 1), "1, 1, 0, 1"),  # a along k (K-major), b along n (MN-major: transposed)
    ((1, 4096), (1, 4096), "1, 1, 1, 0"),
], ids=["a_rows-b_rows", "a_cols-b_cols"])
def test_tutorial_matmul_runs_on_wgmma_for_sm_90a(a_strides, b_strides, bits):
    ptx = _matmul_ptx("sm_90a", a_strides, b_strides)
    instructions = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.f16\.f16 .*", ptx)
    # 128 rows over one warpgroup of 4 warps: two 64-row blocks, one instruction
    # for all 128 columns each, per 16 of k=64
    assert len(instructions) == 2 * 4
    assert all(line.rstrip(";} \t").endswith(bits) for line in instructions), instructions[0]
    for needed in ("wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "fence.proxy.async.shared::cta",
                   "cp.async.cg.shared.global"):
        assert needed in ptx
    # the K loop leaves one group running (dot_overlap.py), the epilogue waits for all
    assert ptx.count("wgmma.wait_group.sync.aligned 1;") == 1 and ptx.count("wgmma.wait_group.sync.aligned 0;") == 1
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    if ptxas.find_ptxas() is None:
        pytest.skip("no ptxas to assemble the PTX")
    result = ptxas.assemble(ptx, "sm_90a")
    assert result.spill_stores == 0 and result.spill_loads == 0


def test_two_warpgroups_split_the_rows_and_one_instruction_takes_256_columns():
    """128 x 256 on 8 warps: each warpgroup one 64-row block, its 256 columns
    in one instruction (``wgmma.MAX_N``), per 16 of k=64."""
    ptx = _matmul_ptx("sm_90a", block=(128, 256, 64), warps=8)
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n256k16", ptx)) == 4
    assert "m64n64k16" not in ptx


@pytest.mark.parametrize("kernel", ["pointers", "descriptors"])
@pytest.mark.parametrize("block,warps", [((256, 128, 64), 8), ((128, 256, 64), 8), ((128, 128, 64), 4),
                                         ((64, 128, 64), 4)], ids=["256x128w8", "128x256w8", "128x128w4", "64x128w4"])
def test_no_move_on_the_path_that_skips_the_k_loop_serializes_its_wgmma(kernel, block, warps):
    """The K loop's accumulator starts from one inline asm before the loop's
    guard (``wgmma.lower_loop_accumulator``), so the path that skips the loop
    sets no accumulator register before the final ``wgmma.wait_group 0``;
    LLVM's own zero moves there made ``ptxas`` serialize every ``wgmma`` of
    the loop (C7515) for some tile shapes."""
    if kernel == "pointers":
        ptx = _matmul_ptx("sm_90a", block=block, warps=warps)
    else:
        a = np.empty((4096, 4096), np.float16)
        ptx = compile_descriptor_matmul(a, a, a, block, target="sm_90a", num_warps=warps, num_stages=3).asm["ptx"]
    registers = block[0] * block[1] // (32 * warps)  # f32 accumulators a thread
    before_loop = ptx.split("wgmma.fence.sync.aligned")[0]
    assert len(re.findall(r"mov\.b32 %[rf]\d+, 0x00000000;", before_loop)) == registers
    assert "0f00000000" not in ptx.split("wgmma.wait_group.sync.aligned 1;")[-1].split("wgmma.wait_group.sync.aligned 0;")[0]
    if ptxas.find_ptxas() is None:
        pytest.skip("no ptxas to assemble the PTX")
    result = ptxas.assemble(ptx, "sm_90a")
    assert "C7515" not in result.log and "C7514" not in result.log and result.spill_stores == 0, result.log


def test_plain_sm_90_stays_on_mma_sync():
    ptx = _matmul_ptx("sm_90")
    assert "wgmma" not in ptx and "mma.sync.aligned.m16n8k16" in ptx



@tilec.jit
def k_loop(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, RESCALE: tl.constexpr):
    offs_m, offs_n, offs_k = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * BN + offs_n[None, :])
        if RESCALE:
            acc = acc * 0.5
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)


@pytest.mark.parametrize("rescale", [False, True])
def test_a_dot_feeding_the_next_iteration_is_left_running(rescale):
    """``acc = tl.dot(a, b, acc)`` keeps one group in flight; with
    ``acc * 0.5`` before it (attention's rescale) the next iteration waits
    for it just before the rescale reads it."""
    a, b, c = np.empty((128, 1024), np.float16), np.empty((1024, 128), np.float16), np.empty((128, 128), np.float32)
    compiled = k_loop.compile(a, b, c, 1024, BM=128, BN=128, BK=64, RESCALE=rescale, num_warps=4, num_stages=3,
                              target="sm_90a")
    ptx, tir = compiled.asm["ptx"], compiled.asm["tir-gpu"]
    assert "wgmma.mma_async" in ptx
    assert ("wgmma.wait_group.sync.aligned 1;" in ptx) == (not rescale)
    # a dot left running still reads the previous iteration's slot: one slot more than
    # stages, so the copies go two slots back and one barrier per iteration does
    assert tir.count("local_alloc {shape = (4, ") == 2
    loop_body = tir.split("for ", 1)[1].split("\n  }", 1)[0]
    assert loop_body.count("barrier") == 1
    waits = re.findall(r"dot_wait \S+ \{pending = (\d)\}", loop_body)
    assert waits == (["0"] if rescale else ["1"]), loop_body
    # the PTX loop ends with the dot's commit: nothing waits for it on the way round
    ptx_loop = ptx.split("wgmma.commit_group.sync.aligned;")[-1].split("bra")[0]
    assert ("wgmma.wait_group" in ptx_loop) == (not rescale), ptx_loop


@tilec.jit
def k_loop_8bit(a_ptr, b_ptr, c_ptr, K, stride_bk, stride_bn, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr, ACC: tl.constexpr):
    offs_m, offs_n, offs_k = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), ACC)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)


# 8-bit operand -> (how tilec takes it, accumulator, wgmma's and mma.sync's type suffixes)
EIGHT_BIT = {"int8": (np.int8, tl.int32, "s32.s8.s8", "s32.s8.s8.s32"),
             "float8e4nv": (tl.float8e4nv, tl.float32, "f32.e4m3.e4m3", "f32.e4m3.e4m3.f32"),
             "float8e5": (tl.float8e5, tl.float32, "f32.e5m2.e5m2", "f32.e5m2.e5m2.f32")}


def _8bit_ptx(dtype: str, b_along_k: bool, target: str) -> str:
    elem, acc, _, _ = EIGHT_BIT[dtype]
    a, b = (np.empty(shape, np.uint8 if elem is not np.int8 else np.int8) for shape in ((128, 1024), (1024, 128)))
    if elem is not np.int8:
        a, b = tilec.reinterpret(a, elem), tilec.reinterpret(b, elem)
    c = np.empty((128, 128), np.int32 if acc == tl.int32 else np.float32)
    strides = (1, 1024) if b_along_k else (128, 1)
    return k_loop_8bit.compile(a, b, c, 1024, *strides, BM=128, BN=128, BK=64, ACC=acc, num_warps=4, num_stages=3,
                               target=target).asm["ptx"]


@pytest.mark.parametrize("dtype", list(EIGHT_BIT))
@pytest.mark.parametrize("b_along_k", [True, False])
def test_8bit_dots_run_on_wgmma_when_b_is_stored_along_k(dtype, b_along_k):
    """8-bit operands have no transpose bits: ``b`` stored along ``n`` stays on ``mma.sync``."""
    _, _, group_types, warp_types = EIGHT_BIT[dtype]
    ptx = _8bit_ptx(dtype, b_along_k, "sm_90a")
    on_wgmma = f"wgmma.mma_async.sync.aligned.m64n128k32.{group_types} " in ptx
    assert on_wgmma == b_along_k
    assert (f"mma.sync.aligned.m16n8k32.row.col.{warp_types}" in ptx) == (not b_along_k)
    if on_wgmma and ptxas.find_ptxas() is not None:
        assert ptxas.assemble(ptx, "sm_90a").spill_stores == 0


@pytest.mark.parametrize("dtype", ["float8e4nv", "float8e5"])
@pytest.mark.parametrize("target,instruction", [
    ("sm_89", "mma.sync.aligned.m16n8k32.row.col.{}"),  # Ada has fp8 mma.sync
    ("sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),  # Ampere: widened to f16 first
])
def test_fp8_dots_before_hopper(dtype, target, instruction):
    ptx = _8bit_ptx(dtype, False, target)
    assert instruction.format(EIGHT_BIT[dtype][3]) in ptx
    assert "wgmma" not in ptx


@tilec.jit
def invariant_a(q_ptr, k_ptr, c_ptr, N, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    """``q`` loaded once, dotted with every block of ``k`` (attention's first dot)."""
    offs_m, offs_n, offs_d = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, D)
    q = tl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :])
    acc = tl.zeros((BM, BN), tl.float32)
    for start in range(0, N, BN):
        kt = tl.load(k_ptr + offs_d[:, None] + (start + offs_n)[None, :] * D)
        acc += tl.dot(q, kt)
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)


@pytest.mark.parametrize("target", ["sm_90a", "sm_90"])
def test_a_loop_invariant_a_is_read_by_wgmma_from_shared_memory(target):
    """sm_90a stores ``q`` once into a swizzled buffer before the loop and
    each dot reads it through a descriptor (no ``ldmatrix``, no registers
    held across the loop); sm_90's ``mma.sync`` keeps it in registers."""
    q, k = np.empty((128, 128), np.float16), np.empty((1024, 128), np.float16)
    c = np.empty((128, 64), np.float32)
    compiled = invariant_a.compile(q, k, c, 1024, BM=128, BN=64, D=128, num_warps=8, num_stages=3, target=target)
    tir, ptx = compiled.asm["tir-gpu"], compiled.asm["ptx"]
    staged = target == "sm_90a"
    before, loop = tir.split("for ", 1)
    assert (re.search(r"%q\S*_smem = local_alloc \{shape = \(1, 128, 128\)", before) is not None) == staged, tir
    assert ("local_store" in before and "barrier" in before.split("local_store")[-1]) == staged
    assert ("ldmatrix" in ptx) == (not staged)
    if staged:
        assert re.search(r"local_load %q\S*_smem", loop) and "fence.proxy.async.shared::cta" in ptx
        instructions = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16 .*", ptx)
        # a and b both descriptors (two 64-bit registers) after the accumulator's braces
        assert len(instructions) == 8 and all(re.search(r"\}, %rd\d+, %rd\d+, p,", i) for i in instructions)
        if ptxas.find_ptxas() is not None:
            assert ptxas.assemble(ptx, "sm_90a").spill_stores == 0
