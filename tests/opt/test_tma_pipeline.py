"""Pipelined K loops whose operands are host tensor descriptors' blocks, on a
target with the tensor memory accelerator (sm_90): each block becomes a
``tma_copy`` into an mbarrier-guarded slot, waited for by ``tma_wait`` with
the slot's phase (``backends/nvidia/pipeline.py``, ``tma.py``).  As IR text,
and on the interpreter: bit for bit what the loop computes unpipelined."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernels.descriptor_matmul import (compile_descriptor_matmul, descriptor_arguments, matmul_bt_descriptors,
                                       matmul_bt_pointers)
from kernels.matmul import matmul_descriptor_kernel

import tilec
import tilec.language as tl
from tilec.ir.interpret import interpret
from tilec.ir.printer import print_function
from tilec.tools.tensor_descriptor import TensorDescriptor
from tilec.backends.nvidia.layouts import assign_layouts
from tilec.backends.nvidia.pipeline import pipeline_loops
from tilec.backends.nvidia.target import nvptx_target
from tilec.backends.nvidia.tma_stores import store_blocks_in_bulk

SM_90, SM_80 = nvptx_target("sm_90"), nvptx_target("sm_80")


def lowered(m, n, k, block, target=SM_90, num_stages=3):
    """The descriptor matmul's tile IR for these shapes, layouts assigned and
    pipelined for ``target``; and the interpreter's arguments for it."""
    rng = np.random.default_rng(m * 131 + n * 7 + k)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    compiled = compile_descriptor_matmul(a, b, c, block, target="host")
    fn = assign_layouts(compiled.fn, num_warps=4, target=target)
    args = dict(a_desc=a, a_desc_shape0=m, a_desc_shape1=k, a_desc_stride0=k, b_desc=b, b_desc_shape0=k,
                b_desc_shape1=n, b_desc_stride0=n, c_desc=c, c_desc_shape0=m, c_desc_shape1=n, c_desc_stride0=n, M=m, N=n, K=k)
    return fn, pipeline_loops(fn, num_stages, target, num_warps=4), args


def run(fn, grid, args):
    """``fn`` on the interpreter over copies of ``args``; the output ``c`` (``c_ptr`` or ``c_desc``)."""
    fresh = {name: v.copy() if isinstance(v, np.ndarray) else v for name, v in args.items()}
    interpret(fn, grid, [fresh[name] for name in fn.arg_names if name in fresh])
    return fresh.get("c_desc", fresh.get("c_ptr"))


@settings(max_examples=12, deadline=None)
@given(m=st.integers(1, 70), n=st.sampled_from((8, 24, 40, 64)), k=st.sampled_from((8, 16, 40, 72, 120)),
       block=st.sampled_from(((16, 16, 16), (32, 16, 32), (16, 32, 16))), num_stages=st.sampled_from((2, 3, 4)))
def test_tma_pipelined_matmul_computes_the_same_bits(m, n, k, block, num_stages):
    fn, piped, args = lowered(m, n, k, block, num_stages=num_stages)
    text = print_function(piped)
    assert "tma_copy" in text and "async_copy" not in text, text
    grid = (math.ceil(m / block[0]) * math.ceil(n / block[1]),)
    before = run(fn, grid, args)
    a, b = args["a_desc"].astype(np.float32), args["b_desc"].astype(np.float32)
    np.testing.assert_allclose(before, a @ b, rtol=1e-2, atol=1e-2)
    np.testing.assert_array_equal(run(piped, grid, args), before)


def test_the_loop_waits_on_each_slot_with_its_phase_and_no_copy_group():
    _, piped, _ = lowered(64, 64, 128, (32, 32, 32), num_stages=3)
    text = print_function(piped)
    assert len(re.findall(r"local_alloc \{[^}]*mbarriers = true\}", text)) == 2
    assert "async_commit" not in text and "async_wait" not in text
    waits = re.findall(r"tma_wait %(\w+), %read_slot\w*, %read_phase\w*", text)
    assert sorted(waits) == ["a_smem", "b_smem"], text
    copies = re.findall(r'tma_copy %(\w+), %\w+, %\w+, %\w+, %\w+, \[%\w+, %\w+\] \{descriptor = "(\w+)"\}', text)
    assert sorted(set(copies)) == [("a_smem", "a_desc"), ("b_smem", "b_desc")]
    # the phase flips when the read slot wraps back to 0
    assert re.search(r"%\w+ = xor %read_phase\w*, %\w+ : i32", text), text
    # after the loop, between two barriers, the mbarriers are invalidated: their bytes may be reused
    after = text.split("yield [")[-1]
    assert re.search(r"barrier\n\s+tma_release %a_smem\n\s+tma_release %b_smem\n\s+barrier", after), after


def test_a_target_without_the_accelerator_copies_with_cp_async():
    _, piped, _ = lowered(64, 64, 128, (32, 32, 32), target=SM_80)
    text = print_function(piped)
    assert "async_copy" in text and "tma_copy" not in text and "mbarriers" not in text


@tilec.jit
def in_kernel_descriptor_sum(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    tl.store(out_ptr + tl.arange(0, BM), tl.sum(desc.load([0, 0]), axis=1))


def test_only_host_descriptors_with_a_tensor_the_accelerator_can_read_name_their_blocks():
    x = np.zeros((16, 16), np.float32)
    out = np.zeros(16, np.float32)
    text = print_function(in_kernel_descriptor_sum.compile(x, out, 16, 16, BM=16, BN=16, target="host").fn)
    assert "descriptor =" not in text  # an in-kernel descriptor has no tensor map
    args, constexprs = descriptor_arguments(np.zeros((16, 16), np.float16), np.zeros((16, 16), np.float16),
                                            np.zeros((16, 16), np.float32), (16, 16, 16))
    empty = TensorDescriptor(np.zeros((16, 16), np.float16), [0, 16], [16, 1], [16, 16])  # no rows
    fn = matmul_descriptor_kernel.compile(empty, *args[1:], **constexprs, target="host").fn
    named = re.findall(r'descriptor = "(\w+)"', print_function(fn))
    assert named == ["b_desc", "c_desc"]  # no tensor map over a tensor with a dim of 0


@settings(max_examples=10, deadline=None)
@given(m=st.integers(1, 50), n=st.integers(1, 50), k=st.sampled_from((8, 16, 40, 72)),
       block=st.sampled_from(((16, 16, 16), (32, 16, 32), (16, 32, 16))), num_stages=st.sampled_from((2, 3, 4)),
       target=st.sampled_from((SM_80, SM_90)), descriptors=st.booleans())
def test_a_b_used_transposed_is_copied_transposed(m, n, k, block, num_stages, target, descriptors):
    """``tl.dot(a, b.T)``: ``b``'s slot holds its transpose, filled by a transposed
    ``async_copy`` (pointers, or any target before Hopper) or ``tma_copy``."""
    rng = np.random.default_rng(m * 31 + n * 5 + k)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (n, k)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    bm, bn, bk = block
    if descriptors:
        compiled = matmul_bt_descriptors.compile(TensorDescriptor.from_tensor(a, [bm, bk]),
                                                 TensorDescriptor.from_tensor(b, [bn, bk]), c, m, n, k,
                                                 BM=bm, BN=bn, BK=bk, target="host")
        args = dict(a_desc=a, a_desc_shape0=m, a_desc_shape1=k, a_desc_stride0=k, b_desc=b, b_desc_shape0=n,
                    b_desc_shape1=k, b_desc_stride0=k, c_ptr=c, M=m, N=n, K=k)
    else:
        compiled = matmul_bt_pointers.compile(a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, target="host")
        args = dict(a_ptr=a, b_ptr=b, c_ptr=c, M=m, N=n, K=k)
    fn = assign_layouts(compiled.fn, num_warps=4, target=target)
    piped = pipeline_loops(fn, num_stages, target, num_warps=4)
    text = print_function(piped)
    copy = "tma_copy" if descriptors and target is SM_90 else "async_copy"
    assert len(re.findall(copy + r" %\w+, .*transpose = true", text)) == num_stages, text  # prologue and loop
    grid = (math.ceil(m / bm), math.ceil(n / bn))
    before = run(fn, grid, args)
    np.testing.assert_allclose(before, a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-2, atol=1e-2)
    np.testing.assert_array_equal(run(piped, grid, args), before)


@settings(max_examples=8, deadline=None)
@given(m=st.integers(1, 50), n=st.sampled_from((8, 24, 40)), k=st.sampled_from((8, 16, 40)),
       block=st.sampled_from(((16, 16, 16), (32, 16, 32), (16, 32, 16))))
def test_a_descriptor_store_goes_through_shared_memory_to_the_accelerator(m, n, k, block):
    """``c_desc.store``: a one-slot buffer, ``local_store`` between barriers,
    ``tma_store``; on the interpreter the same bits in ``c``, nothing written
    outside the descriptor's tensor."""
    rng = np.random.default_rng(m + n * 3 + k * 7)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    wide = np.full((m + 3, n + 8), 7.0, np.float32)  # c is a view of it: the rest must stay 7
    c = wide[:m, :n]
    bm, bn, bk = block
    compiled = compile_descriptor_matmul(a, b, c, block, target="host")
    fn = assign_layouts(compiled.fn, num_warps=4, target=SM_90)
    stored = store_blocks_in_bulk(fn, SM_90)
    text = print_function(stored)
    assert re.search(r'local_store (%\w+), %\w+, %\w+\n\s+barrier\n\s+tma_store \1, .*\{descriptor = "c_desc"\}', text)
    assert "convert_layout" not in text.split("local_store")[-1]  # stored from the dot's layout
    args = dict(a_desc=a, a_desc_shape0=m, a_desc_shape1=k, a_desc_stride0=k, b_desc=b, b_desc_shape0=k,
                b_desc_shape1=n, b_desc_stride0=n, c_desc=c, c_desc_shape0=m, c_desc_shape1=n,
                c_desc_stride0=n + 8, M=m, N=n, K=k)
    grid = (math.ceil(m / bm) * math.ceil(n / bn),)
    outs = []
    for version in (fn, stored):
        fresh_wide = wide.copy()
        fresh = dict(args, c_desc=fresh_wide[:m, :n])
        interpret(version, grid, [fresh[name] for name in version.arg_names])
        outs.append(fresh_wide)
    np.testing.assert_allclose(outs[0][:m, :n], a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)
    np.testing.assert_array_equal(outs[1], outs[0])
    assert (outs[1][m:] == 7).all() and (outs[1][:, n:] == 7).all()
